"""Heartbeats at the cadence GreptimeDB's nodes keep, on the wire.

Each node here does what upstream's client does after its handshake: the
handshake answer's `heartbeat_interval_ms` is its period, its first report
goes at once and then one every period (a frontend: the `tokio::time::sleep`
reset in `report_heartbeats`, src/frontend/src/heartbeat.rs; a flownode: the
`tokio::time::interval` in `start_heartbeat_report`, src/flow/src/heartbeat.rs).
No node sends faster than it was told: time is scaled down only through the
server's own settings (--heartbeat_interval, --retry_interval).
"""

import select
import sys
import time
import unittest

from harness import FLOWNODE, FRONTEND, Server, header, meta, parse, report, run_tests
from tonic_client import CallError, Connection

HEARTBEAT = "/greptime.v1.meta.Heartbeat/Heartbeat"
DEADLINE_EXCEEDED = 4


class Node:
    """One node's heartbeat stream on its own connection. `silent`: after
    the handshake it sends nothing more (a dead node whose connection
    lives)."""

    def __init__(self, addr, role, member, silent=False):
        self.role, self.member, self.silent = role, member, silent
        self.conn = Connection(addr)
        self.call = self.conn.open(HEARTBEAT)
        self.sent_at = time.monotonic()
        self.call.send(self.request().SerializeToString())
        answer = parse(meta.heartbeat_pb2.HeartbeatResponse, self.call.recv())
        self.told = answer.heartbeat_config.heartbeat_interval_ms / 1000
        self.retry = answer.heartbeat_config.retry_interval_ms / 1000
        self.sent, self.answered = 1, 1
        self.next = time.monotonic()  # The first report goes at once.
        self.ended_at = None
        self.status = None

    def request(self):
        if self.role == FLOWNODE:
            return report(self.member, [(self.member * 10 + i, 100, 1000)
                                        for i in range(3)])
        req = meta.heartbeat_pb2.HeartbeatRequest(
            header=header(FRONTEND, self.member))
        req.peer.id = self.member
        req.peer.addr = f"127.0.0.1:{4000 + self.member}"
        return req

    def due(self):
        """When this node next sends (None: never again)."""
        if self.silent or self.ended_at is not None:
            return None
        return self.next

    def send(self):
        self.sent_at = time.monotonic()
        self.call.send(self.request().SerializeToString())
        self.sent += 1
        self.next += self.told

    def take(self):
        """Counts the answers that arrived; notes the end of the stream."""
        while self.call._message() is not None:
            self.answered += 1
        if self.call.ended and self.ended_at is None:
            self.ended_at = time.monotonic()
            try:
                self.call.check_status()
                self.status = 0
            except CallError as e:
                self.status = e.code


def run(nodes, seconds):
    """Keeps every node at its cadence for `seconds`, reading all answers
    (and answering the server's pings) as they come."""
    stop = time.monotonic() + seconds
    socks = {node.conn.sock: node for node in nodes}
    while True:
        now = time.monotonic()
        if now >= stop:
            return
        for node in nodes:
            due = node.due()
            if due is not None and due <= now:
                node.send()
        dues = [d for d in (n.due() for n in nodes) if d is not None]
        wait = max(0.0, min(dues + [stop]) - time.monotonic())
        live = [s for s, n in socks.items() if n.ended_at is None]
        readable, _, _ = select.select(live, [], [], min(wait, 0.5))
        for sock in readable:
            node = socks[sock]
            node.conn.pump(1.0)
            node.take()


def settle(nodes, seconds=5.0):
    """Reads, sending nothing more, until every live node has the answer to
    each heartbeat it sent (or `seconds` passed)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        waiting = [n for n in nodes
                   if n.ended_at is None and n.answered < n.sent]
        if not waiting:
            return
        readable, _, _ = select.select([n.conn.sock for n in waiting], [], [],
                                       0.1)
        for node in waiting:
            if node.conn.sock in readable:
                node.conn.pump(1.0)
                node.take()


class CadenceTest(unittest.TestCase):
    def test_nodes_at_their_told_intervals_keep_one_stream(self):
        """The shipped defaults: a frontend told 18,000 ms and a flownode
        told 3,000 ms, each at exactly that cadence, keep one stream for
        four frontend intervals; every heartbeat is answered."""
        server = Server(metrics=True)
        try:
            frontend = Node(server.addr, FRONTEND, 3)
            flownode = Node(server.addr, FLOWNODE, 7)
            self.assertEqual(frontend.told, 18.0)
            self.assertEqual(flownode.told, 3.0)
            run([frontend, flownode], 4 * frontend.told + 1)
            print(f"\nshipped defaults, 73 s: frontend {frontend.sent} "
                  f"heartbeats, {frontend.answered} answers; flownode "
                  f"{flownode.sent}, {flownode.answered}", file=sys.stderr)
            for node in (frontend, flownode):
                self.assertIsNone(node.ended_at, node.status)
            # Handshake, at once, then at 18, 36, 54 and 72 s.
            self.assertEqual(frontend.sent, 6)
            self.assertGreaterEqual(flownode.sent, 25)
            settle([frontend, flownode])  # The last answers.
            self.assertEqual(frontend.answered, frontend.sent)
            self.assertEqual(flownode.answered, flownode.sent)
            self.assertEqual(server.metric("metasrv_calls_refused_total",
                                           'reason="silent"'), 0)
        finally:
            server.stop()

    def test_each_stream_is_silent_past_its_own_limit(self):
        """Scaled down by the server's settings (told 500 ms and 3,000 ms):
        streams at their cadence stay; a silent flownode is ended past its
        limit (3 x 500 + 500 ms), a silent frontend past its own (3 x 3,000
        + 500 ms) and not at the flownode's."""
        server = Server("--heartbeat_interval=500ms", "--retry_interval=500ms",
                        metrics=True)
        try:
            nodes = [Node(server.addr, FRONTEND, 3), Node(server.addr, FLOWNODE, 7),
                     Node(server.addr, FRONTEND, 4, silent=True),
                     Node(server.addr, FLOWNODE, 8, silent=True)]
            frontend, flownode, quiet_frontend, quiet_flownode = nodes
            self.assertEqual(frontend.told, 3.0)
            self.assertEqual(flownode.told, 0.5)
            run(nodes, 4 * frontend.told + 1)
            settle([frontend, flownode])  # The last answers.
            for node in (frontend, flownode):
                self.assertIsNone(node.ended_at, node.status)
                self.assertEqual(node.answered, node.sent)
            for node, limit in ((quiet_flownode, 2.0), (quiet_frontend, 9.5)):
                self.assertEqual(node.status, DEADLINE_EXCEEDED)
                silence = node.ended_at - node.sent_at
                print(f"\n{'frontend' if node.role == FRONTEND else 'flownode'}"
                      f" silent {silence:.2f} s, limit {limit} s",
                      file=sys.stderr)
                # The server counts from the request's arrival, after it
                # was sent: never before the limit; the sweep looks every
                # quarter of the shortest limit.
                self.assertGreaterEqual(silence, limit)
                self.assertLess(silence, limit + 1.0)
            self.assertEqual(server.metric("metasrv_calls_refused_total",
                                           'reason="silent"'), 2)
        finally:
            server.stop()


if __name__ == "__main__":
    run_tests()
