#!/usr/bin/env bash
# User-space instructions per WatchFlowState message, counted by callgrind:
# the server runs under valgrind twice, with WATCHERS delta watchers and
# without, under the same heartbeat load (100 flownodes x 10 flows, one
# report a second, 1 of 10 flows changing, 20 s); the difference of the two
# totals over the watcher messages is the figure.
#   bash bench/watch_callgrind.sh            # after a build with benches
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
WATCHERS=${WATCHERS:-200}
OUT=${OUT:-$B/bench-results}
mkdir -p "$OUT"
. bench/lib.sh
run() {  # run WATCHERS PORT -> "instructions watcher_messages"
  local w=$1 p=$2 cg="$OUT/callgrind_watch_$1.out" wfile
  valgrind --tool=callgrind --callgrind-out-file="$cg" "$B/server/metasrv" \
    --bind_addr=127.0.0.1:$p --log_level=warn --metrics_addr=127.0.0.1:$((p + 100)) \
    2>/dev/null &
  local spid=$!
  wait_for_port "$p" 400 || { echo "server did not start" >&2; exit 1; }
  wfile=$(mktemp)
  local wpid=""
  if [[ $w -gt 0 ]]; then
    "$B/bench/loadgen" --target=127.0.0.1:$p --label=watch --mode=open \
      --interval=1000s --streams=1 --flows=1 --channels=4 --warmup=2s \
      --duration=24s --watchers=$w --watch_deltas >"$wfile" &
    wpid=$!
  fi
  "$B/bench/loadgen" --target=127.0.0.1:$p --label=m --mode=open --interval=1s \
    --streams=100 --flows=10 --changing_flows=1 --channels=4 --duration=20s \
    --warmup=4s >/dev/null
  [[ -n $wpid ]] && wait "$wpid"
  kill -TERM $spid; wait $spid || true
  local ir msgs=0
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$cg")
  [[ $w -gt 0 ]] && msgs=$(json "$(sed -n 's/^RESULT //p' "$wfile")" watch_msgs)
  rm -f "$wfile"
  echo "$ir $msgs"
}
read -r with msgs < <(run "$WATCHERS" 39851)
read -r without _ < <(run 0 39852)
echo "instructions with $WATCHERS watchers: $with, without: $without, watcher messages: $msgs"
echo "instructions per watcher message: $(( (with - without) / msgs ))"
