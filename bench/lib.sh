# Helpers of the benchmark scripts; sourced with B (build dir) set.
. scripts/lib.sh
server_pid=""
# The metasrv binary start_server runs (an A/B script sets it per round).
METASRV_BIN=${METASRV_BIN:-$B/server/metasrv}
start_server() {  # start_server metasrv|echo|echo-cq|echo-h2 PORT [metasrv flags...]
  if [[ $1 == echo ]]; then
    "$B/bench/echo_server" --bind_addr=127.0.0.1:$2 &
  elif [[ $1 == echo-cq || $1 == echo-h2 ]]; then
    "$B/bench/echo_server" --bind_addr=127.0.0.1:$2 --api=${1#echo-} &
  else
    "$METASRV_BIN" --bind_addr=127.0.0.1:$2 --log_level=warn "${@:3}" &
  fi
  server_pid=$!
  wait_for_port "$2" || { echo "server $1 did not start" >&2; exit 1; }
}
stop_server() { kill -TERM "$server_pid"; wait "$server_pid" 2>/dev/null || true; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$server_pid/status"; }
port=39100
# start_csv NAME HEADER: makes $OUT, sets csv to $OUT/NAME and writes HEADER.
start_csv() { mkdir -p "$OUT"; csv="$OUT/$1"; echo "$2" >"$csv"; }
loadgen() {  # loadgen LABEL ARGS... -> prints the RESULT json
  "$B/bench/loadgen" --target=127.0.0.1:$port --label="$1" "${@:2}" | sed -n 's/^RESULT //p'
}
json() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d[sys.argv[2]])" "$1" "$2"; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$server_pid/stat"; }  # CPU time, 1/100 s.
