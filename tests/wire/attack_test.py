"""Clients that try to exhaust the server, each against the binary.

  python3 attack_test.py --binary=build/server/metasrv --pydir=build/gen_py

Each attack is bounded in bytes and time, runs on loopback only, and checks
that memory stays bounded and that honest clients are still served.
"""

import json
import socket
import struct
import sys
import threading
import time
import unittest

from harness import (Server, cpu_seconds, header, meta, parse, report, rss_kib,
                     wait_for)
import harness
import tonic_client

GET_FLOW_STATE = "/metasrv.v1.FlowState/GetFlowState"
HEARTBEAT = "/greptime.v1.meta.Heartbeat/Heartbeat"
RANGE = "/greptime.v1.meta.Cluster/Range"
WATCH = "/metasrv.v1.FlowState/WatchFlowState"
MIB = 1024


def load_flows(addr, nodes, flows_per_node):
    """Three nodes' reports of `flows_per_node` disjoint flows each."""
    conn = tonic_client.Connection(addr)
    try:
        for node in range(nodes):
            call = conn.open(HEARTBEAT)
            call.send(report(node, []).SerializeToString())
            call.recv()
            req = report(node, [])
            base = node * flows_per_node
            for f in range(base, base + flows_per_node):
                req.flow_stat.flow_stat_size[f] = 1000 + f
                req.flow_stat.flow_last_exec_time_map[f] = 1733000000000 + f
            call.send(req.SerializeToString())
            answer = parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv())
            assert not answer.header.HasField("error"), answer
            call.close_send()
            call.finish()
    finally:
        conn.close()


def one_flow_read(addr, flow_id):
    """Seconds a GetFlowState of one flow takes, and its answer."""
    conn = tonic_client.Connection(addr)
    try:
        start = time.monotonic()
        answer = parse(meta.metasrv_pb2.GetFlowStateResponse,
                       conn.unary(GET_FLOW_STATE,
                                  meta.metasrv_pb2.GetFlowStateRequest(flow_ids=[flow_id])))
        return time.monotonic() - start, answer
    finally:
        conn.close()


def heartbeat_answered(addr, node):
    conn = tonic_client.Connection(addr)
    try:
        call = conn.open(HEARTBEAT)
        call.send(report(node, [(4_000_000, 1, 1)]).SerializeToString())
        answer = parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv(timeout=5))
        call.close_send()
        call.finish()
        return not answer.header.HasField("error")
    finally:
        conn.close()


class UnreadAnswersTest(unittest.TestCase):
    """Full reads of a 300,000-flow state that the client never reads."""

    def test_memory_stays_bounded_and_heartbeats_go_on(self):
        # Answers held however long they stay unread: the budget's bound is
        # what is measured (door_attack_test.py cancels stalled ones).
        server = Server("--reply_stall_limit=1h")
        self.addCleanup(server.stop)
        load_flows(server.addr, 3, 100_000)
        idle = rss_kib(server.proc.pid)
        # A zero window: the server may send no answer's bytes.
        conn = tonic_client.Connection(server.addr, window=0)
        self.addCleanup(conn.close)
        calls = []
        for _ in range(1000):
            call = conn.open(GET_FLOW_STATE)
            call.send(meta.metasrv_pb2.GetFlowStateRequest(
                with_nodes=True).SerializeToString(), end=True)
            calls.append(call)
        # Wait until every call was either answered (and holds its bytes on
        # the server) or refused.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            refused = sum(1 for c in calls if c.ended)
            answered = sum(1 for c in calls if c.headers is not None and not c.ended)
            if refused + answered == len(calls):
                break
            try:
                conn.pump(1.0)
            except socket.timeout:
                pass
        refused = [c for c in calls if c.ended]
        self.assertGreater(len(refused), 0)
        for c in refused:
            with self.assertRaises(tonic_client.CallError) as error:
                c.check_status()
            self.assertEqual(error.exception.code, 8)  # RESOURCE_EXHAUSTED
        peak = rss_kib(server.proc.pid)
        print(f"\nunread reads: idle RSS {idle // MIB} MiB, with 1,000 unread full "
              f"reads {peak // MIB} MiB; {len(calls) - len(refused)} held, "
              f"{len(refused)} refused", file=sys.stderr)
        if not harness.SANITIZED:
            self.assertLess(peak, 2 * idle + 256 * MIB)
        self.assertTrue(heartbeat_answered(server.addr, 77))
        took, answer = one_flow_read(server.addr, 5)
        self.assertEqual(list(answer.state_sizes), [1005])


