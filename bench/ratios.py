#!/usr/bin/env python3
"""Median over rounds of per-round ratios between two targets of a bench CSV.

ratios.py CSV GROUP_COLUMNS VALUE_COLUMNS A:B [A:B ...]
  GROUP_COLUMNS  comma-separated columns naming one round of one scenario
                 (e.g. "rep" or "rep,streams"); the last-but-"rep" columns
                 are printed as the scenario.
  VALUE_COLUMNS  comma-separated columns to divide (A's value / B's value).
Prints one line per scenario and pair: the per-round ratios and their median.
"""
import csv
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
group = sys.argv[2].split(",")
values = sys.argv[3].split(",")
pairs = [p.split(":") for p in sys.argv[4:]]
scenario_cols = [c for c in group if c != "rep"]
rounds = {}
for r in rows:
    rounds.setdefault(tuple(r[c] for c in group), {})[r["target"]] = r
scenarios = sorted({tuple(r[c] for c in scenario_cols) for r in rows},
                   key=lambda s: [int(x) if x.isdigit() else x for x in s])
print(",".join(scenario_cols + ["pair"] + [f"{v}_ratio_median" for v in values]
               + [f"{v}_ratios" for v in values]))
for scenario in scenarios:
    for a, b in pairs:
        per = {v: [] for v in values}
        for key, targets in sorted(rounds.items()):
            if tuple(key[group.index(c)] for c in scenario_cols) != scenario:
                continue
            if a not in targets or b not in targets:
                continue
            for v in values:
                per[v].append(float(targets[a][v]) / max(1e-9, float(targets[b][v])))
        if not per[values[0]]:
            continue
        medians = [f"{statistics.median(per[v]):.3f}" for v in values]
        spreads = [" ".join(f"{x:.2f}" for x in per[v]) for v in values]
        print(",".join(list(scenario) + [f"{a}/{b}"] + medians + spreads))
