"""GreptimeDB's meta client, byte for byte, against the metasrv binary.

Every request here is what tonic sends for GreptimeDB's meta client
(tonic_client.py): zstd-compressed, and for Cluster reads without a header
(src/common/meta/src/rpc/store.rs). Run by ctest:

  python3 tonic_client_test.py --binary=build/server/metasrv --pydir=build/gen_py
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from harness import (FLOWNODE, FRONTEND, Server, accepts, free_port, header, meta,
                     parse, report, rss_kib, wait_for)
import harness
import tonic_client

HEARTBEAT = "/greptime.v1.meta.Heartbeat/Heartbeat"
ASK_LEADER = "/greptime.v1.meta.Heartbeat/AskLeader"
RANGE = "/greptime.v1.meta.Cluster/Range"
BATCH_GET = "/greptime.v1.meta.Cluster/BatchGet"
PEERS = "/greptime.v1.meta.Cluster/MetasrvPeers"
GET_FLOW_STATE = "/metasrv.v1.FlowState/GetFlowState"
LEADER_CHANGE = "/metasrv.v1.Admin/LeaderChange"
NOT_LEADER = 2


class StandaloneTest(unittest.TestCase):
    """A standalone metasrv: the leader."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def connect(self, encoding="zstd"):
        conn = tonic_client.Connection(self.server.addr, encoding)
        self.addCleanup(conn.close)
        return conn

    def test_ask_leader(self):
        conn = self.connect()
        answer = parse(meta.heartbeat_pb2.AskLeaderResponse,
                       conn.unary(ASK_LEADER, meta.heartbeat_pb2.AskLeaderRequest(
                           header=header(FLOWNODE, 1))))
        self.assertEqual(answer.header.protocol_version, 1)
        self.assertEqual(answer.leader.addr, self.server.addr)
        self.assertEqual(answer.leader.id, 0)

    def test_handshake_reports_and_reads(self):
        conn = self.connect()
        # Start from an empty state: a leader change (admin, from loopback).
        conn.unary(LEADER_CHANGE, meta.metasrv_pb2.LeaderChangeRequest())
        call = conn.open(HEARTBEAT)
        # The handshake: a header only. Its answer carries the config.
        hello = meta.heartbeat_pb2.HeartbeatRequest(header=header(FLOWNODE, 41))
        call.send(hello.SerializeToString())
        answer = parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv())
        self.assertFalse(answer.header.HasField("error"))
        self.assertEqual(answer.heartbeat_config.heartbeat_interval_ms, 3000)
        self.assertEqual(answer.heartbeat_config.retry_interval_ms, 3000)
        # Reports, one answer each, in order; the second replaces the first.
        for flows in ([(1024, 4096, 1733000000000)],
                      [(1024, 8192, 1733000003000), (1025, 10, 1733000003001)]):
            call.send(report(41, flows).SerializeToString())
            answer = parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv())
            self.assertFalse(answer.header.HasField("error"))
            self.assertFalse(answer.HasField("heartbeat_config"))
        # A frontend reads the aggregate as GreptimeDB does: no header.
        reads = self.connect()
        want = (b'{"state_size":{"1024":8192,"1025":10},'
                b'"last_exec_time_map":{"1024":1733000003000,"1025":1733000003001},'
                b'"start_time_map":{}}')
        rng = parse(meta.cluster_pb2.RangeResponse,
                    reads.unary(RANGE, meta.cluster_pb2.RangeRequest(key=b"__flow/state")))
        self.assertEqual(rng.header.protocol_version, 1)
        self.assertFalse(rng.header.HasField("error"))
        self.assertEqual([(kv.key, kv.value) for kv in rng.kvs],
                         [(b"__flow/state", want)])
        got = parse(meta.cluster_pb2.BatchGetResponse,
                    reads.unary(BATCH_GET, meta.cluster_pb2.BatchGetRequest(
                        keys=[b"__flow/state/node/41", b"__flow/state/node/9"])))
        self.assertEqual([kv.key for kv in got.kvs], [b"__flow/state/node/41"])
        self.assertEqual(got.kvs[0].value, want)
        peers = parse(meta.cluster_pb2.MetasrvPeersResponse,
                      reads.unary(PEERS, meta.cluster_pb2.MetasrvPeersRequest()))
        self.assertEqual(peers.leader.peer.addr, self.server.addr)
        self.assertEqual(len(peers.followers), 0)
        # Every field upstream fills, the deprecated ones for older clients.
        leader = peers.leader
        self.assertGreater(leader.info.total_cpu_millicores, 0)
        self.assertEqual(leader.info.cpus, leader.info.total_cpu_millicores)
        self.assertEqual(leader.info.memory_bytes, leader.info.total_memory_bytes)
        self.assertEqual((leader.version, leader.git_commit, leader.start_time_ms,
                          leader.cpus, leader.memory_bytes),
                         (leader.info.version, leader.info.git_commit,
                          leader.info.start_time_ms, leader.info.cpus,
                          leader.info.memory_bytes))
        # The typed read takes zstd too.
        state = parse(meta.metasrv_pb2.GetFlowStateResponse,
                      reads.unary(GET_FLOW_STATE,
                                  meta.metasrv_pb2.GetFlowStateRequest(flow_ids=[1025])))
        self.assertTrue(state.found)
        self.assertEqual(list(state.flow_ids), [1025])
        self.assertEqual(list(state.state_sizes), [10])
        call.close_send()
        self.assertEqual(call.finish(), [])

    def test_cluster_info_lists_flownodes_and_frontends(self):
        """information_schema.cluster_info: a frontend's ClusterInfo::list_nodes
        is a Range over __meta_cluster_node_info-0- without a header
        (src/common/meta/src/cluster.rs); each heartbeat with a peer and a
        NodeInfo wrote its node's value as serde writes NodeInfo, with the
        workloads of its own role (src/common/meta/src/heartbeat/utils.rs)
        and the variables of its "__env_vars" extension, serde_json of
        EnvVars (src/common/meta/src/datanode.rs), as
        collect_cluster_info_handler.rs writes them."""
        conn = self.connect()
        conn.unary(LEADER_CHANGE, meta.metasrv_pb2.LeaderChangeRequest())
        for role, member, addr in ((FLOWNODE, 7, "10.0.0.7:6800"),
                                   (FRONTEND, 0, "127.0.0.1:4001")):
            req = meta.heartbeat_pb2.HeartbeatRequest(header=header(role, member))
            req.peer.id = member
            req.peer.addr = addr
            if role == FLOWNODE:
                # A flownode's node_workloads (field 12), in this order.
                req.flownode.types.extend([3, 1])
            else:
                # The bytes a frontend's EnvVars::into_extensions sends.
                req.extensions["__env_vars"] = b'{"vars":{"POD_NAME":"fe-0"}}'
            req.info.version = "v0.15.0"
            req.info.git_commit = "0123abc"
            req.info.start_time_ms = 1733000000000
            req.info.hostname = "node-\"a\"\n"
            req.info.total_cpu_millicores = 4000
            req.info.total_memory_bytes = 8 << 30
            req.info.cpu_usage_millicores = 250
            req.info.memory_usage_bytes = 1 << 30
            call = conn.open(HEARTBEAT)
            call.send(req.SerializeToString())
            answer = parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv())
            self.assertFalse(answer.header.HasField("error"))
            call.close_send()
            call.finish()
        prefix = b"__meta_cluster_node_info-0-"
        rng = parse(meta.cluster_pb2.RangeResponse,
                    self.connect().unary(RANGE, meta.cluster_pb2.RangeRequest(
                        key=prefix, range_end=prefix[:-1] + b".")))
        self.assertFalse(rng.header.HasField("error"))
        keys = [kv.key for kv in rng.kvs]
        # A frontend's id is the hash of its address (calculate_node_id:
        # Rust's DefaultHasher; this value printed by rustc).
        self.assertEqual(keys, [b"__meta_cluster_node_info-0-1-6217528761578684316",
                                b"__meta_cluster_node_info-0-2-7"])
        batch = parse(meta.cluster_pb2.BatchGetResponse,
                      self.connect().unary(BATCH_GET, meta.cluster_pb2.BatchGetRequest(
                          keys=keys)))
        self.assertFalse(batch.header.HasField("error"))
        # One read of each: the values are the same bytes either way.
        self.assertEqual([(kv.key, kv.value) for kv in batch.kvs],
                         [(kv.key, kv.value) for kv in rng.kvs])
        for kv in rng.kvs:
            info = json.loads(kv.value)
            role, addr, node_id = (("Frontend", "127.0.0.1:4001", 0)
                                   if b"-0-1-" in kv.key else
                                   ("Flownode", "10.0.0.7:6800", 7))
            status, env_vars = (
                ('{"Frontend":{"workloads":{"types":[]}}}', '{"POD_NAME":"fe-0"}')
                if role == "Frontend" else
                ('{"Flownode":{"workloads":{"types":[3,1]}}}', '{}'))
            want = ('{"peer":{"id":%d,"addr":"%s"},"last_activity_ts":%d,'
                    '"status":%s,"version":"v0.15.0","git_commit":"0123abc",'
                    '"start_time_ms":1733000000000,"total_cpu_millicores":4000,'
                    '"total_memory_bytes":8589934592,"cpu_usage_millicores":250,'
                    '"memory_usage_bytes":1073741824,"hostname":"node-\\"a\\"\\n",'
                    '"env_vars":%s}' % (node_id, addr, info["last_activity_ts"],
                                        status, env_vars))
            self.assertEqual(kv.value.decode(), want)
            self.assertLess(abs(info["last_activity_ts"] - time.time() * 1000), 60000)

    def test_errors_carry_greptimedbs_metadata(self):
        """define_into_tonic_status (src/common/error/src/status_code.rs): the
        meta client reads the code and the retry hint from the trailers."""
        conn = self.connect()
        call = conn.open(HEARTBEAT)
        bad = meta.heartbeat_pb2.HeartbeatRequest(header=header(FLOWNODE, 1))
        bad.header.role = 7
        call.send(bad.SerializeToString())
        with self.assertRaises(tonic_client.CallError) as ended:
            call.finish()
        self.assertEqual(ended.exception.code, 3)  # INVALID_ARGUMENT
        md = ended.exception.metadata
        self.assertEqual(md.get("x-greptime-err-code"), "1004")  # InvalidArguments
        self.assertEqual(md.get("x-greptime-err-retry-hint"), "non_retryable")
        # Two entries, as define_into_tonic_status sends; the text is in
        # grpc-message alone.
        self.assertNotIn("x-greptime-err-msg", md)
        self.assertIn("unknown role 7", ended.exception.message)

    def test_every_encoding_gives_the_same_answer(self):
        answers = set()
        for encoding, content_size in (("zstd", False), ("zstd", True),
                                       ("identity", False)):
            conn = self.connect(encoding)
            call = conn.open(HEARTBEAT)
            req = report(50, [(7, 70, 700)])
            call.send(req.SerializeToString(), content_size=content_size)
            answers.add(call.recv())
            call.close_send()
            call.finish()
            rng = conn.unary(RANGE, meta.cluster_pb2.RangeRequest(
                key=b"__flow/state/node/50"), content_size=content_size)
            answers.add(rng)
        # One heartbeat answer and one Range answer, whatever the encoding.
        self.assertEqual(len(answers), 2)

    def test_frontend_gets_the_frontend_interval(self):
        conn = self.connect()
        call = conn.open(HEARTBEAT)
        call.send(meta.heartbeat_pb2.HeartbeatRequest(
            header=header(FRONTEND, 3)).SerializeToString())
        answer = parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv())
        self.assertEqual(answer.heartbeat_config.heartbeat_interval_ms, 18000)
        self.assertEqual(answer.heartbeat_config.retry_interval_ms, 3000)
        call.close_send()
        call.finish()

    def test_zstd_bomb_is_refused_and_harms_nobody(self):
        conn = self.connect()
        # 64 MiB of zeros compress to a few KiB: 16 times the 4 MiB limit.
        bomb = meta.cluster_pb2.RangeRequest(
            key=b"k" + b"\0" * (64 << 20)).SerializeToString()
        frames = [tonic_client.zstd_frame(bomb, content_size=True),
                  tonic_client.zstd_frame(bomb, content_size=False)]
        rss_before = rss_kib(self.server.proc.pid)
        for i in range(20):
            call = conn.open(RANGE)
            frame = frames[i % 2]
            call.send_raw(b"\x01" + len(frame).to_bytes(4, "big") + frame, end=True)
            with self.assertRaises(tonic_client.CallError) as refused:
                call.finish()
            self.assertEqual(refused.exception.code, 8)  # RESOURCE_EXHAUSTED
            self.assertIn("limit", refused.exception.message)
        # Each refusal held at most the limit (4 MiB), and gave it back.
        if not harness.SANITIZED:
            self.assertLess(rss_kib(self.server.proc.pid) - rss_before, 32 << 10)
        # Same in the heartbeat stream; a later call on the connection works.
        hb = conn.open(HEARTBEAT)
        big = report(60, [])
        big.peer.addr = "x" * (64 << 20)
        hb.send(big.SerializeToString())
        with self.assertRaises(tonic_client.CallError) as ended:
            hb.finish()
        self.assertEqual(ended.exception.code, 8)
        answer = parse(meta.heartbeat_pb2.AskLeaderResponse,
                       conn.unary(ASK_LEADER, meta.heartbeat_pb2.AskLeaderRequest()))
        self.assertEqual(answer.leader.addr, self.server.addr)

    def test_corrupt_frame_is_a_clear_error(self):
        conn = self.connect()
        frame = tonic_client.zstd_frame(b"\x0a\x00" * 100)
        call = conn.open(ASK_LEADER)
        call.send_raw(b"\x01" + len(frame[:-3]).to_bytes(4, "big") + frame[:-3],
                      end=True)
        with self.assertRaises(tonic_client.CallError) as failed:
            call.finish()
        self.assertEqual(failed.exception.code, 3)  # INVALID_ARGUMENT
        # h2 accepted the grpc-message header: no surrounding whitespace.
        self.assertEqual(failed.exception.message, failed.exception.message.strip())

    def test_malformed_heartbeat_error_is_accepted_by_strict_http2(self):
        conn = self.connect()
        call = conn.open(HEARTBEAT)
        call.send(b"\xff\xff\xff")  # Not a protobuf message.
        with self.assertRaises(tonic_client.CallError) as failed:
            call.finish()
        self.assertEqual(failed.exception.code, 3)
        self.assertIn("malformed HeartbeatRequest", failed.exception.message)

    def test_zz_no_log_line_per_call(self):
        # Runs last (unittest sorts by name): every call above was zstd.
        conn = self.connect()
        conn.unary(ASK_LEADER, meta.heartbeat_pb2.AskLeaderRequest())
        before = [l for l in self.server.log_text().splitlines() if l.strip()]
        for _ in range(50):
            conn.unary(ASK_LEADER, meta.heartbeat_pb2.AskLeaderRequest())
        lines = [l for l in self.server.log_text().splitlines() if l.strip()]
        self.assertFalse([l for l in lines if "grpc-encoding" in l], lines)
        # 50 calls, no line of their own (each flownode of the tests above
        # has its connected and disconnected lines).
        self.assertEqual(lines[len(before):], [], lines)


