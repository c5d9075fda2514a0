"""What the operator sees while the gRPC port refuses calls (issue 71),
tested during the outage it exists for.

  python3 refusals_test.py --binary=build/server/metasrv --pydir=build/gen_py

Every call slot is held by live heartbeat streams (--max_calls=16), so
every new call of every kind is refused RESOURCE_EXHAUSTED. While they hold
it and after they left: /health, /ready, the metrics and `metasrvctl
status`. And hardening round 7's request-byte share: one host holding
--grpc_memory_limit refuses no other host.
"""

import os
import struct
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

from harness import Server, meta, wait_for
import harness
import tonic_client
from attack_test import HEARTBEAT, heartbeat_answered, load_flows
from fair_share_test import pump_until
from leftovers_test import RANGE_PATH, send_partial


def http(port, path):
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                    timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def metasrvctl(*args):
    """(exit code, stdout + stderr) of the metasrvctl built beside the
    binary."""
    tool = os.path.join(os.path.dirname(os.path.dirname(harness.BINARY)),
                        "cli", "metasrvctl")
    done = subprocess.run([tool, *args], capture_output=True, text=True,
                          timeout=30, check=False)
    return done.returncode, done.stdout + done.stderr


def heartbeat_refused(addr):
    """A new flownode's handshake from 127.0.0.1; its refusal's text, or
    None when it was answered."""
    try:
        return None if heartbeat_answered(addr, 9001) else "error header"
    except tonic_client.CallError as error:
        return f"{error.code}: {error.message}"


def hold_request_bytes(server, limit, source):
    """Partial messages from `source` up to what its host may hold; the
    connections (close them to leave)."""
    conns = [tonic_client.Connection(server.addr, encoding="identity",
                                     source=source) for _ in range(2)]
    for conn in conns:
        for _ in range(3):
            send_partial(conn, conn.open(RANGE_PATH))
    # The last bytes, 8 on each new call, until one is refused (a refused
    # call gives back what it held).
    while True:
        top_up = conns[0].open(RANGE_PATH)
        top_up.send_raw(struct.pack(">BI", 0, 1 << 20) + b"\0" * 3)
        pump_until([conns[0]], 0.02)
        if top_up.ended:
            break
    return conns


class RequestBytesShareTest(unittest.TestCase):
    """Hardening round 7: request bytes were one pool; one host holding
    --grpc_memory_limit in partial messages refused every other host's
    requests until its calls timed out (115 of 237 honest calls). A host
    under its share (the bound over the hosts holding bytes) still takes,
    and the host holding the most gives back what passed the bound."""

    def test_one_host_holding_the_bound_refuses_no_other(self):
        limit = 16 << 20
        server = Server(f"--grpc_memory_limit={limit}", "--request_timeout=60s",
                        metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 1, 1)
        conns = hold_request_bytes(server, limit, "127.0.0.7")
        self.addCleanup(lambda: [c.sock.close() for c in conns])
        held = server.metric("metasrv_grpc_request_bytes_held")
        self.assertGreater(held, limit - 8)
        served = sum(heartbeat_refused(server.addr) is None for _ in range(20))
        print(f"\none host holds {held / 2**20:.1f} MiB of {limit >> 20} MiB: "
              f"{served} of 20 honest heartbeats from 127.0.0.1 served",
              file=sys.stderr)
        self.assertEqual(served, 20)
        self.assertEqual(http(server.metrics_port, "/ready"), (200, "leader\n"))
        # The holder, over its share, gave back what the honest calls took
        # past the bound: its connections ended calls holding bytes.
        wait_for(lambda: server.metric("metasrv_grpc_request_bytes_held")
                 <= limit, timeout=2, what="the holder paying back")
        pump_until(conns, 0.2)
        ended = [c for conn in conns for c in conn.calls.values()
                 if "make room" in dict(c.trailers or c.headers or []).get(
                     "grpc-message", "")]
        print(f"  then {server.metric('metasrv_grpc_request_bytes_held') / 2**20:.1f}"
              f" MiB held; {len(ended)} of the holder's calls ended to make "
              "room", file=sys.stderr)
        self.assertGreaterEqual(len(ended), 1)


class Heartbeater:
    """Flownode heartbeat streams from `sources`, each reporting every
    200 ms (live: the ledger never ends them for another host)."""

    def __init__(self, addr, sources):
        self.streams = []
        for n, source in enumerate(sources):
            conn = tonic_client.Connection(addr, source=source)
            call = conn.open(HEARTBEAT)
            self.streams.append((conn, call, 5000 + n))
        self.stop = False
        import threading
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        from harness import report
        while not self.stop:
            for conn, call, node in self.streams:
                try:
                    call.send(report(node, [(node, 1, 1)]).SerializeToString())
                    call.recv(timeout=2)
                except Exception:  # pylint: disable=broad-except
                    pass
            time.sleep(0.2)

    def leave(self):
        self.stop = True
        self.thread.join()
        for conn, _, _ in self.streams:
            conn.sock.close()