class StalledWatchersTest(unittest.TestCase):
    """Watchers with a zero window while 100,000 flows change every 250 ms."""

    def test_watchers_that_never_read_are_ended_and_memory_stays_bounded(self):
        budget_mib = 16
        server = Server(f"--max_reply_bytes_in_flight={budget_mib << 20}",
                        "--watch_min_interval=250ms", metrics=True)
        self.addCleanup(server.stop)
        # Two reports of the same 100,000 flows with different values,
        # sent in turn: every flow changes on every report.
        reports = []
        for turn in range(2):
            req = report(1, [])
            for f in range(100_000):
                req.flow_stat.flow_stat_size[f] = 1000 + f + turn
                req.flow_stat.flow_last_exec_time_map[f] = 1733000000000 + turn
            reports.append(req.SerializeToString())
        writer = tonic_client.Connection(server.addr)
        self.addCleanup(writer.close)
        stream = writer.open(HEARTBEAT)
        stream.send(report(1, []).SerializeToString())
        stream.recv()
        stream.send(reports[0])
        stream.recv()
        idle = rss_kib(server.proc.pid)
        stop = threading.Event()

        def change():
            turn = 0
            while not stop.wait(0.25):
                turn ^= 1
                stream.send(reports[turn])
                stream.recv(timeout=10)
        changer = threading.Thread(target=change)
        changer.start()
        self.addCleanup(changer.join)
        self.addCleanup(stop.set)

        # One honest watcher that reads everything.
        honest = tonic_client.Connection(server.addr)
        self.addCleanup(honest.close)
        reading = honest.open(WATCH)
        reading.send(meta.metasrv_pb2.WatchFlowStateRequest().SerializeToString(),
                     end=True)
        # It reads in a thread of its own, all there is as it comes: in turn
        # with the stalled connections below, Python's HTTP/2 parsing could
        # not keep up with a 1.4 MB state every 250 ms on a busy machine, and
        # the server would rightly end it as a watcher that does not read.
        def read_all():
            while not stop.is_set():
                try:
                    honest.pump(0.05)
                except socket.timeout:
                    pass
        honest_reader = threading.Thread(target=read_all)
        honest_reader.start()
        self.addCleanup(honest_reader.join)

        def pump_for(seconds, conns):
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                for c in conns:
                    try:
                        c.pump(0.001)
                    except (socket.timeout, BlockingIOError, ConnectionError):
                        pass
                if not conns:
                    time.sleep(0.01)

        # The churn alone first: what memory it takes with nobody stalled.
        churn_peak = idle
        for _ in range(32):
            pump_for(0.25, [])
            churn_peak = max(churn_peak, rss_kib(server.proc.pid))
        # Then a new watcher that never reads every 250 ms, for 20 s.
        stalled = []
        peak = idle
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            conn = tonic_client.Connection(server.addr, window=0)
            self.addCleanup(conn.close)
            call = conn.open(WATCH)
            call.send(meta.metasrv_pb2.WatchFlowStateRequest().SerializeToString(),
                      end=True)
            stalled.append((conn, call))
            pump_for(0.25, [c for c, _ in stalled])
            peak = max(peak, rss_kib(server.proc.pid))
        # What the honest watcher has read, at the end of the stalled phase.
        honest_ended = reading.ended
        honest_bytes = len(reading.buffer)
        stop.set()
        honest_reader.join()
        ended = [call for _, call in stalled if call.ended]
        codes = set()
        for call in ended:
            try:
                call.check_status()
                codes.add(0)
            except tonic_client.CallError as e:
                codes.add(e.code)
        print(f"\nstalled watchers: idle RSS {idle // MIB} MiB, churn alone "
              f"{churn_peak // MIB} MiB, with stalled watchers {peak // MIB} MiB; "
              f"{len(stalled)} opened, {len(ended)} ended ({sorted(codes)})",
              file=sys.stderr)
        # Each was refused or ended with RESOURCE_EXHAUSTED, its state freed.
        self.assertGreater(len(ended), len(stalled) // 2)
        self.assertEqual(codes, {8})
        # Those ended unread past the stall limit are counted as such.
        self.assertGreater(server.metric("metasrv_watch_stalled_total"), 0)
        if not harness.SANITIZED:
            self.assertLess(peak, churn_peak + 4 * budget_mib * MIB)
        # The honest watcher kept getting states; heartbeats are answered.
        self.assertFalse(honest_ended)
        self.assertGreater(honest_bytes, 1_000_000)
        self.assertTrue(heartbeat_answered(server.addr, 77))


class CancelledReadsTest(unittest.TestCase):
    """2,000 full reads, each cancelled 20 ms after it was sent."""

    def test_cancelled_reads_cost_little_and_small_reads_stay_fast(self):
        server = Server()
        self.addCleanup(server.stop)
        load_flows(server.addr, 3, 100_000)
        conn = tonic_client.Connection(server.addr)
        self.addCleanup(conn.close)
        cpu_before = cpu_seconds(server.proc.pid)
        start = time.monotonic()
        pending = []
        slowest = 0.0
        for i in range(2000):
            call = conn.open(GET_FLOW_STATE)
            call.send(meta.metasrv_pb2.GetFlowStateRequest().SerializeToString(),
                      end=True)
            pending.append((time.monotonic() + 0.02, call))
            while pending and pending[0][0] <= time.monotonic():
                pending.pop(0)[1].cancel()
            if i % 200 == 0:
                took, answer = one_flow_read(server.addr, 100_001)
                self.assertEqual(list(answer.flow_ids), [100_001])
                slowest = max(slowest, took)
            time.sleep(0.0005)
        for _, call in pending:
            call.cancel()
        attack_seconds = time.monotonic() - start
        took, _ = one_flow_read(server.addr, 200_002)
        slowest = max(slowest, took)
        # Let whatever was queued drain before reading the CPU time.
        wait_for(lambda: one_flow_read(server.addr, 7)[0] < 0.05, timeout=60,
                 what="the read queue to drain")
        cpu = cpu_seconds(server.proc.pid) - cpu_before
        print(f"\ncancelled reads: {attack_seconds:.1f} s of attack cost "
              f"{cpu:.1f} s of server CPU; slowest one-flow read "
              f"{slowest * 1000:.0f} ms", file=sys.stderr)
        self.assertLess(slowest, 1.0)
        self.assertTrue(heartbeat_answered(server.addr, 78))


class LogInjectionTest(unittest.TestCase):
    """A header value with a newline, a terminal escape and a forged line:
    gRPC's "Error parsing metadata" message carries the value into the log.
    No byte a client sends may end a line, move the terminal's cursor, or
    make a JSON line invalid."""

    FORGED = b"2026-12-01T00:00:00.000Z error FORGED by the client"

    def send_bad_header(self, server):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        self.addCleanup(sock.close)

        def frame(kind, flags, stream, payload):
            return (struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) +
                    struct.pack(">I", stream) + payload)

        def literal(name, value):  # Literal header field, new name, no Huffman.
            return bytes([0, len(name)]) + name + bytes([len(value)]) + value
        block = (b"\x83\x86" + b"\x04" + bytes([len(HEARTBEAT)]) + HEARTBEAT.encode() +
                 literal(b"content-type", b"application/grpc") +
                 literal(b"te", b"trailers") +
                 literal(b"grpc-timeout",
                         b"1S\n" + self.FORGED + b"\x1b[2J\xfe\xff"))
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") +
                     frame(1, 0x4, 1, block))
        try:
            sock.recv(65536)
        except OSError:
            pass

    def logged(self, *flags):
        server = Server("--log_level=info", *flags)
        self.addCleanup(server.stop)
        self.send_bad_header(server)
        # nghttp2 refuses a field value with a newline before any code of
        # ours reads it (RST_STREAM): nothing of it reaches the log.
        wait_for(lambda: "serving on" in server.log_text(), timeout=10,
                 what="the server's start in the log")
        with open(server.log.name, "rb") as f:
            return f.read()

    def test_text_lines_cannot_be_forged(self):
        raw = self.logged()
        for line in raw.split(b"\n"):
            self.assertFalse(line.startswith(self.FORGED), raw)
        self.assertNotIn(b"\x1b", raw)
        self.assertNotIn(self.FORGED, raw)
        raw.decode("utf-8")  # Broken UTF-8 escaped too.

    def test_json_lines_stay_json(self):
        raw = self.logged("--log_format=json")
        lines = [line for line in raw.split(b"\n") if line]
        self.assertTrue(lines)
        for line in lines:
            record = json.loads(line.decode("utf-8"))  # Each line, valid.
            self.assertFalse(record["msg"].startswith(self.FORGED.decode()))
        self.assertNotIn(b"\x1b", raw)


