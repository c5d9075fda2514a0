// The interop suite's grpc-js client: the checks of interop_test.py, as a
// new user of grpc-js writes them (@grpc/proto-loader over the repo's
// .proto files, no generated code). One JSON line per check on stdout:
// {"check": name, "ok": bool, "detail": text}.
//
//   node client.js --addr=127.0.0.1:3002 --protos=proto --flows=50000
//       [--ca=ca.pem [--cert=client.pem --key=client.key]] [--hold]
//
// --hold opens a heartbeat stream, prints {"holding": true}, and prints how
// the stream ended (the driver stops the server meanwhile).
'use strict';

const fs = require('fs');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const args = Object.fromEntries(process.argv.slice(2).map((a) => {
  const [k, v] = a.replace(/^--/, '').split('=');
  return [k, v === undefined ? true : v];
}));

const definition = loader.loadSync(
    ['greptime/v1/meta/heartbeat.proto', 'greptime/v1/meta/cluster.proto',
     'metasrv/v1/metasrv.proto', 'grpc/health/v1/health.proto'],
    {keepCase: true, longs: String, enums: Number, defaults: true,
     includeDirs: [args.protos, args.health_protos]});
const pkg = grpc.loadPackageDefinition(definition);

function credentials() {
  if (!args.ca) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(
      fs.readFileSync(args.ca),
      args.key ? fs.readFileSync(args.key) : null,
      args.cert ? fs.readFileSync(args.cert) : null);
}

function client(Service, options = {}) {
  return new Service(args.addr, credentials(), {
    'grpc.max_receive_message_length': -1,
    ...(args.ca ? {'grpc.ssl_target_name_override': 'localhost'} : {}),
    ...options,
  });
}

const FLOWNODE = 2;  // greptime.v1.meta.Role

function report(node, flow) {
  return {
    header: {protocol_version: 1, member_id: node, role: FLOWNODE},
    peer: {id: node, addr: `10.0.0.${node % 250}:6800`},
    flow_stat: {flow_stat_size: {[flow]: 7},
                flow_last_exec_time_map: {[flow]: 1733000000000}},
  };
}

function unary(c, method, request, options = {}, metadata = new grpc.Metadata()) {
  return new Promise((resolve, reject) => {
    c[method](request, metadata, options, (error, answer) =>
        error ? reject(error) : resolve(answer));
  });
}

function ended(call) {
  return new Promise((resolve) => call.on('status', resolve));
}

function deadline(ms) {
  return {deadline: new Date(Date.now() + ms)};
}

