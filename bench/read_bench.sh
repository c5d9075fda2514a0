#!/usr/bin/env bash
# GetFlowState of every flow of an unchanged 100,000-flow state (10,000
# flownodes x 10 flows), against bare servers answering a prebuilt reply of
# the same shape (echo_server --state_flows: on gRPC 1.51's callback API, and
# on the metasrv's own nghttp2 transport, echo-h2), interleaved, REPS times. One
# reader calling back to back; server CPU per call from /proc. Each server is
# read twice: `raw` takes the answer as bytes and only counts its flow ids
# (the server's part alone), `parse` parses it into an arena as a frontend
# does (its parse, on this machine, is in the figure).
#   bash bench/read_bench.sh       # writes ${OUT:-build/bench-results}/read.csv
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
OUT=${OUT:-${BUILD_DIR:-build}/bench-results}
B=${BUILD_DIR:-build}
DUR=${DUR:-5s}
mkdir -p "$OUT"
. bench/lib.sh
port=39400
start_reader_target() {  # start_reader_target echo|echo-h2|metasrv PORT
  if [[ $1 == echo* ]]; then
    local api=callback
    [[ $1 == echo-h2 ]] && api=h2
    "$B/bench/echo_server" --bind_addr=127.0.0.1:$2 --api=$api \
      --state_flows=100000 2>/dev/null &
    server_pid=$!
    wait_for_port "$2"
  else
    start_server metasrv "$2"
    # 10,000 flownodes report 10 flows each once; the state then stays.
    loadgen fill --mode=closed --streams=10000 --flows=10 --channels=16 \
      --reports=1 --warmup=0s --duration=60s >/dev/null
  fi
}
echo "rep,target,client,calls,p50_us,p99_us,server_cpu_us_per_call,flows,bytes" >"$OUT/read.csv"
for rep in $(seq "$REPS"); do
  for target in echo echo-h2 metasrv; do
    port=$((port + 1)); start_reader_target $target $port
    for client in raw parse; do
      before=$(cpu_ticks)
      r=$(loadgen $target --streams=0 --state_readers=1 --reader_interval=0 \
        --state_read_raw=$([[ $client == raw ]] && echo true || echo false) \
        --warmup=0s --duration=$DUR)
      after=$(cpu_ticks)
      calls=$(json "$r" state_reads)
      # Ticks are 1/100 s; no warm-up, so every call in the window is
      # counted (metasrv's first encodes the cold state).
      cpu=$(python3 -c "print(round(($after-$before)*10000/max(1,$calls),1))")
      echo "$rep,$target,$client,$calls,$(json "$r" state_p50_us),$(json "$r" state_p99_us),$cpu,$(json "$r" read_flows),$(json "$r" read_bytes)" >>"$OUT/read.csv"
    done
    stop_server
  done
done
cat "$OUT/read.csv"
