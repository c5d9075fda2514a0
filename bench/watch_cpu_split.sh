#!/usr/bin/env bash
# Where 1,000 delta watchers' server CPU goes: user and kernel time (from
# /proc/PID/stat) and context switches (every thread's, /proc/PID/task) over
# 15 s of 1,000 flownodes x 10 flows at one report a second, with and
# without the watchers (their own loadgen at nice 19, as watch_bench.sh),
# for every flow changing and for 1 of 10. One CSV row per run.
#   REPS=3 bash bench/watch_cpu_split.sh   # writes $OUT/watch_cpu_split.csv
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build}
REPS=${REPS:-3}
OUT=${OUT:-$B/bench-results}
mkdir -p "$OUT"
. bench/lib.sh
port=39700
user_sys() { awk '{print $14, $15}' "/proc/$server_pid/stat"; }
switches() {
  cat /proc/"$server_pid"/task/*/status 2>/dev/null |
    awk '/ctxt_switches/ {s += $2} END {print s}'
}
csv="$OUT/watch_cpu_split.csv"
echo "rep,changing,watchers,user_cores,sys_cores,switches_per_s,hb_p99_us" >"$csv"
for rep in $(seq "$REPS"); do
  for changing in -1 1; do
    for watchers in 0 1000; do
      port=$((port + 1)); start_server metasrv $port
      wpid=""
      if [[ $watchers -gt 0 ]]; then
        nice -n 19 "$B/bench/loadgen" --target=127.0.0.1:$port --label=watch \
          --mode=open --interval=1000s --streams=1 --flows=1 --channels=4 \
          --warmup=1s --duration=26s --watchers=$watchers --watch_deltas \
          >/dev/null &
        wpid=$!
      fi
      rfile=$(mktemp)
      loadgen metasrv --mode=open --interval=1s --streams=1000 --flows=10 \
        --changing_flows=$changing --channels=16 --duration=20s --warmup=5s \
        >"$rfile" &
      lpid=$!
      sleep 6
      read -r u0 s0 < <(user_sys); c0=$(switches)
      sleep 15
      read -r u1 s1 < <(user_sys); c1=$(switches)
      wait "$lpid"
      [[ -n $wpid ]] && { wait "$wpid" || true; }
      stop_server
      p99=$(json "$(cat "$rfile")" p99_us); rm -f "$rfile"
      echo "$rep,$changing,$watchers,$(python3 -c "print(round(($u1-$u0)/1500,3), round(($s1-$s0)/1500,3), round(($c1-$c0)/15), sep=',')"),$p99" >>"$csv"
    done
  done
done
cat "$csv"
