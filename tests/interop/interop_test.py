"""The interop suite: the gRPC port driven by stacks no one here wrote
(issue 69; docs/REFERENCE.md has the matrix).

  python3 interop_test.py --binary=build/server/metasrv --pydir=build/gen_py \
      --workdir=build/tests/interop

- grpc-go (Debian's golang-google-grpc-dev, its own HTTP/2; code generated
  by protoc with Debian's protoc-gen-go, built offline in GOPATH mode) and
  grpc-js (npm, pinned by js/package-lock.json, over Node's HTTP/2) run the
  same checks (go/client.go, js/client.js): every call kind, a status with
  GreptimeDB's trailers, -bin metadata, deadlines, cancellation, a
  50,000-flow answer, the receive limit, gzip requests, the client's
  keepalive pings; over plaintext, TLS and mTLS; and a stream held while
  the server is stopped with SIGTERM.
- nghttp (nghttp2-client) sends hand-made requests: gRPC framing, and a
  request that is not gRPC's (HTTP 415).
GreptimeDB's own client (tonic, as tests/wire/tonic_client.py speaks it),
the C++ client and Python's h2 are the other suites' clients.
"""

import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "wire"))

import harness  # noqa: E402
from harness import Server, wait_for  # noqa: E402

PROTOS = os.path.join(HERE, "..", "..", "proto")
HEALTH_PROTOS = "/usr/share/grpc-proto"
FLOWS = 50_000
WORK = None  # --workdir: where the clients are built.


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          **kw)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}: {done.stdout}{done.stderr}")
    return done.stdout


def build_go():
    """protoc-gen-go (APIv1, which Debian's grpc-go 1.33 reads) built from
    Debian's sources, the generated packages, then the client; offline."""
    gopath = os.path.join(WORK, "go")
    env = dict(os.environ, GO111MODULE="off",
               GOPATH=f"{gopath}:/usr/share/gocode",
               GOCACHE=os.path.join(WORK, "gocache"))
    binary = os.path.join(gopath, "bin", "interop-go")
    plugin = os.path.join(gopath, "bin", "protoc-gen-go")
    run(["go", "build", "-o", plugin, "github.com/golang/protobuf/protoc-gen-go"],
        env=env)
    shutil.rmtree(os.path.join(gopath, "src"), ignore_errors=True)
    out = os.path.join(gopath, "gen")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    paths = {"greptime/v1/meta": "interop/gen/meta",
             "metasrv/v1": "interop/gen/metasrvpb"}
    files = {"greptime/v1/meta": ["common", "heartbeat", "cluster"],
             "metasrv/v1": ["metasrv"]}
    mapping = ",".join(f"M{d}/{f}.proto={paths[d]}"
                       for d in files for f in files[d])
    for d, names in files.items():
        run(["protoc", f"-I{PROTOS}", f"--plugin=protoc-gen-go={plugin}",
             f"--go_out=plugins=grpc,{mapping}:{out}",
             *[f"{d}/{n}.proto" for n in names]])
        target = os.path.join(gopath, "src", paths[d])
        os.makedirs(target)
        for name in os.listdir(os.path.join(out, d)):
            shutil.move(os.path.join(out, d, name), target)
    client = os.path.join(gopath, "src", "interop", "client")
    os.makedirs(client)
    shutil.copy(os.path.join(HERE, "go", "client.go"), client)
    run(["go", "build", "-o", binary, "."], env=env, cwd=client)
    return [binary]


def build_js():
    """grpc-js and proto-loader as package-lock.json pins them."""
    work = os.path.join(WORK, "js")
    os.makedirs(work, exist_ok=True)
    for name in ("package.json", "package-lock.json", "client.js"):
        shutil.copy(os.path.join(HERE, "js", name), work)
    if not os.path.isdir(os.path.join(work, "node_modules", "@grpc")):
        run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=work)
    return ["node", os.path.join(work, "client.js"), f"--protos={PROTOS}",
            f"--health_protos={HEALTH_PROTOS}"]


def versions():
    go = run(["go", "version"]).split()[2]
    grpc_go = run(["dpkg-query", "-W", "-f=${Version}",
                   "golang-google-grpc-dev"])
    node = run(["node", "--version"]).strip()
    with open(os.path.join(WORK, "js", "node_modules", "@grpc", "grpc-js",
                           "package.json")) as f:
        grpc_js = json.load(f)["version"]
    nghttp = run(["nghttp", "--version"]).split()[-1]
    return (f"grpc-go {grpc_go} ({go}), grpc-js {grpc_js} (Node {node}), "
            f"nghttp {nghttp}")


CLIENTS = {}  # name: the command that runs its checks.


def checks(client, addr, *extra, only=None, flows=FLOWS):
    """The client's check results: {name: (ok, detail)}; `flows`: how many
    the server holds."""
    cmd = [*CLIENTS[client], f"--addr={addr}", f"--flows={flows}", *extra]
    if only:
        cmd.append(f"--only={only}")
    out = run(cmd, timeout=180)
    results = {}
    for line in out.splitlines():
        r = json.loads(line)
        results[r["check"]] = (r["ok"], r["detail"])
    return results


