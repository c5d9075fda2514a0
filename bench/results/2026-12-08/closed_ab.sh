#!/usr/bin/env bash
# A/B: the metasrv at HEAD against ee01799's, closed loop, interleaved, with the bare h2 echo.
set -euo pipefail
cd /work/main
REPS=${REPS:-5}; B=build; OUT=/tmp/ab; DUR=${DUR:-6s}; WARM=2s
. bench/lib.sh
port=39600
start_csv ab.csv "rep,target,msgs,msgs_per_s,p50_us,p99_us,errors,server_cpu_s,cpu_us_per_msg"
targets=(new old echo-h2)
for rep in $(seq "$REPS"); do
  s=$(( (rep - 1) % 3 ))
  for target in "${targets[@]:s}" "${targets[@]:0:s}"; do
    port=$((port + 1))
    case $target in
      new) METASRV_BIN=build/server/metasrv start_server metasrv $port ;;
      old) METASRV_BIN=/tmp/old/build/server/metasrv start_server metasrv $port ;;
      *) start_server $target $port ;;
    esac
    r=$(loadgen $target --mode=closed --streams=1000 --flows=10 --duration=$DUR --warmup=$WARM --server_pid=$server_pid)
    stop_server
    msgs=$(json "$r" msgs); cpu=$(json "$r" server_cpu_s)
    per=$(python3 -c "print(round($cpu*1e6/max(1,$msgs),2))")
    echo "$rep,$target,$msgs,$(json "$r" msgs_per_s),$(json "$r" p50_us),$(json "$r" p99_us),$(json "$r" errors),$cpu,$per" >>"$csv"
  done
done
cat "$csv"
python3 bench/ratios.py "$csv" rep msgs_per_s,p99_us,cpu_us_per_msg new:old new:echo-h2 old:echo-h2