class NoLeaderTest(unittest.TestCase):
    """A replica whose election has no leader (its etcd is not up)."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(f"--store_addrs=127.0.0.1:{free_port()}")

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_ask_leader_fails_instead_of_naming_nobody(self):
        """handle_ask_leader (src/meta-srv/src/service/heartbeat.rs) answers an
        error when the election has no leader: a tonic client would take an
        empty address for the leader's."""
        conn = tonic_client.Connection(self.server.addr)
        self.addCleanup(conn.close)
        with self.assertRaises(tonic_client.CallError) as failed:
            conn.unary(ASK_LEADER, meta.heartbeat_pb2.AskLeaderRequest(
                header=header(FLOWNODE, 1)))
        self.assertEqual(failed.exception.code, 13)  # INTERNAL, as upstream's
        md = failed.exception.metadata
        self.assertEqual(md.get("x-greptime-err-code"), "1003")  # Internal
        self.assertEqual(md.get("x-greptime-err-retry-hint"), "retryable")
        # Masked as upstream's output_msg() masks an internal error.
        self.assertEqual(failed.exception.message, "Internal error: 1003")
        # Cluster reads still answer, as a follower: not leader, no data.
        rng = parse(meta.cluster_pb2.RangeResponse,
                    conn.unary(RANGE, meta.cluster_pb2.RangeRequest(key=b"__flow/state")))
        self.assertEqual(rng.header.error.code, NOT_LEADER)
        self.assertEqual(len(rng.kvs), 0)


