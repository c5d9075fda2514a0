"""Fair shares (docs/RELIABILITY.md): a few hosts must never take a whole
bound. Each attack comes from several 127/8 addresses (loopback is all of
127.0.0.0/8: one machine can be many hosts) while honest clients on
127.0.0.1 must be served: a new flownode's handshake, a read, AskLeader and
a health check.

  python3 fair_share_test.py --binary=build/server/metasrv --pydir=build/gen_py
"""

import socket
import sys
import threading
import time
import unittest
import urllib.request

from harness import (Server, cpu_seconds, meta, parse, report, rss_kib,
                     wait_for)
import harness
import tonic_client
from attack_test import (GET_FLOW_STATE, HEARTBEAT, heartbeat_answered,
                         load_flows, one_flow_read)
from cadence_test import Node, run, settle
from door_attack_test import status_of

ASK_LEADER = "/greptime.v1.meta.Heartbeat/AskLeader"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
HEALTH_WATCH = "/grpc.health.v1.Health/Watch"
RESOURCE_EXHAUSTED, UNIMPLEMENTED, DEADLINE_EXCEEDED = 8, 12, 4
FLOWNODE = 2


def attackers(n, base=2):
    """`n` loopback addresses other than 127.0.0.1."""
    return [f"127.0.{base + i // 250}.{2 + i % 250}" for i in range(n)]


