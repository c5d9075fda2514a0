"""Hardening round 7's floods, measured (docs/RELIABILITY.md).

  python3 bench/round7_floods.py --binary=build/server/metasrv \
      --pydir=build/gen_py [--seconds=60]

Three flownodes' 3,000 flows loaded; an honest frontend on 127.0.0.1 reads
a `Range` of `__flow/state` and a whole `GetFlowState` in turn, every
20 ms, first alone (the baseline), then beside each flood of
tests/wire/round7_test.py (dead reads, server resets) from 1 host on 1
connection, 1 host on 8 and 20 hosts. Prints one RESULT line each: the
attacker's calls sent a second, the server's CPU, the honest reads served
and their p50 and p99.
"""

import argparse
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "wire"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--pydir", required=True)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    import harness
    harness.setup(args.binary, args.pydir)
    import round7_test
    from attack_test import load_flows
    server = harness.Server(metrics=True)
    try:
        load_flows(server.addr, 3, 1000)
        reader = round7_test.HonestReader(server.addr)
        time.sleep(args.seconds)
        base = reader.end()
        print(f"RESULT baseline {args.seconds:g} s: honest reads "
              f"{base['reads']} served {base['served'] * 100:.1f} % p50 "
              f"{base['p50_ms']:.1f} ms p99 {base['p99_ms']:.1f} ms",
              file=sys.stderr)
        check = unittest.TestCase()
        for make, name in ((round7_test.dead_read, "dead reads"),
                           (round7_test.server_reset, "server resets")):
            for shape, sources in round7_test.SHAPES.items():
                round7_test.flood_figures(check, server, make,
                                          f"{name}, {shape}", sources,
                                          seconds=args.seconds)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
