#!/usr/bin/env bash
# WatchFlowState under load: heartbeat latency and server cost with watchers.
# Part of bench/run_all.sh; alone (after a build with -DMETASRV_BUILD_BENCH=ON):
#   REPS=3 bash bench/watch_bench.sh      # writes ${OUT:-build/bench-results}/watch.csv
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
QUICK=${QUICK:-0}
OUT=${OUT:-${BUILD_DIR:-build}/bench-results}
B=${BUILD_DIR:-${B:-build}}
mkdir -p "$OUT"
. bench/lib.sh
port=39500

echo "== watchers: heartbeat latency and server cost with WatchFlowState subscribers"
# Watchers run in their own loadgen process at nice 19, so that their parsing
# competes as little as possible with the flownodes' process for the 2 cores.
# Scenarios: 1,000 streams x 10 flows (10,000 flows, one report per second per
# stream) with 0 or 1,000 watchers of the whole state or of deltas, with every
# flow changing in every report or 1 of each report's 10 (changing=1); 10,000
# x 10 (100,000 flows, every 3 s) with 0 or 10 watchers, and with 100 watchers
# that stop reading (stall).
# Each: streams interval watchers stall(0/1) deltas(0/1) changing_flows
# [watch_interval_ms: the watchers' min_interval_ms; 0 if left out].
# SCENARIOS (a ;-separated list) runs others, e.g. the delta pairs alone:
#   SCENARIOS="1000 1s 0 0 0 1;1000 1s 1000 0 1 1" REPS=5 bash bench/watch_bench.sh
# or with watchers that ask for a message every 4 s:
#   SCENARIOS="1000 1s 0 0 0 1;1000 1s 1000 0 1 1 4000" REPS=5 bash bench/watch_bench.sh
if [[ -n ${SCENARIOS:-} ]]; then
  IFS=';' read -r -a SCENARIOS <<<"$SCENARIOS"
else
  SCENARIOS=("1000 1s 0 0 0 -1" "1000 1s 1000 0 0 -1" "1000 1s 1000 0 1 -1"
             "1000 1s 0 0 0 1" "1000 1s 1000 0 1 1"
             "10000 3s 0 0 0 -1" "10000 3s 10 0 0 -1" "10000 3s 100 1 0 -1")
fi
if [[ $QUICK == 1 ]]; then wdur=5; wwarm=2; else wdur=15; wwarm=5; fi
echo "rep,scenario,streams,watchers,stall,deltas,changing,hb_p50_us,hb_p99_us,errors,server_cpu_s,server_cores,rss_kib,watch_msgs,watch_age_p50_ms,watch_age_p99_ms,watch_flows,watch_delta_flows,watch_errors,watch_interval_ms" >"$OUT/watch.csv"
for rep in $(seq "$REPS"); do
  for sc in "${SCENARIOS[@]}"; do
    read -r streams interval watchers stall deltas changing wint <<<"$sc"
    wint=${wint:-0}
    dflag=(--watch_interval_ms=$wint); [[ $deltas == 1 ]] && dflag+=(--watch_deltas)
    # Stalled watchers first take in as many states as their connection's
    # flow-control window admits (gRPC's client grows it to several MB per
    # stream); measure heartbeats once they are full.
    warm=$wwarm; [[ $stall == 1 ]] && warm=$((wwarm + 15))
    port=$((port + 1)); start_server metasrv $port
    wfile=$(mktemp)
    if [[ $watchers -gt 0 ]]; then
      stall_flag=(); [[ $stall == 1 ]] && stall_flag=(--watch_stall)
      nice -n 19 "$B/bench/loadgen" --target=127.0.0.1:$port --label=watch --mode=open \
        --interval=1000s --streams=1 --flows=1 --channels=4 --warmup=1s \
        --duration=$((warm + wdur + 6))s --watchers=$watchers "${stall_flag[@]}" "${dflag[@]}" >"$wfile" &
      wpid=$!
    fi
    c0=$(cpu_ticks); t0=$(date +%s.%N)
    r=$(loadgen metasrv --mode=open --interval=$interval --streams=$streams --flows=10 \
          --changing_flows=$changing \
          --channels=16 --duration=${wdur}s --warmup=${warm}s)
    c1=$(cpu_ticks); t1=$(date +%s.%N); rss=$(rss_kib)
    if [[ $watchers -gt 0 ]]; then
      wait "$wpid" || true
      w=$(sed -n 's/^RESULT //p' "$wfile")
    else
      w='{"watch_msgs":0,"watch_age_p50_ms":0,"watch_age_p99_ms":0,"watch_flows":0,"watch_delta_flows_avg":0,"errors":0}'
    fi
    rm -f "$wfile"
    stop_server
    echo "$rep,$streams@$interval,$streams,$watchers,$stall,$deltas,$changing,$(json "$r" p50_us),$(json "$r" p99_us),$(json "$r" errors),$(python3 -c "print(($c1-$c0)/100)"),$(python3 -c "print(round(($c1-$c0)/100/($t1-$t0),3))"),$rss,$(json "$w" watch_msgs),$(json "$w" watch_age_p50_ms),$(json "$w" watch_age_p99_ms),$(json "$w" watch_flows),$(json "$w" watch_delta_flows_avg),$(json "$w" errors),$wint" >>"$OUT/watch.csv"
  done
done
cat "$OUT/watch.csv"

