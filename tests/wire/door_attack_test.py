"""Attacks on the door every call comes through (server/rpc/call_door.h),
each against the binary over raw HTTP/2, as an attacker on another host
would send them: the attacker connects from 127.0.0.2, honest clients from
127.0.0.1, so the server sees two peers.

  python3 door_attack_test.py --binary=build/server/metasrv --pydir=build/gen_py

Each attack is bounded in calls and time, runs on loopback only, and checks
what the door promises: the attacker is refused at once or ended within its
deadline, memory stays bounded, and honest clients are served meanwhile.
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from harness import Server, meta, parse, rss_kib, wait_for
import harness
import tonic_client
from attack_test import (GET_FLOW_STATE, HEARTBEAT, MIB, heartbeat_answered, load_flows,
                         one_flow_read)

ATTACKER = "127.0.0.2"
LEADER_CHANGE = "/metasrv.v1.Admin/LeaderChange"
RESOURCE_EXHAUSTED, PERMISSION_DENIED, UNAUTHENTICATED = 8, 7, 16


def pump_all(conns, seconds):
    """Reads whatever the server sends on `conns` for about `seconds`."""
    end = time.monotonic() + seconds
    for conn in conns:
        try:
            conn.pump(max(0.01, min(0.2, end - time.monotonic())))
        except socket.timeout:
            pass


def status_of(call):
    """A finished call's gRPC status code (-2: reset without a status)."""
    try:
        call.check_status()
        return 0
    except tonic_client.CallError as error:
        return error.code


class HalfOpenCallsTest(unittest.TestCase):
    """Calls opened with HEADERS only, no request, left waiting: unary reads
    and heartbeat streams."""

    def test_calls_are_bounded_shared_fairly_and_ended_at_their_deadline(self):
        # 64 MiB for gRPC: --max_calls 3,276 (20 KiB a call). With nobody
        # else wanting room one host may hold them all; a host under its
        # fair share that asks gets in by ending the attacker's idlest call.
        server = Server("--grpc_memory_limit=64MiB", "--request_timeout=3s",
                        metrics=True)
        self.addCleanup(server.stop)
        idle = rss_kib(server.proc.pid)
        conns = [tonic_client.Connection(server.addr, source=ATTACKER)
                 for _ in range(4)]
        for conn in conns:
            self.addCleanup(conn.close)
        opened = time.monotonic()
        # Unary reads on two connections, heartbeat streams on two: every
        # kind is charged alike.
        calls = [conn.open(GET_FLOW_STATE if i < 2 else HEARTBEAT)
                 for i, conn in enumerate(conns) for _ in range(900)]
        # Past the bound, each call is refused as soon as its HEADERS come:
        # RESOURCE_EXHAUSTED, naming the setting and the host's fair share.
        expected_refused = len(calls) - 3276

        def refused_all():
            pump_all(conns, 0.5)
            return sum(1 for c in calls if c.ended) >= expected_refused
        wait_for(refused_all, timeout=20, what="the calls past the bound refused")
        held = [c for c in calls if not c.ended]
        refused = [c for c in calls if c.ended]
        self.assertEqual(len(held), 3276)
        for call in refused:
            with self.assertRaises(tonic_client.CallError) as error:
                call.check_status()
            self.assertEqual(error.exception.code, RESOURCE_EXHAUSTED)
            self.assertIn("(--max_calls)", error.exception.message)
            self.assertIn("its fair share 3276", error.exception.message)
        # While the attacker holds every call, another host is served: a
        # flownode's heartbeat and a reader, each taking one of its idle
        # calls.
        self.assertTrue(heartbeat_answered(server.addr, 77))
        _, answer = one_flow_read(server.addr, 4_000_000)
        self.assertEqual(list(answer.state_sizes), [1])
        evicted = server.metric("metasrv_calls_refused_total",
                                'reason="evicted"')
        self.assertGreaterEqual(evicted, 1)
        pump_all(conns, 0.5)
        self.assertEqual(sum(1 for c in held if c.ended), evicted)
        peak = rss_kib(server.proc.pid)
        # Then the held calls' deadline: each is ended, and its memory freed.
        def all_ended():
            pump_all(conns, 0.5)
            return all(c.ended for c in calls)
        wait_for(all_ended, timeout=20, what="the half-open calls ended")
        took = time.monotonic() - opened
        print(f"\nhalf-open calls: 3,600 from one host, {len(refused)} refused "
              f"at once, {len(held)} held, {evicted:.0f} ended for another "
              f"host, the rest ended after {took:.1f} s; RSS "
              f"{idle // MIB} -> {peak // MIB} MiB", file=sys.stderr)
        self.assertGreaterEqual(took, 3.0)
        self.assertEqual(server.metric("metasrv_calls_refused_total",
                                       'reason="calls"'), len(refused))
        wait_for(lambda: server.metric("metasrv_calls_refused_total",
                                       'reason="request_timeout"')
                 == 3276 - evicted,
                 what="the other held calls' request timeouts counted")
        if not harness.SANITIZED:
            self.assertLess(peak, idle + 64 * MIB)
        self.assertIsNone(server.proc.poll())
        # The host's calls were given back: it may open new ones.
        conn = tonic_client.Connection(server.addr, source=ATTACKER)
        self.addCleanup(conn.close)
        answer = parse(meta.metasrv_pb2.GetFlowStateResponse,
                       conn.unary(GET_FLOW_STATE, meta.metasrv_pb2.GetFlowStateRequest(
                           flow_ids=[4_000_000])))
        self.assertEqual(list(answer.state_sizes), [1])


