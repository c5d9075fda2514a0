#!/usr/bin/env bash
# Runs the whole benchmark suite and writes CSV files and a plot to
# ${OUT:-build/bench-results} (outside the checkout's tracked files; the
# figures RESULTS.md quotes are kept in bench/results: OUT=bench/results).
# Every throughput figure is paired with the echo baseline measured in the
# same run.
#   bash bench/run_all.sh                  # REPS=3 repetitions of each scenario
#   REPS=1 QUICK=1 bash bench/run_all.sh   # a short smoke run
#   OUT=bench/results REPS=3 bash bench/run_all.sh   # refresh the kept figures
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
QUICK=${QUICK:-0}
B=${BUILD_DIR:-build}
OUT=${OUT:-$B/bench-results}
bash scripts/deps.sh test
dpkg-query -W -f='${Status}' gnuplot-nox 2>/dev/null | grep -q "install ok installed" ||
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox >/dev/null; }
BUILD_DIR=$B bash scripts/build.sh -DMETASRV_BUILD_BENCH=ON >/dev/null
mkdir -p "$OUT"

if [[ $QUICK == 1 ]]; then dur=3s; odur=6s; owarm=2s; else dur=8s; odur=20s; owarm=5s; fi

. bench/lib.sh

echo "== closed loop, 1,000 streams x 10 flows, metasrv (plain and zstd requests) and the callback and completion-queue echoes interleaved"
OUT=$OUT B=$B REPS=$REPS DUR=$dur bash bench/closed_bench.sh

echo "== closed loop against stream count"
echo "streams,target,msgs_per_s,p99_us" >"$OUT/sweep.csv"
for streams in 100 1000 5000 10000; do
  for target in echo metasrv; do
    port=$((port + 1)); start_server $target $port
    r=$(loadgen $target --mode=closed --streams=$streams --flows=10 --channels=16 --duration=$dur --warmup=2s)
    stop_server
    echo "$streams,$target,$(json "$r" msgs_per_s),$(json "$r" p99_us)" >>"$OUT/sweep.csv"
  done
done
cat "$OUT/sweep.csv"

echo "== open loop, 10,000 streams x 10 flows, one report per 3 s; without and with readers"
echo "rep,readers,msgs,msgs_per_s,p50_us,p99_us,p999_us,late,errors,rss_kib,state_reads,state_p50_us,state_p99_us,range_reads,range_p50_us,range_p99_us,read_flows" >"$OUT/open.csv"
for rep in $(seq "$REPS"); do
  for readers in none state+range; do
    port=$((port + 1)); start_server metasrv $port
    extra=()
    [[ $readers != none ]] && extra=(--state_readers=1 --range_readers=1 --reader_interval=250ms)
    r=$(loadgen metasrv --mode=open --interval=3s --streams=10000 --flows=10 --channels=16 \
          --duration=$odur --warmup=$owarm "${extra[@]}")
    rss=$(rss_kib)
    stop_server
    echo "$rep,$readers,$(json "$r" msgs),$(json "$r" msgs_per_s),$(json "$r" p50_us),$(json "$r" p99_us),$(json "$r" p999_us),$(json "$r" late),$(json "$r" errors),$rss,$(json "$r" state_reads),$(json "$r" state_p50_us),$(json "$r" state_p99_us),$(json "$r" range_reads),$(json "$r" range_p50_us),$(json "$r" range_p99_us),$(json "$r" read_flows)" >>"$OUT/open.csv"
  done
done
cat "$OUT/open.csv"

OUT=$OUT B=$B REPS=$REPS QUICK=$QUICK bash bench/watch_bench.sh

echo "== memory: server RSS with 10,000 nodes x 1 flow and x 100 flows"
echo "rep,flows,rss_kib" >"$OUT/memory.csv"
for rep in $(seq "$REPS"); do
  for flows in 1 100; do
    port=$((port + 1)); start_server metasrv $port
    loadgen metasrv --mode=closed --streams=10000 --flows=$flows --channels=16 --reports=2 --warmup=0s >/dev/null
    echo "$rep,$flows,$(rss_kib)" >>"$OUT/memory.csv"
    stop_server
  done