class Certs:
    """A CA, a server certificate for 127.0.0.1 and localhost, a client
    certificate: NAME.pem and NAME.key in a temporary folder."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="metasrv-interop-certs-")
        self.sh("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=ca "
                "-keyout ca.key -out ca.pem")
        self.issue("server", "subjectAltName=IP:127.0.0.1,DNS:localhost")
        self.issue("client", "extendedKeyUsage=clientAuth")

    def sh(self, cmd):
        run(["sh", "-c", cmd], cwd=self.dir)

    def issue(self, name, ext):
        self.sh(f"openssl req -newkey rsa:2048 -nodes -subj /CN={name} "
                f"-keyout {name}.key -out {name}.csr && printf '{ext}\\n' > "
                f"{name}.ext && openssl x509 -req -in {name}.csr -CA ca.pem "
                f"-CAkey ca.key -CAcreateserial -days 2 -extfile {name}.ext "
                f"-out {name}.pem")

    def path(self, name):
        return os.path.join(self.dir, name)


def load(server):
    from attack_test import load_flows
    load_flows(server.addr, 1, FLOWS)


class PlaintextTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server(metrics=True)
        load(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_every_check_of_every_stack(self):
        calls = self.server.metric("metasrv_grpc_calls_open")
        for client in CLIENTS:
            results = checks(client, self.server.addr)
            for name, (ok, detail) in results.items():
                print(f"  {client} {name}: {detail}", file=sys.stderr)
                with self.subTest(client=client, check=name):
                    self.assertTrue(ok, detail)
            self.assertEqual(len(results), 11, client)
            # Cancelled, timed-out and ended calls gave everything back.
            wait_for(lambda: self.server.metric("metasrv_grpc_calls_open")
                     <= calls, timeout=5, what=f"{client}'s calls given back")


class TlsTest(unittest.TestCase):
    """TLS, then mTLS: a client with the CA's certificate is served, one
    without is not."""

    def test_tls_and_mtls(self):
        certs = Certs()
        self.addCleanup(shutil.rmtree, certs.dir)
        ca = f"--ca={certs.path('ca.pem')}"
        mine = [f"--cert={certs.path('client.pem')}",
                f"--key={certs.path('client.key')}"]
        tls = [f"--tls_cert={certs.path('server.pem')}",
               f"--tls_key={certs.path('server.key')}"]
        for mutual in (False, True):
            extra = [f"--tls_client_ca={certs.path('ca.pem')}"] if mutual else []
            server = Server(*tls, *extra)
            try:
                for client in CLIENTS:
                    for name in ("get_flow_state", "bidi_heartbeat",
                                 "health_watch"):
                        # No flows loaded (the loader speaks plaintext);
                        # each stack's heartbeat adds its own.
                        ok, detail = checks(client, server.addr, ca,
                                            *(mine if mutual else []),
                                            only=name,
                                            flows=list(CLIENTS).index(client))[name]
                        self.assertTrue(ok, f"{client} {name}: {detail}")
                    if mutual:  # No client certificate: not served.
                        ok, detail = checks(client, server.addr, ca,
                                            only="get_flow_state")[
                                                "get_flow_state"]
                        self.assertFalse(ok, f"{client}: {detail}")
                        print(f"  {client} without a certificate: {detail}",
                              file=sys.stderr)
            finally:
                server.stop()


class SigtermTest(unittest.TestCase):
    """A heartbeat stream held by each stack while the server is stopped:
    the stream ends with a status (not a hang), the server exits 0."""

    def test_streams_open_through_sigterm(self):
        server = Server("--shutdown_grace=1s")
        holders = []
        try:
            for client in CLIENTS:
                proc = subprocess.Popen(
                    [*CLIENTS[client], f"--addr={server.addr}", "--hold"],
                    stdout=subprocess.PIPE, text=True)
                self.assertEqual(json.loads(proc.stdout.readline()),
                                 {"holding": True}, client)
                holders.append((client, proc))
            server.proc.send_signal(signal.SIGTERM)
            self.assertEqual(server.proc.wait(timeout=30), 0)
        finally:
            if server.proc.poll() is None:
                server.stop()
        for client, proc in holders:
            ended = json.loads(proc.stdout.readline())
            proc.wait(timeout=10)
            proc.stdout.close()
            print(f"  {client}: stream ended {ended}", file=sys.stderr)
            # UNAVAILABLE (the server going away) or OK: a status, in time.
            self.assertIn(ended["ended"], (0, 14), client)


def grpc_body(message):
    return struct.pack(">BI", 0, len(message)) + message


class NghttpTest(unittest.TestCase):
    """Hand-made requests through nghttp: gRPC's framing as any HTTP/2
    client can send it, and an HTTP request that is not gRPC's."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        load(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def nghttp(self, path, body, content_type="application/grpc"):
        with tempfile.NamedTemporaryFile(suffix=".bin") as f:
            f.write(body)
            f.flush()
            done = subprocess.run(
                ["nghttp", "-v", "-n", "-H", f"content-type: {content_type}",
                 "-H", "te: trailers", "-d", f.name,
                 f"http://{self.server.addr}{path}"],
                capture_output=True, text=True, timeout=30, check=False)
        return done.stdout

    def test_a_grpc_call_by_hand(self):
        from harness import meta
        request = meta.metasrv_pb2.GetFlowStateRequest(flow_ids=[0, 1, 2])
        out = self.nghttp("/metasrv.v1.FlowState/GetFlowState",
                          grpc_body(request.SerializeToString()))
        self.assertIn("grpc-status: 0", out)
        self.assertIn("grpc-accept-encoding: identity,gzip,zstd", out)

    def test_a_request_that_is_not_grpc_is_415(self):
        out = self.nghttp("/metasrv.v1.FlowState/GetFlowState", b"{}",
                          content_type="application/json")
        self.assertIn(":status: 415", out)
        self.assertIn("grpc-status: 13", out)


def main():
    import argparse
    global WORK
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    parser.add_argument("--workdir", required=True)
    args, rest = parser.parse_known_args()
    harness.setup(args.binary, args.pydir)
    WORK = os.path.abspath(args.workdir)
    os.makedirs(WORK, exist_ok=True)
    CLIENTS["grpc-go"] = build_go()
    CLIENTS["grpc-js"] = build_js()
    print(f"interop: {versions()}", file=sys.stderr)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
