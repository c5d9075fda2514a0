#!/usr/bin/env bash
# Soak test against the real binary on loopback, for DURATION seconds
# (default 600): 1,000 heartbeat streams (one report per second each) and a
# leader change every 3 s. Samples the server's RSS every 5 s into
# ${OUT:-/tmp}/soak_rss.csv.
#   scripts/soak.sh 600          standalone: also a GetFlowState and a
#                                Cluster.Range reader and 20 WatchFlowState
#                                watchers; LeaderChange resets the KV
#   HA=1 scripts/soak.sh 600     etcd and two replicas: every LeaderChange is
#                                a step-down under load, the streams follow
#                                the new leader (AskLeader)
# Fails if any call errs, a server logs an error or dies, or RSS grows by more
# than 20% (plus 16 MiB of slack) between the end of warm-up and the end.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-600}
OUT=${OUT:-/tmp}
B=${BUILD_DIR:-build}
PORT=${PORT:-39300}
HA=${HA:-0}
[[ -x $B/bench/loadgen && -x $B/cli/metasrvctl ]] || { echo "build first" >&2; exit 2; }
. scripts/lib.sh

work=$(mktemp -d /tmp/soak-XXXXXX)
pids=()
lg=""
cleanup() {
  for p in ${lg:+"$lg"} "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work/etcd"
}
trap cleanup EXIT

addrs=()
if [[ $HA == 1 ]]; then
  etcd_port=$((PORT + 50))
  start_etcd "$work/etcd" "$etcd_port" $((etcd_port + 1)) >"$work/etcd.log" 2>&1
  pids+=("$started_pid")
  for r in 0 1; do
    "$B/server/metasrv" --bind_addr=127.0.0.1:$((PORT + r)) --metrics_addr= \
      --store_addrs=127.0.0.1:$etcd_port --lease_ttl=2s 2>"$work/server-$r.log" &
    pids+=($!)
    addrs+=("127.0.0.1:$((PORT + r))")
  done
else
  "$B/server/metasrv" --bind_addr=127.0.0.1:$PORT --metrics_addr= 2>"$work/server-0.log" &
  pids+=($!)
  addrs+=("127.0.0.1:$PORT")
fi
servers=("${pids[@]: -${#addrs[@]}}")
for a in "${addrs[@]}"; do wait_for_port "${a##*:}"; done
leader() { "$B/cli/metasrvctl" --addr="${addrs[0]}" leader 2>/dev/null || true; }
for _ in $(seq 200); do [[ -n "$(leader)" ]] && break; sleep 0.1; done

result="$work/result"
extra=(--state_readers=1 --range_readers=1 --reader_interval=500ms --watchers=20)
[[ $HA == 1 ]] && extra=(--follow_leader)
"$B/bench/loadgen" --target="$(IFS=,; echo "${addrs[*]}")" --mode=open --interval=1s \
  --streams=1000 --flows=10 --channels=8 --duration="${DURATION}s" --warmup=5s \
  "${extra[@]}" >"$result" &
lg=$!

echo "seconds,rss_kib" >"$OUT/soak_rss.csv"
resets=0
start=$(date +%s)
while kill -0 "$lg" 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  if (( now % 5 == 0 )); then
    rss=0
    for p in "${servers[@]}"; do rss=$((rss + $(awk '/VmRSS/ {print $2}' /proc/$p/status))); done
    echo "$now,$rss" >>"$OUT/soak_rss.csv"
  fi
  if (( now % 3 == 0 )); then
    # Standalone: a reset. HA: the leader steps down under load.
    if "$B/cli/metasrvctl" --addr="$(leader)" reset >/dev/null 2>&1; then
      resets=$((resets + 1))
    fi
  fi
  sleep 1
done
wait "$lg" || { echo "soak: the load generator reported errors" >&2; cat "$result" >&2; exit 1; }
lg=""
sed -n 's/^RESULT //p' "$result"
echo "leader changes: $resets"
for p in "${servers[@]}"; do
  kill -0 "$p" 2>/dev/null || { echo "soak: a server died" >&2; cat "$work"/server-*.log >&2; exit 1; }
done
if grep -q "\[error\]" "$work"/server-*.log; then
  echo "soak: a server logged errors:" >&2; grep "\[error\]" "$work"/server-*.log >&2; exit 1
fi
(( resets > DURATION / 6 )) || { echo "soak: only $resets leader changes" >&2; exit 1; }
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
