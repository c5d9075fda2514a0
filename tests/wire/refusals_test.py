"""What the operator sees while the gRPC port refuses calls (issue 71),
tested during the outage it exists for.

  python3 refusals_test.py --binary=build/server/metasrv --pydir=build/gen_py

One host holds the request-byte bound (--grpc_memory_limit at its least,
16 MiB, in partial messages), so every call that carries a message from
any host is refused RESOURCE_EXHAUSTED. While it holds it and after it
left: /health, /ready, the metrics and `metasrvctl status`.
"""

import os
import struct
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

from harness import Server, wait_for
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


class RequestBytesOutageTest(unittest.TestCase):

    def test_probes_metrics_and_status_say_what_clients_get(self):
        limit = 16 << 20
        server = Server(f"--grpc_memory_limit={limit}", "--request_timeout=60s",
                        metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 1, 1)
        port = server.metrics_port
        self.assertEqual(http(port, "/ready"), (200, "leader\n"))
        conns = [tonic_client.Connection(server.addr, encoding="identity",
                                         source="127.0.0.7") for _ in range(2)]
        self.addCleanup(lambda: [c.sock.close() for c in conns])
        for conn in conns:
            for _ in range(3):
                send_partial(conn, conn.open(RANGE_PATH))
        # The last bytes below the bound, 8 on each new call, until one is
        # refused (a refused call gives back what it held).
        while True:
            top_up = conns[0].open(RANGE_PATH)
            top_up.send_raw(struct.pack(">BI", 0, 1 << 20) + b"\0" * 3)
            pump_until([conns[0]], 0.02)
            if top_up.ended:
                break
        held = server.metric("metasrv_grpc_request_bytes_held")
        self.assertGreater(held, limit - 8)
        # Honest clients are refused: every new heartbeat, from any host.
        refusal = heartbeat_refused(server.addr)
        self.assertIsNotNone(refusal)
        self.assertIn("8: requests not yet whole exceed", refusal)
        # Heartbeats were served at the start: /ready names them once none
        # was for its window (5 s) while every new one is refused.
        wait_for(lambda: heartbeat_refused(server.addr) is not None and
                 "every new heartbeat call is refused" in http(port, "/ready")[1],
                 timeout=15, what="/ready naming the refused heartbeats")
        status, body = http(port, "/ready")
        print(f"\nwhile the bound is held: heartbeat refused ({refusal}); "
              f"/ready {status} {body.strip()!r}", file=sys.stderr)
        self.assertEqual(status, 503)
        self.assertIn("every new heartbeat call is refused", body)
        self.assertIn("RESOURCE_EXHAUSTED", body)
        # Liveness stays about the process, and names the refusal.
        status, body = http(port, "/health")
        print(f"  /health {status} {body.strip()!r}", file=sys.stderr)
        self.assertEqual(status, 200)
        self.assertIn("every new heartbeat call is refused", body)
        self.assertEqual(server.metric("metasrv_grpc_refusing"), 1)
        self.assertGreater(server.metric("metasrv_calls_refused_total",
                                         'reason="request_bytes"'), 0)
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
        self.assertIn("resource exhausted: requests not yet whole exceed", out)
        self.assertIn("no replica answered: ", out)

        # The holder leaves: honest calls get in at once, the probes follow.
        for conn in conns:
            conn.sock.close()
        wait_for(lambda: heartbeat_refused(server.addr) is None, timeout=5,
                 what="a heartbeat answered after the holder left")
        wait_for(lambda: http(port, "/ready")[0] == 200, timeout=10,
                 what="/ready 200 after the holder left")
        self.assertEqual(http(port, "/health"), (200, "serving\n"))
        self.assertEqual(server.metric("metasrv_grpc_refusing"), 0)
        code, out = metasrvctl(f"--addr={server.addr}", "status")
        print(f"  after: /ready 200; metasrvctl status: exit {code}\n{out}",
              file=sys.stderr)
        self.assertEqual(code, 0)
        self.assertNotIn("refuses", out)


if __name__ == "__main__":
    harness.run_tests()
