"""Whether to compress answers, measured (bench/RESULTS.md, issue 69).

  python3 bench/compressed_answers.py --binary=build/server/metasrv \
      --pydir=build/gen_py [--flows=100000] [--repeat=20]

Upstream's metasrv (tonic with send_compressed) compresses an answer when
the client lists zstd or gzip, as GreptimeDB's does. Here: 100,000 flows
reported by three flownodes; a whole `GetFlowState` and a `Cluster.Range` of
`__flow/state` read as they are sent today (identity), then the same bytes
compressed as a server would (zstd level 1 and 3, gzip level 1 and 6, the
same C libraries through Python's bindings): bytes on the wire, the CPU of
one compression (median of --repeat), and how long that answer takes to
read on loopback uncompressed (median), beside which that CPU would be
spent on every state change (answers are cached per state).
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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    parser.add_argument("--flows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
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
        conn = tonic_client.Connection(server.addr, encoding="identity")
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
    finally:
        server.stop()


if __name__ == "__main__":
    main()
