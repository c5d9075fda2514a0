"""Whether to compress answers, measured (bench/RESULTS.md, issue 69).

  python3 bench/compressed_answers.py --binary=build/server/metasrv \
      --pydir=build/gen_py [--flows=100000] [--repeat=20] [--seconds=10]

Upstream's metasrv (tonic with send_compressed) compresses an answer when
the client lists zstd or gzip, as GreptimeDB's does. Here: 100,000 flows
reported by three flownodes; a whole `GetFlowState` and a `Cluster.Range` of
`__flow/state` read as they are sent today (identity), then the same bytes
compressed as a server would (zstd level 1 and 3, gzip level 1 and 6, the
same C libraries through Python's bindings): bytes on the wire, the CPU of
one compression (median of --repeat), and how long that answer takes to
read on loopback uncompressed (median), beside which that CPU would be
spent on every state change (answers are cached per state).

Then the server as shipped: a reader (its own process) reads the answer back
to back for --seconds while a flownode (another process) changes the state
every 100 ms and times its heartbeats; once with a client that takes zstd
(tonic's grpc-accept-encoding) and once with one that takes identity only.
Reported: bytes per answer on the wire, reads per second, the server's CPU
per read (/proc utime + stime over the run) and the heartbeat p99.
"""

import argparse
import os
import statistics
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "wire"))


def cpu_ms(fn, repeat):
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        runs.append((time.process_time() - start) * 1000)
    return statistics.median(runs)


def heartbeats(setup, addr, seconds, out):
    """A flownode changing one flow every 100 ms; `out` gets its round trips
    in ms. `setup`: harness.setup's arguments (a spawned process)."""
    import harness
    import tonic_client
    harness.setup(*setup)
    from harness import meta, parse, report
    conn = tonic_client.Connection(addr)
    call = conn.open("/greptime.v1.meta.Heartbeat/Heartbeat")
    times = []
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
        start = time.monotonic()
        call.send(report(50, [(n % 1000, 10**9 + n, n)]).SerializeToString())
        parse(meta.heartbeat_pb2.HeartbeatResponse, call.recv())
        times.append((time.monotonic() - start) * 1000)
        time.sleep(max(0.0, 0.1 - (time.monotonic() - start)))
    conn.close()
    out.put(times)


def reads(setup, addr, path, request_bytes, accept, seconds, out):
    """Reads `path` back to back; `out` gets (reads, wire bytes of one)."""
    import tonic_client
    conn = tonic_client.Connection(addr, accept=accept)
    n, size = 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        call = conn.open(path)
        call.send(request_bytes, end=True)
        call.recv()
        call.finish()
        n += 1
        size = call.sizes[0]
    conn.close()
    out.put((n, size))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def shipped(setup, server, reads_of, seconds):
    """The server as shipped, per answer and client: see the docstring."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    for name, (path, request) in reads_of.items():
        for accept in ("identity", "gzip,zstd,identity"):
            hb, rd = ctx.Queue(), ctx.Queue()
            procs = [ctx.Process(target=heartbeats,
                                 args=(setup, server.addr, seconds, hb)),
                     ctx.Process(target=reads,
                                 args=(setup, server.addr, path,
                                       request.SerializeToString(), accept,
                                       seconds, rd))]
            before = cpu_seconds(server.proc.pid)
            for p in procs:
                p.start()
            times, (n, size) = hb.get(), rd.get()
            for p in procs:
                p.join()
            cpu = cpu_seconds(server.proc.pid) - before
            p99 = statistics.quantiles(times, n=100)[98]
            print(f"RESULT shipped {name}, client accepts {accept}: "
                  f"{size:,} bytes an answer, {n / seconds:.1f} reads/s, "
                  f"{cpu * 1000 / max(n, 1):.2f} ms server CPU a read, "
                  f"heartbeat p99 {p99:.2f} ms ({len(times)} beats)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    parser.add_argument("--flows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    import harness
    import tonic_client
    import zstandard
    from attack_test import load_flows
    harness.setup(args.binary, args.pydir)
    meta = harness.meta
    server = harness.Server()
    try:
        load_flows(server.addr, 3, args.flows // 3)
        conn = tonic_client.Connection(server.addr, encoding="identity",
                                      accept="identity")
        reads = {
            "GetFlowState": ("/metasrv.v1.FlowState/GetFlowState",
                             meta.metasrv_pb2.GetFlowStateRequest()),
            "Range __flow/state": ("/greptime.v1.meta.Cluster/Range",
                                   meta.cluster_pb2.RangeRequest(
                                       key=b"__flow/state")),
        }
        for name, (path, request) in reads.items():
            answer = conn.unary(path, request)
            walls = []
            for _ in range(args.repeat):
                start = time.monotonic()
                conn.unary(path, request)
                walls.append((time.monotonic() - start) * 1000)
            print(f"RESULT {name} {args.flows} flows: {len(answer):,} bytes "
                  f"plain, read in {statistics.median(walls):.1f} ms on "
                  f"loopback (median)")
            codecs = {
                "zstd-1": zstandard.ZstdCompressor(level=1).compress,
                "zstd-3": zstandard.ZstdCompressor(level=3).compress,
                "gzip-1": lambda b: zlib.compress(b, 1),
                "gzip-6": lambda b: zlib.compress(b, 6),
            }
            for codec, compress in codecs.items():
                size = len(compress(answer))
                ms = cpu_ms(lambda: compress(answer), args.repeat)
                print(f"RESULT   {codec}: {size:,} bytes "
                      f"({len(answer) / size:.1f}x smaller), "
                      f"{ms:.1f} ms of CPU to compress (median)")
        conn.close()
        shipped((args.binary, args.pydir), server, reads, args.seconds)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
