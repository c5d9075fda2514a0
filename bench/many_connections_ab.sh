#!/usr/bin/env bash
# Two metasrv binaries against each other, alternating, with many
# connections: 2,000 flownodes, each on a connection of its own, report one
# flow a second (open loop) while 4 frontends call Cluster.Range of
# __flow/state back to back. Range is served off the loops (the read
# executor) and finished on the call's loop, so this measures what a task
# posted to a loop costs when the loop holds a thousand connections. Server
# CPU from /proc over the measured window (loadgen --server_pid).
#   bash bench/many_connections_ab.sh OLD/metasrv NEW/metasrv [REPS]
#   # writes ${OUT:-build/bench-results}/many_connections.csv
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1 NEW=$2 REPS=${3:-5}
B=${BUILD_DIR:-build}
OUT=${OUT:-$B/bench-results}
. bench/lib.sh
port=39800
start_csv many_connections.csv "rep,target,msgs,p99_us,range_reads,range_p50_us,server_cpu_s,cpu_us_per_read"
for rep in $(seq "$REPS"); do
  for which in old new; do
    port=$((port + 1))
    METASRV_BIN=$OLD; [[ $which == new ]] && METASRV_BIN=$NEW
    start_server metasrv $port
    r=$(loadgen $which --mode=open --interval=1s --streams=2000 --channels=2000 \
          --flows=1 --range_readers=4 --reader_interval=0 --warmup=3s \
          --duration=6s --server_pid=$server_pid)
    stop_server
    reads=$(json "$r" range_reads); cpu=$(json "$r" server_cpu_s)
    per=$(python3 -c "print(round($cpu*1e6/max(1,$reads)))")
    echo "$rep,$which,$(json "$r" msgs),$(json "$r" p99_us),$reads,$(json "$r" range_p50_us),$cpu,$per" >>"$csv"
  done
done
cat "$csv"
python3 bench/ratios.py "$csv" rep range_reads,range_p50_us,cpu_us_per_read,p99_us new:old
