"""What a client leaves behind (docs/RELIABILITY.md): every byte the
transport holds is bounded per stream and given back on every close.

  python3 leftovers_test.py --binary=build/server/metasrv --pydir=build/gen_py

Each attack comes from 127/8 addresses other than 127.0.0.1, beside an
honest flownode heartbeating on 127.0.0.1, and each test checks the after:
once the attacker left, honest calls of every kind are served within 1 s and
RSS, metasrv_grpc_request_bytes_held and metasrv_grpc_calls_open are back at
their baselines. LEFTOVERS_SECONDS sets how long the floods run (the figures
in docs/RELIABILITY.md: 60).
"""

import os
import socket
import struct
import sys
import threading
import time
import unittest

from harness import Server, report, rss_kib, wait_for
import harness
import tonic_client
from attack_test import GET_FLOW_STATE, HEARTBEAT, load_flows
from fair_share_test import attackers, honest_calls_served, pump_until

SECONDS = float(os.environ.get("LEFTOVERS_SECONDS", "6"))
STALL = 2.0  # --reply_stall_limit in these tests.
MIB = 1024


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class HonestFlownode(threading.Thread):
    """A flownode on 127.0.0.1 reporting every 100 ms; each round trip's
    seconds in `latencies`, any failure in `errors`."""

    def __init__(self, addr, node=4242):
        super().__init__(daemon=True)
        self.addr, self.node = addr, node
        self.latencies, self.errors = [], []
        self.stop = threading.Event()

    def run(self):
        conn = tonic_client.Connection(self.addr)
        try:
            call = conn.open(HEARTBEAT)
            n = 0
            while not self.stop.is_set():
                n += 1
                start = time.monotonic()
                call.send(report(self.node, [(7_000_000, n, n)]).SerializeToString())
                try:
                    call.recv(timeout=5)
                except (OSError, tonic_client.CallError) as e:
                    self.errors.append(repr(e))
                    return
                self.latencies.append(time.monotonic() - start)
                self.stop.wait(0.1)
            call.close_send()
            call.finish()
        finally:
            conn.close()


class NonReader:
    """Heartbeat streams from `source` that send small reports packed into
    16 kB DATA frames and never read the answers: window 0, or with
    `trickle` a 1-byte WINDOW_UPDATE on each stream every 0.5 s (a heartbeat
    answer then takes about a minute). A stream the
    server ends is replaced by a new one; each stream's life in `lives`."""

    def __init__(self, addr, source, trickle, connections=2):
        self.conns = [tonic_client.Connection(addr, encoding="identity",
                                              window=0, source=source)
                      for _ in range(connections)]
        self.trickle = trickle
        self.lives, self.sent = [], 0
        self.node = int(source.rsplit(".", 1)[1]) * 1000
        self.streams = {}  # conn index -> (call, opened at)
        self.next_grant = 0.0  # When the trickle grants its next byte.

    def open(self, i):
        self.node += 1
        call = self.conns[i].open(HEARTBEAT)
        hello = report(self.node, []).SerializeToString()
        call.send_raw(struct.pack(">BI", 0, len(hello)) + hello)
        self.streams[i] = (call, time.monotonic())

    def step(self):
        """Sends what the windows let through, grants its trickle, and reads
        what the server says; one pass over the connections."""
        one = report(self.node, [(9, 1, 1)]).SerializeToString()
        frame = struct.pack(">BI", 0, len(one)) + one
        packed = frame * (16000 // len(frame))
        for i, conn in enumerate(self.conns):
            if i not in self.streams:
                self.open(i)
            call, opened = self.streams[i]
            if call.ended:
                self.lives.append(time.monotonic() - opened)
                del self.streams[i]
                continue
            window = min(conn.h2.local_flow_control_window(call.stream_id),
                         conn.h2.max_outbound_frame_size)
            if window >= len(packed):
                conn.h2.send_data(call.stream_id, packed)
                self.sent += len(packed)
            if self.trickle and time.monotonic() >= self.next_grant:
                conn.h2.increment_flow_control_window(1, stream_id=call.stream_id)
            conn.flush()
        if self.trickle and time.monotonic() >= self.next_grant:
            self.next_grant = time.monotonic() + 0.5
        pump_until(self.conns, 0.05)

    def leave(self, how):
        for conn in self.conns:
            close(conn, how)


def close(conn, how):
    """Leaves as a client can: "fin" (the socket closed), "rst" (a TCP
    reset) or "goaway" (GOAWAY, then the socket closed)."""
    if how == "goaway":
        conn.close()
        return
    if how == "rst":
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                             struct.pack("ii", 1, 0))
    conn.sock.close()


