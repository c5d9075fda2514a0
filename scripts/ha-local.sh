#!/usr/bin/env bash
# HA on one machine without Docker: etcd and three metasrv replicas on
# loopback. Shows who leads, then keeps running until Ctrl-C, and stops
# everything cleanly.
#   scripts/ha-local.sh          run until Ctrl-C
#   scripts/ha-local.sh --once   show the leader, then stop
# Replicas: 127.0.0.1:3002, :3012, :3022 (metrics on :4002, :4012, :4022);
# etcd: 127.0.0.1:2379. Logs and etcd data go to a temporary folder, removed
# at a clean end and kept (and named) when something failed.
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
failed=1  # Cleared once every replica is up; the logs stay otherwise.
stop_all() {
  trap - EXIT INT TERM
  echo "stopping replicas and etcd"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ $failed == 0 ]]; then rm -rf "$work"; else echo "logs kept in $work" >&2; fi
}
trap stop_all EXIT INT TERM

. scripts/lib.sh
start_etcd "$work/etcd" 2379 2380 >"$work/etcd.log" 2>&1
pids+=("$started_pid")

declare -A replica_pid
for port in 3002 3012 3022; do
  "$bin" --bind_addr=127.0.0.1:$port --store_addrs=127.0.0.1:2379 \
    --metrics_addr=127.0.0.1:$((port + 1000)) \
    >"$work/metasrv-$port.log" 2>&1 &
  pids+=($!)
  replica_pid[$port]=$!
done

# Every replica up: its process alive and its port answering. One that is
# not (a port taken, a bad flag) is named, with the end of its log.
replica_up() { kill -0 "${replica_pid[$1]}" 2>/dev/null && port_open "$1"; }
for port in 3002 3012 3022; do
  if ! wait_until 100 0.1 replica_up "$port"; then
    echo "replica 127.0.0.1:$port is not up (log: $work/metasrv-$port.log):" >&2
    tail -n 5 "$work/metasrv-$port.log" >&2
    exit 1
  fi
done

# GET /ready of the replica whose gRPC port is $1: "leader", "follower; ...",
# or "not ready: ...".
ready_of() {
  local body
  body=$( { exec 3<>/dev/tcp/127.0.0.1/$(($1 + 1000)) &&
            printf 'GET /ready HTTP/1.0\r\n\r\n' >&3 && cat <&3; } 2>/dev/null |
          tr -d '\r' | sed '1,/^$/d') || true
  echo "${body:-no answer}"
}

# The candidate with the oldest key leads, once its log says so.
leader=""
leader_elected() {
  leader=$(ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:2379 get --prefix \
    --sort-by=CREATE --order=ASCEND --print-value-only __metasrv_election/ | sed -n 1p)
  [[ -n "$leader" ]] && grep -q "became leader" "$work/metasrv-${leader##*:}.log"
}
wait_until 100 0.1 leader_elected || { echo "no leader elected" >&2; exit 1; }
# Each replica's own word (/ready) on its role.
echo "etcd:     127.0.0.1:2379"
for port in 3002 3012 3022; do
  role=$(ready_of "$port")
  [[ "127.0.0.1:$port" == "$leader" && "$role" != leader ]] &&
    { echo "127.0.0.1:$port holds the oldest key but says: $role" >&2; exit 1; }
  [[ "$role" == leader ]] && role=LEADER
  echo "metasrv:  127.0.0.1:$port  $role"
done
failed=0

if [[ "${1:-}" == "--once" ]]; then
  exit 0
fi
echo "running; Ctrl-C stops everything (logs in $work)"
wait "${pids[0]}"
