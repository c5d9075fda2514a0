#!/usr/bin/env bash
# Soak test against the real binary on loopback: 1,000 heartbeat streams (one
# report per second each), a GetFlowState and a Cluster.Range reader, 20
# WatchFlowState watchers, and a LeaderChange every 3 s, for DURATION seconds (default 600). Samples the
# server's RSS every 5 s into ${OUT:-/tmp}/soak_rss.csv.
# Fails if any call errs, the server logs an error, or RSS grows by more than
# 20% (plus 16 MiB of slack) between the end of warm-up and the end.
#   scripts/soak.sh 600
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-600}
OUT=${OUT:-/tmp}
B=${BUILD_DIR:-build}
PORT=${PORT:-39300}
[[ -x $B/bench/loadgen && -x $B/cli/metasrvctl ]] || { echo "build first" >&2; exit 2; }

log=$(mktemp /tmp/soak-server-XXXXXX.log)
"$B/server/metasrv" --bind_addr=127.0.0.1:$PORT --metrics_addr= 2>"$log" &
srv=$!
lg=""
cleanup() { kill "$srv" ${lg:+"$lg"} 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done

result=$(mktemp /tmp/soak-result-XXXXXX)
"$B/bench/loadgen" --target=127.0.0.1:$PORT --mode=open --interval=1s --streams=1000 \
  --flows=10 --channels=8 --duration="${DURATION}s" --warmup=5s \
  --state_readers=1 --range_readers=1 --reader_interval=500ms --watchers=20 >"$result" &
lg=$!

echo "seconds,rss_kib" >"$OUT/soak_rss.csv"
resets=0
start=$(date +%s)
while kill -0 "$lg" 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  if (( now % 5 == 0 )); then
    echo "$now,$(awk '/VmRSS/ {print $2}' /proc/$srv/status)" >>"$OUT/soak_rss.csv"
  fi
  if (( now % 3 == 0 )); then
    "$B/cli/metasrvctl" --addr=127.0.0.1:$PORT reset >/dev/null
    resets=$((resets + 1))
  fi
  sleep 1
done
wait "$lg" || { echo "soak: the load generator reported errors" >&2; cat "$result" >&2; exit 1; }
lg=""
sed -n 's/^RESULT //p' "$result"
echo "leader changes: $resets"
if grep -q "\[error\]" "$log"; then
  echo "soak: the server logged errors:" >&2; grep "\[error\]" "$log" >&2; exit 1
fi
python3 - "$OUT/soak_rss.csv" "$DURATION" <<'PY'
import csv, sys
rows = [(int(r["seconds"]), int(r["rss_kib"])) for r in csv.DictReader(open(sys.argv[1]))]
duration = int(sys.argv[2])
warm = min(60, duration // 3)
after = [kib for s, kib in rows if s >= warm]
if len(after) < 2:
    sys.exit("soak: too few RSS samples")
base, last, peak = after[0], after[-1], max(after)
print(f"RSS after warm-up {base} KiB, at the end {last} KiB, peak {peak} KiB")
if last > base * 1.2 + 16384:
    sys.exit(f"soak: RSS grew from {base} to {last} KiB")
PY
echo "soak passed"