class After:
    """The baselines taken before an attack, and the check after it."""

    def __init__(self, test, server):
        self.test, self.server = test, server
        self.rss = rss_kib(server.proc.pid)
        self.calls = server.metric("metasrv_grpc_calls_open")

    def check(self, what):
        server = self.server
        start = time.monotonic()
        wait_for(lambda: honest_calls_served(server.addr) < 5, timeout=5,
                 what=f"honest calls after {what}")
        served = time.monotonic() - start
        wait_for(lambda: server.metric("metasrv_grpc_request_bytes_held") == 0,
                 timeout=5, what=f"request bytes given back after {what}")
        wait_for(lambda: server.metric("metasrv_grpc_calls_open") <= self.calls,
                 timeout=5, what=f"calls given back after {what}")
        rss = rss_kib(server.proc.pid)
        print(f"  after {what}: honest calls served in {served:.2f} s; RSS "
              f"{self.rss // MIB} -> {rss // MIB} MiB; request bytes held 0; "
              f"calls open {server.metric('metasrv_grpc_calls_open'):.0f}",
              file=sys.stderr)
        self.test.assertLess(served, 5 if harness.SANITIZED else 1.0)
        if not harness.SANITIZED:
            self.test.assertLess(rss, self.rss + 32 * MIB)


class NonReadingHeartbeatTest(unittest.TestCase):
    """Issue 66: one stream that never reads grew the server 20 -> 672 MiB
    in 15 s (window 0) and +140 MiB a second with a 1-byte trickle, never
    ended, and most of it was still held after the client left."""

    def attack(self, hosts, trickle):
        server = Server(f"--reply_stall_limit={STALL:g}s", metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 1, 1)
        after = After(self, server)
        honest = HonestFlownode(server.addr)
        honest.start()
        readers = [NonReader(server.addr, source, trickle)
                   for source in attackers(hosts)]
        peak = after.rss
        end = time.monotonic() + SECONDS
        while time.monotonic() < end:
            for r in readers:
                r.step()
            peak = max(peak, rss_kib(server.proc.pid))
        honest.stop.set()
        honest.join()
        for r in readers:
            r.leave("fin")
        lives = [life for r in readers for life in r.lives]
        sent = sum(r.sent for r in readers)
        kind = "trickle" if trickle else "window 0"
        print(f"\nnon-reading heartbeats, {hosts} host(s), {kind}, {SECONDS:g} s: "
              f"{sent / 2**20:.1f} MiB sent, {len(lives)} streams ended, "
              f"longest {max(lives, default=0):.2f} s; RSS {after.rss // MIB} "
              f"-> peak {peak // MIB} MiB; honest heartbeats p99 "
              f"{percentile(honest.latencies, 0.99) * 1000:.1f} ms "
              f"({len(honest.latencies)})", file=sys.stderr)
        self.assertEqual(honest.errors, [])
        self.assertGreater(len(lives), 0, "no non-reading stream was ended")
        # Ended within the stall limit (+ its tick and this loop's pass).
        self.assertLess(max(lives), STALL + 1.0)
        if not harness.SANITIZED:
            self.assertLess(peak, after.rss + 64 * MIB)
            self.assertLess(percentile(honest.latencies, 0.99), 0.1)
        after.check(f"{hosts} non-reading host(s), {kind}")

    def test_window_zero_one_host(self):
        self.attack(1, trickle=False)

    def test_window_zero_three_hosts(self):
        self.attack(3, trickle=False)

    def test_trickle_one_host(self):
        self.attack(1, trickle=True)

    def test_trickle_three_hosts(self):
        self.attack(3, trickle=True)


