#!/usr/bin/env bash
# Open loop, each flownode reporting every 3 s: the metasrv's server CPU per
# heartbeat and its p99, beside the callback echo, the completion-queue
# echo and the echo on the nghttp2 transport at the same load in the same
# round (ratios per round; medians over
# REPS rounds), at 1,000, 10,000 and 30,000 flownodes. The server's CPU is
# read from /proc at the ends of the measured window (loadgen --server_pid).
#   REPS=3 bash bench/open_bench.sh   # writes ${OUT:-build/bench-results}/open_api.csv
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
B=${BUILD_DIR:-build}
OUT=${OUT:-$B/bench-results}
STREAMS=${STREAMS:-"1000 10000 30000"}
DUR=${DUR:-15s}
WARM=${WARM:-5s}
. bench/lib.sh
port=39600
start_csv open_api.csv "rep,streams,target,msgs,msgs_per_s,p50_us,p99_us,late,errors,server_cpu_s,cpu_us_per_msg,rss_kib"
for rep in $(seq "$REPS"); do
  for streams in $STREAMS; do
    for target in echo echo-cq echo-h2 metasrv; do
      # 30,000 flownodes are more than --max_nodes' default.
      port=$((port + 1)); start_server $target $port --max_nodes=100000
      # The metasrv takes 1,000 streams per connection (and gRPC's default
      # for the echoes is larger): a connection per 1,000 flownodes at least.
      channels=$(( streams / 1000 > 16 ? streams / 1000 : 16 ))
      r=$(loadgen $target --mode=open --interval=3s --streams=$streams --flows=10 \
            --channels=$channels --duration=$DUR --warmup=$WARM --server_pid=$server_pid)
      rss=$(rss_kib)
      stop_server
      msgs=$(json "$r" msgs); cpu=$(json "$r" server_cpu_s)
      per=$(python3 -c "print(round($cpu*1e6/max(1,$msgs),1))")
      echo "$rep,$streams,$target,$msgs,$(json "$r" msgs_per_s),$(json "$r" p50_us),$(json "$r" p99_us),$(json "$r" late),$(json "$r" errors),$cpu,$per,$rss" >>"$csv"
    done
  done
done
cat "$csv"
# Per load: median over the rounds of the metasrv's ratio to each echo.
python3 bench/ratios.py "$csv" rep,streams cpu_us_per_msg,p99_us metasrv:echo metasrv:echo-cq \
  metasrv:echo-h2 echo-cq:echo echo-h2:echo