done
cat "$OUT/memory.csv"
"$B/bench/memory_bench" --nodes=10000 --flows=100 | sed -n 's/^RESULT //p' >"$OUT/memory_core.json"
cat "$OUT/memory_core.json"

echo "== GetFlowState of an unchanged 100,000-flow state against a bare reply of the same size"
OUT=$OUT B=$B REPS=$REPS DUR=$dur bash bench/read_bench.sh

echo "== a /metrics scrape with the alerting metrics, 1,000 to 100,000 flows"
"$B/bench/scrape_bench" --benchmark_repetitions="$REPS" \
  --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
  sed -nE 's/^"BM_Scrape\/flows:([0-9]+)\/top:(-?[0-9]+)(_median)?",[0-9]+,([0-9.e+]+),([0-9.e+]+),.*/\1,\2,\4,\5/p' |
  { echo "flows,top,real_ms,cpu_ms"; cat; } >"$OUT/scrape.csv"
cat "$OUT/scrape.csv"

echo "== GetFlowState's answer for some flows: the column encoder against protobuf's build"
"$B/bench/encode_bench" --benchmark_repetitions="$REPS" --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
  sed -nE 's/^"(BM_[A-Za-z]+)\/([0-9]+)\/([01])_median",[0-9]+,([0-9.e+]+),([0-9.e+]+),.*/\1,\2,\3,\4,\5/p' |
  { echo "encoder,flows,with_nodes,real_ns,cpu_ns"; cat; } >"$OUT/encode.csv"
cat "$OUT/encode.csv"

echo "== merge cost against cluster size (core), ours and the reference algorithm's"
"$B/bench/merge_bench" --benchmark_filter='BM_Merge/|BM_ReferenceMerge/' \
  --benchmark_repetitions="$REPS" \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.3 \
  --benchmark_format=csv 2>/dev/null |
  sed -nE 's/^"(BM_Merge|BM_ReferenceMerge)\/([0-9]+)(_median)?",[0-9]+,([0-9.e+]+),.*/\1,\2,\4/p' >"$OUT/merge.tmp"
{ echo "nodes,ns_per_merge"; sed -n 's/^BM_Merge,//p' "$OUT/merge.tmp"; } >"$OUT/merge.csv"
{ echo "nodes,ns_per_merge"; sed -n 's/^BM_ReferenceMerge,//p' "$OUT/merge.tmp"; } >"$OUT/merge_reference.csv"
rm "$OUT/merge.tmp"
cat "$OUT/merge.csv" "$OUT/merge_reference.csv"

gnuplot <<GP
set terminal pngcairo size 1500,450 font ",10"
set output "$OUT/bench.png"
set datafile separator ","
set key top left
set multiplot layout 1,3
set title "Merge cost vs cluster size (10-flow reports), log-log"
set logscale xy; set xlabel "flownodes"; set ylabel "ns per merge"; set yrange [*:*]
set format y "10^{%L}"
plot "$OUT/merge.csv" skip 1 using 1:2 with linespoints title "metasrv (incremental)", \
     "$OUT/merge_reference.csv" skip 1 using 1:2 with linespoints title "reference (rewrite everything)"
unset logscale xy; set format y
set title "Closed-loop throughput vs streams"
set logscale x; set xlabel "streams"; set ylabel "msgs/s"; set yrange [0:*]
plot "< grep ',metasrv,' $OUT/sweep.csv" using 1:3 with linespoints title "metasrv", \
     "< grep ',echo,' $OUT/sweep.csv" using 1:3 with linespoints title "echo"
set title "Closed-loop p99 latency vs streams"
set ylabel "p99 (ms)"
plot "< grep ',metasrv,' $OUT/sweep.csv" using 1:(\$4/1000) with linespoints title "metasrv", \
     "< grep ',echo,' $OUT/sweep.csv" using 1:(\$4/1000) with linespoints title "echo"
unset multiplot
GP
echo "wrote $OUT/*.csv and $OUT/bench.png"