class FollowerTest(unittest.TestCase):
    """Two replicas on a real etcd: the follower's answers."""

    @classmethod
    def setUpClass(cls):
        etcd = shutil.which("etcd")
        if etcd is None:
            raise unittest.SkipTest("etcd not installed (apt-get install etcd-server)")
        cls.dir = tempfile.mkdtemp(prefix="tonic-etcd-")
        client, peer = free_port(), free_port()
        cls.etcd = subprocess.Popen(
            [etcd, "--name=t", f"--data-dir={cls.dir}/etcd",
             f"--listen-client-urls=http://127.0.0.1:{client}",
             f"--advertise-client-urls=http://127.0.0.1:{client}",
             f"--listen-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-cluster=t=http://127.0.0.1:{peer}", "--log-level=error",
             "--logger=zap"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: accepts(client), what="etcd")
            cls.replicas = [Server(f"--store_addrs=127.0.0.1:{client}",
                                   "--lease_ttl=2s") for _ in range(2)]
            leader = []

            def asked(addr):
                """The leader `addr` names; "" while it knows none yet (as
                upstream: INTERNAL with GreptimeDB's code 1003, retryable)."""
                conn = tonic_client.Connection(addr)
                try:
                    return parse(meta.heartbeat_pb2.AskLeaderResponse,
                                 conn.unary(ASK_LEADER,
                                            meta.heartbeat_pb2.AskLeaderRequest())
                                 ).leader.addr
                except tonic_client.CallError as e:
                    if e.code != 13 or e.metadata.get("x-greptime-err-code") != "1003":
                        raise
                    return ""
                finally:
                    conn.close()

            def elected():
                leader[:] = [asked(cls.replicas[0].addr)]
                return leader[0] in (r.addr for r in cls.replicas)
            wait_for(elected, timeout=20, what="a leader")
            cls.leader = leader[0]
            cls.follower = next(r.addr for r in cls.replicas if r.addr != cls.leader)

            def follower_knows():
                return asked(cls.follower) == cls.leader
            wait_for(follower_knows, timeout=20, what="the follower to see the leader")
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for r in getattr(cls, "replicas", []):
            r.stop()
        cls.etcd.terminate()
        cls.etcd.wait(timeout=10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_follower_names_the_leader_and_refuses_reports(self):
        conn = tonic_client.Connection(self.follower)
        self.addCleanup(conn.close)
        asked = parse(meta.heartbeat_pb2.AskLeaderResponse,
                      conn.unary(ASK_LEADER, meta.heartbeat_pb2.AskLeaderRequest(
                          header=header(FLOWNODE, 1))))
        self.assertEqual(asked.leader.addr, self.leader)
        call = conn.open(HEARTBEAT)
        call.send(meta.heartbeat_pb2.HeartbeatRequest(
            header=header(FLOWNODE, 1)).SerializeToString())
        answer = parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv())
        self.assertEqual(answer.header.error.code, NOT_LEADER)
        # Upstream's text (greptime-proto's src/v1/meta.rs): no address.
        self.assertEqual(answer.header.error.err_msg, "Current server is not leader")
        # The handshake config comes with the refusal, as the reference's does.
        self.assertEqual(answer.heartbeat_config.heartbeat_interval_ms, 3000)
        with self.assertRaises(tonic_client.CallError) as ended:
            call.finish()
        self.assertEqual(ended.exception.code, 10)  # ABORTED
        # With no GreptimeDB metadata, as upstream ends it: the meta client
        # reads it as not retryable here and asks for the leader.
        self.assertNotIn("x-greptime-err-code", ended.exception.metadata)
        self.assertNotIn("x-greptime-err-retry-hint", ended.exception.metadata)

    def test_follower_answers_cluster_reads_not_leader(self):
        conn = tonic_client.Connection(self.follower)
        self.addCleanup(conn.close)
        for path, req, cls in (
                (RANGE, meta.cluster_pb2.RangeRequest(key=b"__flow/state"),
                 meta.cluster_pb2.RangeResponse),
                (BATCH_GET, meta.cluster_pb2.BatchGetRequest(keys=[b"__flow/state"]),
                 meta.cluster_pb2.BatchGetResponse),
                (PEERS, meta.cluster_pb2.MetasrvPeersRequest(),
                 meta.cluster_pb2.MetasrvPeersResponse)):
            answer = parse(cls, conn.unary(path, req))
            self.assertEqual(answer.header.error.code, NOT_LEADER, path)
            self.assertEqual(answer.header.error.err_msg,
                             "Current server is not leader", path)
            self.assertEqual(len(answer.ListFields()), 1, path)  # Header only.

    def test_leader_serves_reports_and_reads(self):
        conn = tonic_client.Connection(self.leader)
        self.addCleanup(conn.close)
        call = conn.open(HEARTBEAT)
        call.send(meta.heartbeat_pb2.HeartbeatRequest(
            header=header(FLOWNODE, 5)).SerializeToString())
        self.assertFalse(parse(meta.heartbeat_pb2.HeartbeatResponse,
                               call.recv()).header.HasField("error"))
        call.send(report(5, [(9, 90, 900)]).SerializeToString())
        self.assertFalse(parse(meta.heartbeat_pb2.HeartbeatResponse,
                               call.recv()).header.HasField("error"))
        rng = parse(meta.cluster_pb2.RangeResponse,
                    conn.unary(RANGE, meta.cluster_pb2.RangeRequest(
                        key=b"__flow/state/node/5")))
        self.assertEqual(rng.kvs[0].value,
                         b'{"state_size":{"9":90},"last_exec_time_map":{"9":900},'
                         b'"start_time_map":{}}')
        # The peers as the leader last read them from etcd (every keep-alive
        # interval, in the background): the follower within one.
        got = []

        def listed():
            got[:] = [parse(meta.cluster_pb2.MetasrvPeersResponse,
                            conn.unary(PEERS, meta.cluster_pb2.MetasrvPeersRequest()))]
            return [f.peer.addr for f in got[0].followers] == [self.follower]
        wait_for(listed, timeout=5, what="the follower among the peers")
        peers = got[0]
        self.assertEqual(peers.leader.peer.addr, self.leader)
        # Each peer's info as upstream fills it: build and resources (the
        # follower's as it registered it in etcd).
        for node in [peers.leader] + list(peers.followers):
            self.assertTrue(node.info.version and node.info.git_commit, node)
            self.assertGreater(node.info.total_cpu_millicores, 0, node)
            self.assertGreater(node.info.total_memory_bytes, 0, node)
            self.assertGreater(node.info.memory_usage_bytes, 0, node)
        call.close_send()
        call.finish()


if __name__ == "__main__":
    harness.run_tests()