def pump_until(conns, seconds, done=lambda: False):
    """Reads what the server sends on `conns` for `seconds` or until done."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and not done():
        for conn in conns:
            try:
                conn.pump(0.01)
            except socket.timeout:
                pass


def honest_calls_served(addr):
    """A new flownode's handshake, a one-flow read, AskLeader and a health
    check from 127.0.0.1; the seconds they took together."""
    start = time.monotonic()
    assert heartbeat_answered(addr, 9001), "a new flownode was refused"
    _, answer = one_flow_read(addr, 4_000_000)
    assert list(answer.state_sizes) == [1], answer
    conn = tonic_client.Connection(addr)
    try:
        leader = parse(meta.heartbeat_pb2.AskLeaderResponse,
                       conn.unary(ASK_LEADER, meta.heartbeat_pb2.AskLeaderRequest()))
        assert leader.leader.addr == addr, leader
        call = conn.open(HEALTH_CHECK)
        call.send(b"", end=True)  # HealthCheckRequest{service: ""}
        assert call.recv() == b"\x08\x01", "health is not SERVING"
        call.finish()
    finally:
        conn.close()
    return time.monotonic() - start


class RapidResetTest(unittest.TestCase):
    """Attack 1: HEADERS then RST_STREAM, back to back, from four hosts."""

    def flood(self, addr, source, calls, closed):
        """Sends `calls` HEADERS+RST_STREAM pairs from `source`, opening a
        new connection whenever the server closes one."""
        sent = 0
        while sent < calls:
            try:
                conn = tonic_client.Connection(addr, source=source)
            except OSError:
                continue
            try:
                while sent < calls:
                    for _ in range(200):
                        sid = conn.h2.get_next_available_stream_id()
                        conn.h2.send_headers(sid, [
                            (":method", "POST"), (":scheme", "http"),
                            (":path", GET_FLOW_STATE), (":authority", addr),
                            ("content-type", "application/grpc"),
                            ("te", "trailers")])
                        conn.h2.reset_stream(sid)
                        sent += 1
                    conn.flush()
            except (OSError, Exception):  # Closed by the server: reconnect.
                closed[0] += 1
            finally:
                try:
                    conn.sock.close()
                except OSError:
                    pass

    @staticmethod
    def served(addr):
        try:
            honest_calls_served(addr)
            return True
        except (tonic_client.CallError, AssertionError, OSError):
            return False

    def test_connections_that_reset_too_fast_are_closed(self):
        # Under ASan the server reads the flood about ten times slower, so a
        # connection's resets arrive below the default 2000 a second: the
        # limit is scaled down with it (CI saw 0 connections closed at
        # ~1000 resets a second per host).
        extra = ["--max_early_resets=100"] if harness.SANITIZED else []
        server = Server(*extra, metrics=True)
        self.addCleanup(server.stop)
        idle = rss_kib(server.proc.pid)
        closed = [0]
        threads = [threading.Thread(target=self.flood,
                                    args=(server.addr, s, 50_000, closed))
                   for s in attackers(4)]
        started = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(1.0)  # The flood is on.
        # The honest calls are asked until they are served, with a
        # deadline: nothing is queued before the door (the transport hands
        # each stream over at its HEADERS), and nghttp2 closes a connection
        # that resets faster than its bucket allows.
        asked = time.monotonic()
        wait_for(lambda: self.served(server.addr), timeout=120,
                 what="honest calls served during the flood")
        took = time.monotonic() - asked
        served_at = time.monotonic() - started
        for t in threads:
            t.join()
        flood = time.monotonic() - started
        peak = rss_kib(server.proc.pid)
        resets = server.metric("metasrv_calls_refused_total",
                               'reason="reset_early"') or 0
        closed_conns = server.metric(
            "metasrv_grpc_connections_closed_total",
            'reason="rapid_reset"') or 0
        print(f"\nrapid reset: 200,000 calls from 4 hosts in {flood:.1f} s; "
              f"{closed_conns:.0f} connections closed by the server, "
              f"{resets:.0f} early resets counted; honest calls served "
              f"{took:.2f} s after they were first asked, {served_at:.1f} s "
              f"after the flood began; RSS {idle // 1024} -> {peak // 1024} "
              f"MiB", file=sys.stderr)
        # The rule acts: connections that reset too fast are closed, and
        # the count of early resets shows what the door saw.
        self.assertGreaterEqual(closed_conns, 1)
        self.assertGreater(resets, 0)
        self.assertIsNone(server.proc.poll())
        # Honest calls are served during the flood, and memory stays flat
        # (gRPC 1.51's transport: 11.1 s and RSS 23 -> 1,346 MiB on a bad
        # run). ASan reads the flood about ten times slower.
        self.assertLess(took, 15.0 if harness.SANITIZED else 3.0)
        self.assertLess(peak - idle, (512 if harness.SANITIZED else 128) * 1024)
        # After the flood too, a new flownode is answered by a deadline.
        after = time.monotonic()
        wait_for(lambda: heartbeat_answered(server.addr, 9002), timeout=120,
                 what="a new flownode answered after the flood")
        print(f"rapid reset: a new flownode answered "
              f"{time.monotonic() - after:.2f} s after the flood ended",
              file=sys.stderr)


class SilentStreamsTest(unittest.TestCase):
    """Attack 2: four hosts hold every call slot with heartbeat streams that
    send a handshake and then stay silent."""

    def test_honest_calls_get_in_and_silent_streams_end(self):
        server = Server("--max_calls=400", "--heartbeat_interval=1s",
                        "--retry_interval=1s", metrics=True)
        self.addCleanup(server.stop)
        conns, streams = [], []
        for h, source in enumerate(attackers(4)):
            conn = tonic_client.Connection(server.addr, source=source)
            self.addCleanup(conn.close)
            conns.append(conn)
            for i in range(100):
                call = conn.open(HEARTBEAT)
                call.send(report(10_000 + h * 100 + i, []).SerializeToString())
                streams.append(call)
        for call in streams:
            call.recv()  # The handshake's answer: the stream is open.
        # Every slot is held: the bound is 400.
        self.assertEqual(server.metric("metasrv_calls_refused_total",
                                       'reason="calls"'), 0)
        # Just after its handshake a stream is live (it reported within two
        # of its 1 s intervals), as an honest flownode's: none is ended for
        # another host until then; after that, the honest calls get in.
        asked = time.monotonic()
        while True:
            try:
                took = honest_calls_served(server.addr)
                break
            except (AssertionError, tonic_client.CallError):
                self.assertLess(time.monotonic() - asked, 10)
                pump_until(conns, 0.2)
        took = time.monotonic() - asked
        self.assertLess(took, 6)
        evicted = server.metric("metasrv_calls_refused_total",
                                'reason="evicted"')
        self.assertGreaterEqual(evicted, 1)
        # 3 x 1 s + 1 s of silence: a dead flownode's stream, ended.
        opened = time.monotonic()
        pump_until(conns, 15, lambda: all(c.ended for c in streams))
        ended_after = time.monotonic() - opened
        self.assertTrue(all(c.ended for c in streams))
        codes = {status_of(c) for c in streams}
        self.assertLessEqual(codes, {DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED})
        silent = server.metric("metasrv_calls_refused_total", 'reason="silent"')
        print(f"\nsilent streams: 400 from 4 hosts held every call; honest "
              f"flownode, read, AskLeader and health served {took:.2f} s after "
              f"first asked "
              f"({evicted:.0f} idle streams ended for them); {silent:.0f} "
              f"ended as silent {ended_after:.1f} s later", file=sys.stderr)
        self.assertGreaterEqual(silent + evicted, 400)


class PinnedRepliesTest(unittest.TestCase):
    """Attack 3: five hosts on zero-window connections ask for answers
    smaller than the stall watch's 64 KiB until each host's share refuses."""

    def test_the_budget_is_shared_and_honest_reads_are_served(self):
        server = Server("--max_reply_bytes_in_flight=16MiB", metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 2, 5_000)
        ids = list(range(0, 4096, 2))  # 2,048 flows: under the 64 KiB watch.
        probe = tonic_client.Connection(server.addr)
        size = len(probe.unary(GET_FLOW_STATE, meta.metasrv_pb2.GetFlowStateRequest(
            flow_ids=ids)))
        probe.close()
        self.assertLess(size, 64 << 10)
        conns, calls = [], []
        for source in attackers(5):
            conn = tonic_client.Connection(server.addr, window=0, source=source)
            self.addCleanup(conn.close)
            conns.append(conn)
        for _ in range(240):
            for conn in conns:
                call = conn.open(GET_FLOW_STATE)
                call.send(meta.metasrv_pb2.GetFlowStateRequest(
                    flow_ids=ids).SerializeToString(), end=True)
                calls.append(call)
        pump_until(conns, 20, lambda: all(
            c.ended or c.headers is not None for c in calls))
        pump_until(conns, 2)  # The resets of the answers ended for others.
        held = sum(1 for c in calls if not c.ended)
        # The budget (16 MiB) bounds what they hold, past it by at most the
        # 64 answers being ended at once.
        self.assertLessEqual(held * size, (16 << 20) + 64 * size)
        # Honest clients: a full read, a one-flow read, AskLeader and health.
        start = time.monotonic()
        conn = tonic_client.Connection(server.addr)
        self.addCleanup(conn.close)
        full = parse(meta.metasrv_pb2.GetFlowStateResponse,
                     conn.unary(GET_FLOW_STATE,
                                meta.metasrv_pb2.GetFlowStateRequest()))
        self.assertEqual(len(full.flow_ids), 10_000)
        took = honest_calls_served(server.addr) + time.monotonic() - start
        evicted = server.metric("metasrv_calls_refused_total",
                                'reason="evicted"')
        print(f"\npinned replies: {held} answers of {size} B held unread by 5 "
              f"hosts; an honest full read, one-flow read, AskLeader and "
              f"health in {took:.2f} s ({evicted:.0f} unread answers ended "
              f"for them)", file=sys.stderr)
        if not harness.SANITIZED:  # Under ASan the budget may not fill.
            self.assertGreaterEqual(evicted, 1)


class ZeroWindowHealthFloodTest(unittest.TestCase):
    """Issue 58's first lock-out: one host's connections announce a stream
    window of 0 (and answer pings), then fill every call slot with health
    checks whose answers can never be written. On 1a09b28 the calls were
    held for the whole run and every honest call of every kind was refused.
    Every write has a deadline now: an answer not written within
    --reply_stall_limit ends its call, which frees its slot."""

    def test_unwritable_answers_end_and_honest_calls_get_in(self):
        server = Server("--max_calls=2000", "--reply_stall_limit=2s",
                        metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 1, 1)
        conns, calls = [], []
        for source in attackers(3):
            for _ in range(13):
                conn = tonic_client.Connection(server.addr, encoding="identity",
                                               window=0, source=source)
                conns.append(conn)
                for _ in range(60):  # 39 x 60 = 2,340: past --max_calls.
                    call = conn.open(HEALTH_CHECK)
                    call.send(b"", end=True)
                    calls.append(call)
        self.addCleanup(lambda: [c.sock.close() for c in conns])
        stop = threading.Event()

        def answer_pings():  # And read what little the server may send.
            while not stop.is_set():
                pump_until(conns, 0.2)

        pumper = threading.Thread(target=answer_pings)
        pumper.start()
        try:
            started = time.monotonic()
            # Honest calls of every kind get in: the attackers' hosts are
            # over their share, and a call whose answer waits is attached
            # (evictable) once calls reach half of --max_calls; in any case
            # the stall limit ends the unwritable ones.
            wait_for(lambda: RapidResetTest.served(server.addr), timeout=20,
                     what="honest calls served beside the held health checks")
            took = time.monotonic() - started
            self.assertEqual(urllib.request.urlopen(
                f"http://127.0.0.1:{server.metrics_port}/health",
                timeout=5).status, 200)
            # The unwritable answers were ended at their stall limit.
            wait_for(lambda: (server.metric("metasrv_calls_refused_total",
                                            'reason="reply_stalled"') or 0) > 0,
                     timeout=20, what="answers abandoned at the stall limit")
            stalled = server.metric("metasrv_calls_refused_total",
                                    'reason="reply_stalled"')
            evicted = server.metric("metasrv_calls_refused_total",
                                    'reason="evicted"') or 0
        finally:
            stop.set()
            pumper.join()
        print(f"\nzero-window health flood: {len(calls)} calls on "
              f"{len(conns)} connections from 3 hosts; honest calls served "
              f"{took:.2f} s in; {stalled:.0f} answers abandoned at the stall "
              f"limit, {evicted:.0f} calls evicted", file=sys.stderr)
        self.assertIsNone(server.proc.poll())
        # Served by evicting the attackers' calls whose answers wait, well
        # before any stall limit (1a09b28: never, with 0 evictions).
        self.assertGreater(evicted, 0)
        self.assertLess(took, 10.0 if harness.SANITIZED else 1.5)


class MadeUpNodesTest(unittest.TestCase):
    """Attack 6 (issue 59): made-up flownode ids, a one-flow report each on
    a stream whose window stays 0, fill --max_nodes beside an honest
    flownode that restarts. A node is live by its reports: the restarting
    one keeps its flows; and node slots are shared by host (round 7): a
    new flownode of a host under its share takes a made-up id's place at
    once."""

    def test_made_up_ids_never_evict_a_restarting_flownode(self):
        server = Server("--max_nodes=50", "--heartbeat_interval=500ms",
                        "--retry_interval=500ms", metrics=True)
        self.addCleanup(server.stop)
        honest = Node(server.addr, FLOWNODE, 7)
        run([honest], 0.6)
        conn = tonic_client.Connection(server.addr, source="127.0.0.2",
                                       window=0)
        self.addCleanup(conn.close)
        for node in range(100, 149):  # 49 made-up ids: the bound is full.
            call = conn.open(HEARTBEAT)
            call.send(report(node, [(node, 1, 1)]).SerializeToString())
        wait_for(lambda: list(one_flow_read(server.addr, 148)[1].flow_ids)
                 == [148], what="the made-up reports")
        # The honest flownode restarts: its stream closed, back 1 s later,
        # within its own limit (2 s).
        honest.conn.close()
        time.sleep(1.0)
        honest = Node(server.addr, FLOWNODE, 7)
        self.assertEqual(list(one_flow_read(server.addr, 70)[1].state_sizes),
                         [100])
        self.assertEqual(server.metric("metasrv_nodes_evicted_total"), 0)
        # A new flownode while the made-up ids are live (hardening round
        # 7: node slots are shared by host): its host holds 1 of its share
        # of 25, the attacker's 49; it takes the place of the made-up id
        # that reported first, at once. The honest one, at its cadence,
        # stays. (Before, it was refused until the made-up ids went silent.)
        newcomer = Node(server.addr, FLOWNODE, 8)
        run([honest, newcomer], 0.6)
        self.assertEqual(server.metric("metasrv_nodes_evicted_total"), 1)
        self.assertEqual(list(one_flow_read(server.addr, 100)[1].flow_ids), [])
        # The attacker, over its share, cannot take a place back.
        call = conn.open(HEARTBEAT)
        call.send(report(199, [(199, 1, 1)]).SerializeToString())
        wait_for(lambda: call.ended or conn.pump(0.1) or call.ended,
                 what="the made-up id refused")
        self.assertEqual(list(one_flow_read(server.addr, 199)[1].flow_ids), [])
        for flow in (70, 71, 72, 80, 81, 82):
            self.assertEqual(
                list(one_flow_read(server.addr, flow)[1].state_sizes), [100],
                flow)
        self.assertIsNone(honest.ended_at)


class NatTest(unittest.TestCase):
    """Issue 59: 20 flownodes behind one address (a NAT), each on its own
    stream at its cadence, beside an attacker holding 4 calls on each of 45
    addresses and asking for more from fresh ones: live heartbeat streams
    are never ended to make room for another host."""

    def test_live_flownodes_behind_one_address_are_never_evicted(self):
        server = Server("--max_calls=200", "--heartbeat_interval=1s",
                        "--retry_interval=1s", metrics=True)
        self.addCleanup(server.stop)
        nat = [Node(server.addr, FLOWNODE, 300 + i) for i in range(20)]
        run(nat, 0.5)
        conns = []
        def watch(source):
            conn = tonic_client.Connection(server.addr, source=source)
            self.addCleanup(conn.close)
            conns.append(conn)
            call = conn.open(HEALTH_WATCH)
            call.send(b"", end=True)
            return call
        held = [watch(src) for src in attackers(45) for _ in range(4)]
        run(nat, 0.5)
        # One more call at a time from fresh addresses, every 0.1 s.
        asked = []
        for src in attackers(30, base=40):
            run(nat, 0.1)
            asked.append(watch(src))
        run(nat, 2.0)
        settle(nat)  # The last answers.
        pump_until(conns, 0.5)
        for node in nat:
            self.assertIsNone(node.ended_at, (node.member, node.status))
            self.assertEqual(node.answered, node.sent, node.member)
        evicted = server.metric("metasrv_calls_refused_total",
                                'reason="evicted"')
        refused = server.metric("metasrv_calls_refused_total",
                                'reason="calls"')
        print(f"\nNAT: 20 flownodes on one address kept their streams "
              f"({sum(n.sent for n in nat)} heartbeats answered); of the "
              f"attacker's {len(asked)} asks, {refused:.0f} refused, "
              f"{evicted:.0f} calls ended for them", file=sys.stderr)
        self.assertGreaterEqual(refused + evicted, 1)
        self.assertEqual(len(held), 180)


class ScrapeFloodTest(unittest.TestCase):
    """Attack 8: keep-alive scrapers of /metrics, as fast as they can."""

    def test_a_flood_of_scrapes_costs_a_small_part_of_a_core(self):
        server = Server(metrics=True, fresh_scrapes=False)
        self.addCleanup(server.stop)
        load_flows(server.addr, 3, 100_000)
        url = f"http://127.0.0.1:{server.metrics_port}/metrics"
        started = time.monotonic()
        urllib.request.urlopen(url, timeout=10).read()
        one = time.monotonic() - started
        stop = threading.Event()
        scrapes = [0]

        def scrape():
            while not stop.is_set():
                urllib.request.urlopen(url, timeout=10).read()
                scrapes[0] += 1
        threads = [threading.Thread(target=scrape) for _ in range(4)]
        before = cpu_seconds(server.proc.pid)
        window = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(3.0)  # The measured window: scrapes run meanwhile.
        stop.set()
        for t in threads:
            t.join()
        spent = cpu_seconds(server.proc.pid) - before
        elapsed = time.monotonic() - window
        print(f"\nscrape flood: one scrape of 300,000 flows {one * 1000:.0f} "
              f"ms; 4 scrapers, {scrapes[0]} scrapes in {elapsed:.1f} s, "
              f"server CPU {spent / elapsed:.2f} of a core", file=sys.stderr)
        self.assertGreater(scrapes[0], 10)
        # Every scrape built afresh, the same flood takes a whole core (1.00
        # measured). With reuse, 0.24 to 0.27 on a quiet machine, and 0.45
        # once in a clean-clone .ci/run (the bound was 0.35 then).
        if not harness.SANITIZED:
            self.assertLess(spent / elapsed, 0.6)


if __name__ == "__main__":
    harness.run_tests()
