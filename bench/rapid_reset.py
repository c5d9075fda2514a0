"""A rapid reset as fast as Python can write it: CALLS GetFlowState calls,
each a HEADERS frame then a RST_STREAM frame, written back to back by HOSTS
threads from 127.0.0.2, 127.0.0.3, ... (frames encoded once and repeated,
no HTTP/2 library in the loop; a new connection whenever the server closes
one). One second in, a flownode and a reader on 127.0.0.1 are timed.
Prints the flood's length, the server's RSS before, at its end and 15 s
after, the connections the server closed and the early resets it counted.
Loopback only.

  python3 bench/rapid_reset.py --binary=build/server/metasrv \\
      --pydir=build/gen_py --calls=200000 [--as_limit_mib=1536]

--as_limit_mib runs the metasrv under that address-space limit (prlimit):
a flood it cannot bound kills it there.

With --echo=build/bench/echo_server --api=callback|h2 the flood hits the
bare echo instead (gRPC 1.51's HTTP/2, or the metasrv's own nghttp2
transport),
and the honest call is a heartbeat to it.
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "wire"))


def frame(kind, flags, stream, payload):
    return (struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) +
            struct.pack(">I", stream) + payload)


def flood(port, authority, source, calls):
    import hpack
    encoder = hpack.Encoder()
    headers = [(":method", "POST"), (":scheme", "http"),
               (":path", "/metasrv.v1.FlowState/GetFlowState"),
               (":authority", authority), ("content-type", "application/grpc"),
               ("te", "trailers")]
    first = encoder.encode(headers)  # Enters the dynamic table...
    again = encoder.encode(headers)  # ...so that these bytes repeat.
    reset = struct.pack(">I", 8)  # CANCEL
    sent = 0
    while sent < calls:
        sock = None
        try:
            sock = socket.create_connection(("127.0.0.1", port),
                                            source_address=(source, 0))
            sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" +
                         frame(4, 0, 0, b""))
            sid = 1
            block = first
            while sent < calls:
                parts = []
                for _ in range(min(1000, calls - sent)):
                    parts.append(frame(1, 4, sid, block))  # END_HEADERS
                    parts.append(frame(3, 0, sid, reset))
                    block = again
                    sid += 2
                    sent += 1
                sock.sendall(b"".join(parts))
        except OSError:
            pass  # Closed by the server: a new connection.
        finally:
            if sock is not None:
                sock.close()


def start_flood(port, addr, args):
    """Starts the flood's threads, one per host; returns them and when they
    started, one second into the flood."""
    threads = [threading.Thread(target=flood, args=(
        port, addr, f"127.0.0.{2 + h}", args.calls // args.hosts))
        for h in range(args.hosts)]
    start = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(1.0)
    return threads, start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    parser.add_argument("--calls", type=int, default=200000)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--echo", default="")
    parser.add_argument("--api", default="h2")
    parser.add_argument("--as_limit_mib", type=int, default=0,
                        help="run the metasrv under this address-space limit")
    args = parser.parse_args()
    if args.echo:
        echo_main(args)
        return
    import harness
    harness.setup(args.binary, args.pydir)
    from attack_test import heartbeat_answered, one_flow_read
    wrapper = (["/usr/bin/prlimit", f"--as={args.as_limit_mib << 20}"]
               if args.as_limit_mib else [])
    server = harness.Server(metrics=True, wrapper=wrapper)
    try:
        idle = harness.rss_kib(server.proc.pid)
        threads, start = start_flood(server.port, server.addr, args)
        asked = time.monotonic()
        try:
            served = heartbeat_answered(server.addr, 9)
            one_flow_read(server.addr, 5)
        except (OSError, AssertionError) as error:  # Timed out, refused.
            served = f"no ({error!r})"
        honest = time.monotonic() - asked
        for t in threads:
            t.join()
        took = time.monotonic() - start
        end = harness.rss_kib(server.proc.pid)
        time.sleep(15)
        later = harness.rss_kib(server.proc.pid)
        closed = server.metric("metasrv_grpc_connections_closed_total",
                               'reason="rapid_reset"') or 0
        resets = server.metric("metasrv_calls_refused_total",
                               'reason="reset_early"') or 0
        print(f"{args.calls} calls from {args.hosts} hosts in {took:.1f} s; "
              f"RSS {idle // 1024} -> {end // 1024} -> {later // 1024} MiB "
              f"(15 s later); flownode served={served}, honest calls "
              f"{honest:.2f} s at {asked - start:.1f} s; {closed:.0f} "
              f"connections closed, {resets:.0f} early resets counted; "
              f"alive={server.proc.poll() is None}")
    finally:
        server.proc.kill()
        server.proc.wait()


def echo_main(args):
    import subprocess
    import harness
    harness.setup(args.binary, args.pydir)
    from attack_test import heartbeat_answered
    port = harness.free_port()
    proc = subprocess.Popen([args.echo, f"--bind_addr=127.0.0.1:{port}",
                             f"--api={args.api}", "--state_flows=10"])
    try:
        harness.wait_for(lambda: harness.accepts(port), what="the echo")
        addr = f"127.0.0.1:{port}"
        idle = harness.rss_kib(proc.pid)
        threads, start = start_flood(port, addr, args)
        asked = time.monotonic()
        try:
            served = heartbeat_answered(addr, 9)
        except (OSError, AssertionError) as error:
            served = f"no ({error!r})"
        honest = time.monotonic() - asked
        peak = idle
        while any(t.is_alive() for t in threads):
            peak = max(peak, harness.rss_kib(proc.pid))
            time.sleep(0.05)
        took = time.monotonic() - start
        end = harness.rss_kib(proc.pid)
        print(f"echo --api={args.api}: {args.calls} calls from {args.hosts} "
              f"hosts in {took:.1f} s; RSS {idle // 1024} -> peak "
              f"{peak // 1024} -> {end // 1024} MiB; heartbeat served={served} "
              f"in {honest:.2f} s; alive={proc.poll() is None}")
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
