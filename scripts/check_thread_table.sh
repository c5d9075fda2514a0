#!/usr/bin/env bash
# docs/ARCHITECTURE.md's thread table is the server's (server/ops/threads.cc,
# kThreads): the same threads, names, owners and stop order, row for row.
# Prints what differs; fails if anything does.
#   bash scripts/check_thread_table.sh
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 - <<'PY'
import re, sys
code = open("server/ops/threads.cc", encoding="utf-8").read()
rows = re.findall(r'\{R::k\w+,\s*"([^"]+)",\s*"([^"]+)",\s*"([^"]+)",\s*"([^"]+)"\}',
                  code)
doc = open("docs/ARCHITECTURE.md", encoding="utf-8").read()
section = doc.split("\n## Threads\n", 1)
if len(section) < 2:
    sys.exit("thread table: docs/ARCHITECTURE.md has no ## Threads section")
table = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| ([^|]+) \| ([^|]+) \|$",
                   section[1].split("\n## ", 1)[0], re.M)
want = [(n, o, s) for n, o, _, s in rows]
got = [(n, o, s.strip()) for n, o, _, s in table]
if not rows:
    sys.exit("thread table: no rows found in server/ops/threads.cc")
if want != got:
    for w in want:
        if w not in got:
            print(f"thread table: the doc lacks {w}", file=sys.stderr)
    for g in got:
        if g not in want:
            print(f"thread table: the doc has {g}, which the code does not",
                  file=sys.stderr)
    if sorted(want) == sorted(got):
        print("thread table: the rows are in another order than the code's",
              file=sys.stderr)
    sys.exit(1)
print(f"thread table: docs/ARCHITECTURE.md lists the {len(rows)} threads of "
      "server/ops/threads.cc, in their stop order")
PY