class ContinuationFloodTest(unittest.TestCase):
    """One HTTP/2 header block that never ends: CONTINUATION frames forever.

    Debian's gRPC 1.51 kept every header of an unfinished block (128 MiB
    sent: RSS 20 -> 612 MiB). nghttp2 bounds the CONTINUATION frames of one
    block: the connection is closed before a call exists. Asserted: a
    128 MiB flood grows the server by less than 16 MiB, its connection is
    closed, and honest clients are served meanwhile."""

    def test_the_connection_is_closed_and_memory_stays_flat(self):
        server = Server()
        self.addCleanup(server.stop)
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        self.addCleanup(sock.close)

        def frame(kind, flags, stream, payload):
            return (struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) +
                    struct.pack(">I", stream) + payload)
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
        # Complete small headers (literal, new name), never END_HEADERS.
        one = b"\x00\x03abc\x05hello"
        block = one * (16384 // len(one))
        before = rss_kib(server.proc.pid)
        sent, limit, start = 0, 128 << 20, time.monotonic()
        closed = False
        try:
            sock.sendall(frame(1, 0, 1, b"\x82\x86\x84" + block))
            while sent < limit and time.monotonic() - start < 60:
                sock.sendall(frame(9, 0, 1, block))
                sent += len(block)
                if sent % (16 << 20) < len(block):
                    self.assertTrue(heartbeat_answered(server.addr, 79))
        except OSError:
            closed = True  # The server closed the connection.
        if not closed:  # All sent: the server's answer is a GOAWAY and EOF.
            try:
                sock.settimeout(5)
                while sock.recv(65536):
                    pass
                closed = True
            except OSError:
                closed = True
        rss = rss_kib(server.proc.pid)
        print(f"\nCONTINUATION flood: {sent >> 20} MiB sent in "
              f"{time.monotonic() - start:.1f} s, server RSS {before // MIB} -> "
              f"{rss // MIB} MiB, connection {'closed' if closed else 'kept'}",
              file=sys.stderr)
        self.assertIsNone(server.proc.poll())
        self.assertTrue(closed)
        self.assertLess(rss - before, 16 * MIB)
        self.assertTrue(heartbeat_answered(server.addr, 80))


if __name__ == "__main__":
    harness.run_tests()
