"""Half-open calls against the binary with its default settings: CALLS
GetFlowState calls opened with HEADERS only (1,000 per connection) from one
host, 127.0.0.2, left waiting. Prints how many the door refused at once, how
many it held, the server's RSS before, at the peak and after their
deadline, and whether a flownode and a reader on 127.0.0.1 were served
meanwhile. Loopback only; bounded in calls and time.

  python3 bench/half_open.py --binary=build/server/metasrv --pydir=build/gen_py \\
      --calls=90000
"""

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "wire"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    parser.add_argument("--calls", type=int, default=90000)
    parser.add_argument("--extra", default="", help="more server flags")
    args = parser.parse_args()
    import harness
    harness.setup(args.binary, args.pydir)
    import tonic_client
    from attack_test import GET_FLOW_STATE, heartbeat_answered, one_flow_read
    from door_attack_test import status_of
    server = harness.Server(*[f for f in args.extra.split() if f])
    try:
        idle = harness.rss_kib(server.proc.pid)
        conns, calls = [], []
        start = time.monotonic()
        for _ in range((args.calls + 999) // 1000):
            conn = tonic_client.Connection(server.addr, source="127.0.0.2")
            conns.append(conn)
            for _ in range(min(1000, args.calls - len(calls))):
                calls.append(conn.open(GET_FLOW_STATE))
            for c in conns[-1:]:
                try:
                    c.pump(0.05)
                except socket.timeout:
                    pass
        sent = time.monotonic() - start
        deadline = time.monotonic() + 60
        settled = 0
        while time.monotonic() < deadline:
            for conn in conns:
                try:
                    conn.pump(0.01)
                except socket.timeout:
                    pass
            ended = sum(1 for c in calls if c.ended)
            if ended == settled and time.monotonic() - start > sent + 0.5:
                break
            settled = ended
        held = sum(1 for c in calls if not c.ended)
        peak = harness.rss_kib(server.proc.pid)
        served = heartbeat_answered(server.addr, 77)
        took, _ = one_flow_read(server.addr, 4_000_000)
        alive = server.proc.poll() is None
        # Their deadline (--request_timeout, 10 s by default) ends the rest.
        end_by = time.monotonic() + 30
        while time.monotonic() < end_by and any(not c.ended for c in calls):
            for conn in conns:
                try:
                    conn.pump(0.01)
                except socket.timeout:
                    pass
        after = harness.rss_kib(server.proc.pid)
        left = sum(1 for c in calls if not c.ended)
        codes = [status_of(c) for c in calls if c.ended]
        refused = sum(1 for k in codes if k == 8)
        timed_out = len(codes) - refused
        print(f"HALF_OPEN calls={len(calls)} sent_s={sent:.1f} refused={refused} "
              f"ended_at_deadline={timed_out} rss_idle_mib={idle // 1024} rss_settled_mib={peak // 1024} "
              f"rss_after_deadline_mib={after // 1024} left_after_deadline={left} "
              f"flownode_served={served} reader_s={took:.3f} server_alive={alive}")
        for conn in conns:
            conn.sock.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
