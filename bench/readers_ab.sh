#!/usr/bin/env bash
# Heartbeats with readers, two builds interleaved: 10,000 flownodes x 10
# flows at one report per 3 s (open loop), one GetFlowState and one
# Cluster.Range reader of the whole state every 250 ms, REPS rounds
# alternating OLD and NEW. Compares a change's read path beside the code
# before it in the same run.
#   OLD=/tmp/old/build NEW=build REPS=3 bash bench/readers_ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
OUT=${OUT:-${BUILD_DIR:-build}/bench-results}
DUR=${DUR:-20s}
WARM=${WARM:-5s}
mkdir -p "$OUT"
. bench/lib.sh
echo "rep,build,hb_p50_us,hb_p99_us,late,errors,state_reads,state_p50_us,state_p99_us,range_reads,range_p50_us,range_p99_us" \
  >"$OUT/readers_ab.csv"
for rep in $(seq "$REPS"); do
  for build in old new; do
    if [[ $build == old ]]; then B=$OLD; else B=$NEW; fi
    port=$((port + 1)); start_server metasrv $port
    r=$(loadgen metasrv --mode=open --interval=3s --streams=10000 --flows=10 --channels=16 \
          --duration=$DUR --warmup=$WARM --state_readers=1 --range_readers=1 --reader_interval=250ms)
    stop_server
    row="$rep,$build"
    for k in p50_us p99_us late errors state_reads state_p50_us state_p99_us range_reads range_p50_us range_p99_us; do
      row="$row,$(json "$r" $k)"
    done
    echo "$row" >>"$OUT/readers_ab.csv"
  done
done
cat "$OUT/readers_ab.csv"
