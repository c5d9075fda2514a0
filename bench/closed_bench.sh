#!/usr/bin/env bash
# Closed loop, 1,000 streams x 10 flows: the metasrv (plain and gzip
# requests, gRPC C++'s own compression: it cannot send GreptimeDB's zstd) beside the callback echo, the completion-queue echo (both on
# gRPC 1.51's HTTP/2) and the echo on the metasrv's own nghttp2 transport
# (echo_server --api=h2, the physical limit), the five interleaved in every
# round (the order rotating), ratios per round and their
# medians over REPS rounds. The server's CPU is read from /proc at the ends
# of the measured window (loadgen --server_pid). The echoes are given plain
# requests: they do not inflate, so the gzip row is the metasrv's whole
# cost of a compressed heartbeat against a bare plain echo.
#   REPS=3 bash bench/closed_bench.sh   # writes ${OUT:-build/bench-results}/closed_api.csv
# An A/B of two builds: TARGETS names the rows (metasrv-b runs $METASRV_B),
# PAIRS the ratios, e.g.
#   TARGETS="metasrv metasrv-b echo-h2" METASRV_B=/tmp/old/build/server/metasrv \
#   PAIRS="metasrv:metasrv-b metasrv:echo-h2 metasrv-b:echo-h2" bash bench/closed_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
B=${BUILD_DIR:-build}
OUT=${OUT:-$B/bench-results}
DUR=${DUR:-8s}
WARM=${WARM:-2s}
. bench/lib.sh
port=39400
start_csv closed_api.csv "rep,target,msgs,msgs_per_s,p50_us,p99_us,errors,server_cpu_s,cpu_us_per_msg"
read -r -a targets <<<"${TARGETS:-echo echo-cq echo-h2 metasrv metasrv-gzip}"
for rep in $(seq "$REPS"); do
  shift_by=$(( (rep - 1) % ${#targets[@]} ))
  for target in "${targets[@]:shift_by}" "${targets[@]:0:shift_by}"; do
    port=$((port + 1))
    if [[ $target == metasrv-b ]]; then
      METASRV_BIN=$METASRV_B start_server metasrv $port
    else
      start_server ${target%-gzip} $port
    fi
    extra=()
    [[ $target == *-gzip ]] && extra=(--gzip)
    r=$(loadgen $target --mode=closed --streams=1000 --flows=10 --duration=$DUR \
          --warmup=$WARM --server_pid=$server_pid "${extra[@]}")
    stop_server
    msgs=$(json "$r" msgs); cpu=$(json "$r" server_cpu_s)
    per=$(python3 -c "print(round($cpu*1e6/max(1,$msgs),2))")
    echo "$rep,$target,$msgs,$(json "$r" msgs_per_s),$(json "$r" p50_us),$(json "$r" p99_us),$(json "$r" errors),$cpu,$per" >>"$csv"
  done
done
cat "$csv"
python3 bench/ratios.py "$csv" rep msgs_per_s,p99_us,cpu_us_per_msg \
  ${PAIRS:-metasrv:echo metasrv:echo-cq metasrv:echo-h2 metasrv-gzip:echo \
  metasrv-gzip:echo-cq echo-cq:echo echo-h2:echo}
