#!/usr/bin/env bash
# HA on one machine without Docker: etcd and three metasrv replicas on
# loopback. Shows who leads, then keeps running until Ctrl-C, and stops
# everything cleanly.
#   scripts/ha-local.sh          run until Ctrl-C
#   scripts/ha-local.sh --once   show the leader, then stop
# Replicas: 127.0.0.1:3002, :3012, :3022 (metrics on :4002, :4012, :4022);
# etcd: 127.0.0.1:2379. Logs and etcd
# data go to a temporary folder that is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
for p in etcd-server etcd-client; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=" $p"
done
if [[ -n "${missing:-}" ]]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh >/dev/null
bin="${BUILD_DIR:-build}/server/metasrv"

work=$(mktemp -d /tmp/metasrv-ha-XXXXXX)
pids=()
stop_all() {
  trap - EXIT INT TERM
  echo "stopping replicas and etcd"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop_all EXIT INT TERM

. scripts/lib.sh
start_etcd "$work/etcd" 2379 2380 >"$work/etcd.log" 2>&1
pids+=("$started_pid")

for port in 3002 3012 3022; do
  "$bin" --bind_addr=127.0.0.1:$port --store_addrs=127.0.0.1:2379 \
    --metrics_addr=127.0.0.1:$((port + 1000)) \
    >"$work/metasrv-$port.log" 2>&1 &
  pids+=($!)
done

# The candidate with the oldest key leads, once its log says so.
leader=""
leader_elected() {
  leader=$(ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2379 get --prefix \
    --sort-by=CREATE --order=ASCEND --print-value-only __metasrv_election/ | sed -n 1p)
  [[ -n "$leader" ]] && grep -q "became leader" "$work/metasrv-${leader##*:}.log"
}
wait_until 100 0.1 leader_elected || { echo "no leader elected; logs in $work" >&2; exit 1; }
echo "etcd:     127.0.0.1:2379"
for port in 3002 3012 3022; do
  role=follower
  [[ "127.0.0.1:$port" == "$leader" ]] && role=LEADER
  echo "metasrv:  127.0.0.1:$port  $role"
done

if [[ "${1:-}" == "--once" ]]; then
  exit 0
fi
echo "running; Ctrl-C stops everything (logs in $work)"
wait "${pids[0]}"