class PartialMessagesTest(unittest.TestCase):
    """Issue 66: partial messages up to --grpc_memory_limit, then the
    connections closed: the bound's count leaked on every close but nghttp2's
    stream-close, and every honest call with a message was refused for good."""

    def test_each_way_of_closing_gives_the_bytes_back(self):
        limit = 16 << 20
        server = Server(f"--grpc_memory_limit={limit}", metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 1, 1)
        after = After(self, server)
        for how in ("fin", "rst", "goaway"):
            conns = [tonic_client.Connection(server.addr, encoding="identity",
                                             source=source)
                     for source in attackers(2)]
            # 4 MiB announced, all but 64 bytes sent, on 3 streams each:
            # past the bound, whose calls end RESOURCE_EXHAUSTED.
            for conn in conns:
                for _ in range(3):
                    send_partial(conn, conn.open(RANGE_PATH))
            wait_for(lambda: server.metric("metasrv_grpc_request_bytes_held")
                     >= limit - (5 << 20), timeout=10,
                     what="the request bound held")
            held = server.metric("metasrv_grpc_request_bytes_held")
            print(f"\npartial messages: {held / 2**20:.1f} MiB held of "
                  f"{limit >> 20} MiB; leaving by {how}", file=sys.stderr)
            for conn in conns:
                close(conn, how)
            after.check(f"partial messages closed by {how}")


RANGE_PATH = "/greptime.v1.meta.Cluster/Range"


def send_partial(conn, call):
    """A message of 4 MiB announced and all but 64 bytes of it sent, as
    the windows allow; stops early if the server ends the call."""
    data = struct.pack(">BI", 0, (4 << 20) - 8) + b"\0" * ((4 << 20) - 72)
    deadline = time.monotonic() + 10
    while data and not call.ended and time.monotonic() < deadline:
        window = min(conn.h2.local_flow_control_window(call.stream_id),
                     conn.h2.max_outbound_frame_size)
        if window <= 0:
            pump_until([conn], 0.05)
            continue
        conn.h2.send_data(call.stream_id, data[:window])
        data = data[window:]
        conn.flush()


class TrickledAnswerTest(unittest.TestCase):
    """Issue 66: a 1-byte window every 2 s restarted the stall limit, so
    every call slot was held for as long as the client trickled. Each answer
    now has a completion deadline: the limit plus its size at 1 MiB/s."""

    def test_trickled_reads_end_at_their_deadline(self):
        server = Server(f"--reply_stall_limit={STALL:g}s", metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 2, 10_000)
        after = After(self, server)
        conn = tonic_client.Connection(server.addr, encoding="identity",
                                       window=0, source="127.0.0.9")
        calls = []
        for _ in range(100):
            call = conn.open(GET_FLOW_STATE)
            call.send(b"", end=True)
            calls.append(call)
        start = time.monotonic()
        while time.monotonic() - start < STALL + 3 and not all(c.ended for c in calls):
            for c in calls:
                if not c.ended:
                    conn.h2.increment_flow_control_window(1, stream_id=c.stream_id)
            conn.flush()
            pump_until([conn], 0.5)
        took = time.monotonic() - start
        open_left = sum(1 for c in calls if not c.ended)
        print(f"\ntrickled answers: {len(calls)} full reads, {open_left} still "
              f"open {took:.1f} s in", file=sys.stderr)
        self.assertEqual(open_left, 0)
        close(conn, "fin")
        after.check("trickled answers")


if __name__ == "__main__":
    harness.run_tests()