class UnreadRepliesTest(unittest.TestCase):
    """One host asks for 40 full reads with a zero window and reads none."""

    def test_one_host_holds_only_its_share_and_stalled_answers_end(self):
        # The default budget (128 MiB, 32 MiB a host); stalls cut at 2 s.
        server = Server("--reply_stall_limit=2s", metrics=True)
        self.addCleanup(server.stop)
        load_flows(server.addr, 3, 100_000)
        # It takes identity answers (as gRPC's own stacks do), so each is
        # the full 4.8 MiB: zstd ones are a tenth of it.
        attacker = tonic_client.Connection(server.addr, window=0, source=ATTACKER,
                                           accept="identity")
        self.addCleanup(attacker.close)
        calls = []
        for _ in range(40):
            call = attacker.open(GET_FLOW_STATE)
            call.send(meta.metasrv_pb2.GetFlowStateRequest(
                with_nodes=True).SerializeToString(), end=True)
            calls.append(call)

        def settled():
            pump_all([attacker], 0.5)
            return all(c.ended or c.headers is not None for c in calls)
        wait_for(settled, timeout=60, what="every unread read answered or refused")
        held = [c for c in calls if not c.ended]
        refused = [c for c in calls if c.ended]
        # A full answer is ~4.8 MiB: six fit in a host's 32 MiB share.
        self.assertLessEqual(len(held), 7)
        self.assertGreater(len(refused), 30)
        for call in refused:
            self.assertEqual(status_of(call), RESOURCE_EXHAUSTED)
        # Others' full reads go through while the attacker holds its share.
        start = time.monotonic()
        for _ in range(5):
            conn = tonic_client.Connection(server.addr)
            try:
                answer = parse(meta.metasrv_pb2.GetFlowStateResponse,
                               conn.unary(GET_FLOW_STATE,
                                          meta.metasrv_pb2.GetFlowStateRequest()))
            finally:
                conn.close()
            self.assertEqual(len(answer.flow_ids), 300_000)
        others = time.monotonic() - start
        # Left unread past the stall limit, the held answers are cancelled.
        def cancelled():
            pump_all([attacker], 0.5)
            return all(c.ended for c in calls)
        wait_for(cancelled, timeout=20, what="the unread answers cancelled")
        stalled = server.metric("metasrv_calls_refused_total", 'reason="reply_stalled"')
        print(f"\nunread replies: 40 full reads from one host, {len(held)} held, "
              f"{len(refused)} refused; 5 full reads by another host in "
              f"{others:.2f} s; {stalled:.0f} cancelled as stalled",
              file=sys.stderr)
        self.assertEqual(stalled, len(held))
        self.assertEqual(server.metric("metasrv_calls_refused_total",
                                       'reason="reply_share"'), len(refused))


def admin_status(addr, token, source=None):
    """A LeaderChange with `token` (None: no authorization); its code."""
    conn = tonic_client.Connection(addr, source=source)
    try:
        metadata = [] if token is None else [("authorization", f"Bearer {token}")]
        call = conn.open(LEADER_CHANGE, metadata)
        call.send(meta.metasrv_pb2.LeaderChangeRequest().SerializeToString(),
                  end=True)
        try:
            call.finish()
            return 0
        except tonic_client.CallError as error:
            return error.code
    finally:
        conn.close()