class CallBoundOutageTest(unittest.TestCase):
    """Issue 71: while the port refuses every new call, what the operator
    sees must say so. Here every call slot (--max_calls=16) is held by a
    live heartbeat stream (never ended for another host), so every new call
    of every kind is refused RESOURCE_EXHAUSTED; then the streams leave."""

    def test_probes_metrics_and_status_say_what_clients_get(self):
        server = Server("--max_calls=16", metrics=True)
        self.addCleanup(server.stop)
        port = server.metrics_port
        self.assertEqual(http(port, "/ready"), (200, "leader\n"))
        holders = Heartbeater(server.addr,
                              [f"127.0.3.{2 + i}" for i in range(16)])
        self.addCleanup(lambda: holders.stop or holders.leave())
        wait_for(lambda: server.metric("metasrv_grpc_calls_open") >= 16,
                 timeout=10, what="every call slot held")
        refusal = heartbeat_refused(server.addr)
        self.assertIsNotNone(refusal)
        self.assertIn("8: ", refusal)
        # Heartbeats were served as the holders came: /ready names them
        # once none was for its window (5 s) while every new one is refused.
        wait_for(lambda: heartbeat_refused(server.addr) is not None and
                 "every new heartbeat call is refused" in http(port, "/ready")[1],
                 timeout=15, what="/ready naming the refused heartbeats")
        status, body = http(port, "/ready")
        print(f"\nwhile every slot is held: heartbeat refused ({refusal}); "
              f"/ready {status} {body.strip()!r}", file=sys.stderr)
        self.assertEqual(status, 503)
        self.assertIn("RESOURCE_EXHAUSTED", body)
        # Liveness stays about the process, and names the refusal.
        status, body = http(port, "/health")
        print(f"  /health {status} {body.strip()!r}", file=sys.stderr)
        self.assertEqual(status, 200)
        self.assertIn("every new heartbeat call is refused", body)
        self.assertEqual(server.metric("metasrv_grpc_refusing"), 1)
        self.assertGreater(server.metric("metasrv_calls_refused_total",
                                         'reason="calls"'), 0)
        # The code the client was told, not another.
        self.assertGreater(server.metric(
            "grpc_server_handled_total",
            'grpc_code="ResourceExhausted",grpc_method="Heartbeat",'
            'grpc_service="greptime.v1.meta.Heartbeat",grpc_type="bidi_stream"'),
            0)
        code, out = metasrvctl(f"--addr={server.addr}", "status")
        print(f"  metasrvctl status: exit {code}\n{out}", file=sys.stderr)
        self.assertNotEqual(code, 0)
        self.assertIn("REFUSED", out)
        self.assertIn("no replica answered: ", out)
        self.assertIn("resource exhausted", out)

        # The holders leave: honest calls get in at once, the probes follow.
        holders.leave()
        wait_for(lambda: heartbeat_refused(server.addr) is None, timeout=5,
                 what="a heartbeat answered after the holders left")
        wait_for(lambda: http(port, "/ready")[0] == 200, timeout=10,
                 what="/ready 200 after the holders left")
        self.assertEqual(http(port, "/health"), (200, "serving\n"))
        self.assertEqual(server.metric("metasrv_grpc_refusing"), 0)
        code, out = metasrvctl(f"--addr={server.addr}", "status")
        print(f"  after: /ready 200; metasrvctl status: exit {code}\n{out}",
              file=sys.stderr)
        self.assertEqual(code, 0)
        self.assertNotIn("refuses", out)


class GrpcDeviationsTest(unittest.TestCase):
    """Hardening round 7: two answers gRPC gives that the server did not."""

    def test_an_expired_timeout_and_a_second_unary_message_are_errors(self):
        server = Server()
        self.addCleanup(server.stop)
        load_flows(server.addr, 1, 1)
        conn = tonic_client.Connection(server.addr)
        self.addCleanup(conn.close)
        request = meta.cluster_pb2.RangeRequest(key=b"__flow/state")
        with self.assertRaises(tonic_client.CallError) as late:
            conn.unary(RANGE_PATH, request, metadata=[("grpc-timeout", "0n")])
        self.assertEqual(late.exception.code, 4)  # DEADLINE_EXCEEDED
        call = conn.open(RANGE_PATH)
        body = request.SerializeToString()
        framed = struct.pack(">BI", 0, len(body)) + body
        call.send_raw(framed + framed, end=True)  # In one DATA frame.
        with self.assertRaises(tonic_client.CallError) as twice:
            call.finish()
        self.assertEqual(twice.exception.code, 13)  # INTERNAL
        self.assertIn("second request message", twice.exception.message)
        # One message, as due, is served.
        self.assertTrue(conn.unary(RANGE_PATH, request))


if __name__ == "__main__":
    harness.run_tests()