const checks = {
  async get_flow_state() {
    const a = await unary(client(pkg.metasrv.v1.FlowState), 'GetFlowState', {});
    return [a.flow_ids.length === Number(args.flows), `${a.flow_ids.length} flows`];
  },
  async range() {
    const a = await unary(client(pkg.greptime.v1.meta.Cluster), 'Range',
                          {key: Buffer.from('__flow/state')});
    return [a.kvs.length === 1 && a.kvs[0].value.length > 0,
            `${a.kvs.length} kvs, ${a.kvs[0] && a.kvs[0].value.length} bytes`];
  },
  async bidi_heartbeat() {
    const call = client(pkg.greptime.v1.meta.Heartbeat).Heartbeat();
    const status = ended(call);
    const answer = new Promise((resolve) => call.once('data', resolve));
    call.write(report(9100, 9100));
    const a = await answer;
    call.end();
    const s = await status;
    return [!a.header.error && s.code === grpc.status.OK,
            `error ${JSON.stringify(a.header.error)}, status ${s.code}`];
  },
  async health_watch() {
    const call = client(pkg.grpc.health.v1.Health).Watch({service: ''});
    call.on('error', () => {});
    const first = await new Promise((resolve) => call.once('data', resolve));
    const status = ended(call);
    call.cancel();
    const s = await status;
    return [first.status === 1 && s.code === grpc.status.CANCELLED,
            `status ${first.status}, then ${s.code}`];
  },
  async status_and_trailers() {
    const call = client(pkg.greptime.v1.meta.Heartbeat).Heartbeat();
    call.on('data', () => {});
    call.on('error', () => {});
    const status = ended(call);
    call.write({});  // No header.
    const s = await status;
    const code = s.metadata.get('x-greptime-err-code');
    return [s.code === grpc.status.INVALID_ARGUMENT && code.length === 1,
            `${s.code} "${s.details}" x-greptime-err-code=${code}`];
  },
  async bin_metadata() {
    const metadata = new grpc.Metadata();
    metadata.set('x-trace-bin', Buffer.from([0, 1, 2, 255]));
    metadata.set('x-tenant', 'interop');
    const a = await unary(client(pkg.metasrv.v1.FlowState), 'GetFlowState',
                          {flow_ids: [0]}, {}, metadata);
    return [a.flow_ids.length === 1, `${a.flow_ids.length} flows`];
  },
  async deadline() {
    const call = client(pkg.metasrv.v1.FlowState)
        .WatchFlowState({}, deadline(300));
    call.on('data', () => {});
    call.on('error', () => {});
    const s = await ended(call);
    return [s.code === grpc.status.DEADLINE_EXCEEDED, `${s.code} "${s.details}"`];
  },
  async cancel() {
    const call = client(pkg.metasrv.v1.FlowState).WatchFlowState({});
    call.on('error', () => {});
    await new Promise((resolve) => call.once('data', resolve));
    const status = ended(call);
    call.cancel();
    const s = await status;
    return [s.code === grpc.status.CANCELLED, `${s.code}`];
  },
  async receive_limit() {
    try {
      await unary(client(pkg.metasrv.v1.FlowState,
                         {'grpc.max_receive_message_length': 1000}),
                  'GetFlowState', {});
      return [false, 'answered'];
    } catch (e) {
      return [e.code === grpc.status.RESOURCE_EXHAUSTED, `${e.code} ${e.details}`];
    }
  },
  async gzip() {
    const c = client(pkg.metasrv.v1.FlowState,
                     {'grpc.default_compression_algorithm': 2});  // gzip
    const ids = Array.from({length: 500}, (_, i) => i);
    const a = await unary(c, 'GetFlowState', {flow_ids: ids});
    const b = await unary(c, 'GetFlowState', {flow_ids: ids});
    return [a.flow_ids.length === 500 && b.flow_ids.length === 500,
            `${a.flow_ids.length}, ${b.flow_ids.length} flows`];
  },
  async client_keepalive() {
    const c = client(pkg.metasrv.v1.FlowState,
                     {'grpc.keepalive_time_ms': 1000,
                      'grpc.keepalive_timeout_ms': 1000,
                      'grpc.keepalive_permit_without_calls': 1});
    await unary(c, 'GetFlowState', {flow_ids: [0]});
    await new Promise((resolve) => setTimeout(resolve, 3500));
    const a = await unary(c, 'GetFlowState', {flow_ids: [0]});
    return [a.flow_ids.length === 1, 'answered after 3 pings'];
  },
};

async function hold() {
  const call = client(pkg.greptime.v1.meta.Heartbeat).Heartbeat();
  call.on('error', () => {});
  const status = ended(call);
  const first = new Promise((resolve) => call.once('data', resolve));
  call.write(report(9200, 9200));
  await first;
  call.on('data', () => {});
  console.log(JSON.stringify({holding: true}));
  const s = await status;
  console.log(JSON.stringify({ended: s.code, detail: s.details}));
}

async function main() {
  if (args.hold) return hold();
  for (const [name, check] of Object.entries(checks)) {
    if (args.only && args.only !== name) continue;
    let result;
    try {
      result = await check();
    } catch (e) {
      result = [false, `threw ${e.code} ${e.details || e.message}`];
    }
    console.log(JSON.stringify({check: name, ok: result[0], detail: result[1]}));
  }
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