class AdminTokenTest(unittest.TestCase):
    """A short token, a token file caught half-written, and guessing."""

    def token_file(self, text):
        fd, path = tempfile.mkstemp(prefix="metasrv-token-")
        os.write(fd, text.encode())
        os.close(fd)
        self.addCleanup(os.unlink, path)
        return path

    def test_a_short_token_is_refused_at_start(self):
        path = self.token_file("x\n")
        run = subprocess.run([harness.BINARY, "--bind_addr=127.0.0.1:0",
                              "--metrics_addr=", f"--admin_token_file={path}"],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("1 bytes; at least 16", run.stderr)

    def test_a_half_written_token_file_keeps_the_old_token(self):
        good = "a" * 32
        path = self.token_file(good + "\n")
        server = Server(f"--admin_token_file={path}")
        self.addCleanup(server.stop)
        self.assertEqual(admin_status(server.addr, good), 0)
        with open(path, "w") as f:
            f.write("bb")  # What a writer has written so far.
        server.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "at least 16" in server.log_text(), what="the refusal logged")
        self.assertEqual(admin_status(server.addr, good), 0)
        self.assertEqual(admin_status(server.addr, "bb"), PERMISSION_DENIED)

    def test_guesses_wait_for_their_answers_and_the_right_token_always_works(self):
        token = "0123456789abcdef" * 2
        server = Server(f"--admin_token_file={self.token_file(token)}",
                        metrics=True)
        self.addCleanup(server.stop)

        def guess(conn, n):
            call = conn.open(LEADER_CHANGE,
                             [("authorization", f"Bearer guess{n:011d}")])
            call.send(meta.metasrv_pb2.LeaderChangeRequest().SerializeToString(),
                      end=True)
            return call

        # A neighbour on the admin's own address: 60 guesses at once.
        neighbour = tonic_client.Connection(server.addr)
        self.addCleanup(neighbour.close)
        guesses = [guess(neighbour, n) for n in range(60)]
        # Meanwhile the admin, from the same address, is checked at once.
        for _ in range(5):
            started = time.monotonic()
            self.assertEqual(admin_status(server.addr, token), 0)
            self.assertLess(time.monotonic() - started, 1.0)
        pump_all([neighbour], 2.0)
        answered = [c for c in guesses if c.ended]
        # Three free, then one after another, 1 s, 2 s, ... apart (the
        # admin's successes forget the host's failures: a few more).
        self.assertLessEqual(len(answered), 12)
        for call in answered:
            self.assertEqual(status_of(call), PERMISSION_DENIED)
        # 100 other hosts, one guess each at once: answered 20 a second in
        # all, whatever the hosts.
        many = [tonic_client.Connection(server.addr, source=f"127.0.1.{h}")
                for h in range(1, 101)]
        for conn in many:
            self.addCleanup(conn.close)
        spread = [guess(conn, 1000 + h) for h, conn in enumerate(many)]
        opened = time.monotonic()
        while time.monotonic() - opened < 6.0:
            pump_all(many, 0.05)
        took = time.monotonic() - opened
        rotated = sum(1 for c in spread if c.ended)
        print(f"\nadmin guessing: 60 at once beside the admin, {len(answered)} "
              f"answered in 2 s, the admin's 5 calls all served; 100 hosts at "
              f"once: {rotated} answered in {took:.1f} s", file=sys.stderr)
        self.assertLessEqual(rotated, int(20 * took) + 25)
        self.assertGreater(rotated, 0)
        self.assertEqual(admin_status(server.addr, token, source=ATTACKER), 0)
        wait_for(lambda: server.metric("metasrv_calls_refused_total",
                                       'reason="auth_backoff"') > 50,
                 what="late wrong answers counted")

    def test_held_guesses_never_keep_a_flownode_out(self):
        token = "0123456789abcdef" * 2
        server = Server(f"--admin_token_file={self.token_file(token)}",
                        "--max_calls=60", metrics=True)
        self.addCleanup(server.stop)
        conn = tonic_client.Connection(server.addr, source=ATTACKER)
        self.addCleanup(conn.close)

        def guess(n):
            call = conn.open(LEADER_CHANGE,
                             [("authorization", f"Bearer guess{n:011d}")])
            call.send(meta.metasrv_pb2.LeaderChangeRequest().SerializeToString(),
                      end=True)
            return call
        # Guesses from one host fill every call slot: more are refused at
        # the bound. Their wrong answers free slots on the host's schedule:
        # three at once, then 1 s, 2 s and 4 s apart. After the fifth the
        # next is 4 s away, so from then on only the refill below can take
        # a slot, and nothing can give one back for 4 s but an eviction.
        calls = [guess(n) for n in range(100)]

        def wrong_answers():
            return sum(1 for c in calls
                       if c.ended and status_of(c) == PERMISSION_DENIED)
        wait_for(lambda: (pump_all([conn], 0.05), wrong_answers())[1] >= 5,
                 what="five wrong answers")
        refused = server.metric("metasrv_calls_refused_total",
                                'reason="calls"')
        self.assertGreaterEqual(refused, 1)
        calls += [guess(n) for n in range(100, 110)]  # Refill what went.
        wait_for(lambda: (pump_all([conn], 0.05), server.metric(
            "metasrv_calls_refused_total", 'reason="calls"'))[1] > refused,
                 what="the call bound reached again")
        answered = wrong_answers()
        # A flownode from another host still gets in: a held guess, idle,
        # gives back its slot.
        self.assertTrue(heartbeat_answered(server.addr, 77))
        pump_all([conn], 0.05)
        self.assertEqual(wrong_answers(), answered)  # None went meanwhile.
        self.assertGreaterEqual(server.metric(
            "metasrv_calls_refused_total", 'reason="evicted"'), 1)
        self.assertEqual(admin_status(server.addr, token), 0)


if __name__ == "__main__":
    harness.run_tests()
