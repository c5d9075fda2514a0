#!/usr/bin/env python3
"""BM_Merge of two builds of merge_bench, interleaved, so that a noisy machine
treats both alike. Prints, per cluster size, the median CPU ns per merge.

  python3 bench/merge_ab.py OLD_MERGE_BENCH NEW_MERGE_BENCH [ROUNDS]
"""
import re
import statistics
import subprocess
import sys

bins = {"old": sys.argv[1], "new": sys.argv[2]}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
res = {k: {} for k in bins}
for _ in range(rounds):
    for name, binary in bins.items():
        out = subprocess.run(
            [binary, "--benchmark_min_time=0.15", "--benchmark_filter=BM_Merge/"],
            capture_output=True, text=True, check=True).stdout
        for m in re.finditer(r"BM_Merge/(\d+)\s+(\d+) ns\s+(\d+) ns", out):
            res[name].setdefault(int(m.group(1)), []).append(int(m.group(3)))
for name in bins:
    print(name, {n: int(statistics.median(v)) for n, v in sorted(res[name].items())})
