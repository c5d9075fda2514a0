#!/usr/bin/env bash
# HA on one machine without Docker: a store and three metasrv replicas on
# loopback. Shows who leads, then keeps running until Ctrl-C, and stops
# everything cleanly.
#   scripts/ha-local.sh [--backend=B] [--base_port=P] [--store_port=S] [--once]
#     --backend=etcd_store      etcd on 127.0.0.1:2379 (the default)
#     --backend=postgres_store  PostgreSQL on 127.0.0.1:5432
#     --backend=mysql_store     MariaDB on 127.0.0.1:3306
#     --base_port=P             replicas on P, P+10, P+20 (default 3002),
#                               metrics on each plus 1000
#     --store_port=S            the store on S (etcd's peer port S+1)
#     --once                    show the leader, then stop
# Replicas: 127.0.0.1:3002, :3012, :3022 (metrics on :4002, :4012, :4022).
# Only the server is built (into ${BUILD_DIR:-build}).
# The store's data and the logs go to a temporary folder, removed at a clean
# end and kept (and named) when something failed.
set -euo pipefail
cd "$(dirname "$0")/.."
backend=etcd_store
once=0
base_port=3002
store_port=""
usage="usage: $0 [--backend=etcd_store|postgres_store|mysql_store] [--base_port=P] [--store_port=S] [--once]"
port_arg() {  # A port number, or the usage and exit 2.
  [[ $1 =~ ^[0-9]+$ ]] && (($1 > 0 && $1 < 65500)) || { echo "$usage" >&2; exit 2; }
  echo "$1"
}
for arg in "$@"; do
  case $arg in
    --backend=etcd_store | --backend=postgres_store | --backend=mysql_store) backend=${arg#--backend=} ;;
    --base_port=*) base_port=$(port_arg "${arg#--base_port=}") ;;
    --store_port=*) store_port=$(port_arg "${arg#--store_port=}") ;;
    --once) once=1 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
declare -A default_store_port=([etcd_store]=2379 [postgres_store]=5432 [mysql_store]=3306)
store_port=${store_port:-${default_store_port[$backend]}}
ports=("$base_port" $((base_port + 10)) $((base_port + 20)))
bash scripts/deps.sh
declare -A store_packages=([etcd_store]="etcd-server etcd-client" [postgres_store]="postgresql"
                           [mysql_store]="mariadb-server mariadb-client")
missing=""
for p in ${store_packages[$backend]}; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=" $p"
done
if [[ -n "$missing" ]]; then
  # Installed, not started: this script runs its own server.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target metasrv >/dev/null
bin="$build_dir/server/metasrv"

work=$(mktemp -d /tmp/metasrv-ha-XXXXXX)
chmod 755 "$work"
store_pid=""
pids=()
failed=1  # Cleared once every replica is up; the logs stay otherwise.
stop_all() {
  trap - EXIT INT TERM
  echo "stopping replicas, then the store"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  # PostgreSQL's fast shutdown is SIGINT; the others stop on SIGTERM.
  if [[ -n "$store_pid" ]]; then
    kill -"$([[ $backend == postgres_store ]] && echo INT || echo TERM)" "$store_pid" 2>/dev/null || true
    wait "$store_pid" 2>/dev/null || true
  fi
  if [[ $failed == 0 ]]; then rm -rf "$work"; else echo "logs kept in $work" >&2; fi
}
trap stop_all EXIT INT TERM

. scripts/lib.sh
password=metasrv-local
case $backend in
  etcd_store)
    start_etcd "$work/etcd" "$store_port" $((store_port + 1)) >"$work/etcd.log" 2>&1
    store=127.0.0.1:$store_port ;;
  postgres_store)
    start_postgres "$work/postgres" "$store_port" "$password" >"$work/postgres.log" 2>&1
    store="postgresql://metasrv:$password@127.0.0.1:$store_port/postgres" ;;
  mysql_store)
    start_mariadb "$work/mariadb" "$store_port" "$password" >"$work/mariadb.log" 2>&1
    store="mysql://metasrv:$password@127.0.0.1:$store_port/metasrv" ;;
esac
store_pid=$started_pid

declare -A replica_pid
for port in "${ports[@]}"; do
  "$bin" --bind_addr=127.0.0.1:$port --backend="$backend" --store_addrs="$store" \
    --metrics_addr=127.0.0.1:$((port + 1000)) \
    >"$work/metasrv-$port.log" 2>&1 &
  pids+=($!)
  replica_pid[$port]=$!
done

# Every replica up: its process alive and its port answering. One that is
# not (a port taken, a bad flag) is named, with the end of its log.
replica_up() { kill -0 "${replica_pid[$1]}" 2>/dev/null && port_open "$1"; }
for port in "${ports[@]}"; do
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

# The leader as the store records it, once its log says it leads.
leader=""
leader_elected() {
  case $backend in
    etcd_store)  # The candidate with the oldest key.
      leader=$(ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:$store_port get --prefix \
        --sort-by=CREATE --order=ASCEND --print-value-only __metasrv_election/ | sed -n 1p) ;;
    postgres_store)
      leader=$(psql "$store" -Atc "SELECT v FROM metasrv_election WHERE
        k = '__metasrv_election/leader' AND expires_at > clock_timestamp()" 2>/dev/null) ;;
    mysql_store)
      leader=$(mariadb --no-defaults --socket="$work/mariadb/sock" --user=root -N -B -e \
        "SELECT v FROM metasrv.metasrv_election WHERE k = '__metasrv_election/leader'
         AND expires_at > UTC_TIMESTAMP(6)" 2>/dev/null) ;;
  esac
  [[ -n "$leader" ]] && grep -q "became leader" "$work/metasrv-${leader##*:}.log"
}
wait_until 100 0.1 leader_elected || { echo "no leader elected" >&2; exit 1; }
# Each replica's own word (/ready) on its role.
echo "store:    $backend at ${store/:$password@/:***@}"
for port in "${ports[@]}"; do
  role=$(ready_of "$port")
  # A replica that died after its first check (its port was taken by
  # another process, say) or that answers no role fails the run.
  if ! kill -0 "${replica_pid[$port]}" 2>/dev/null ||
     [[ "$role" != leader && "$role" != follower* ]]; then
    echo "replica 127.0.0.1:$port answers \"$role\" (log: $work/metasrv-$port.log):" >&2
    tail -n 5 "$work/metasrv-$port.log" >&2
    exit 1
  fi
  [[ "127.0.0.1:$port" == "$leader" && "$role" != leader ]] &&
    { echo "127.0.0.1:$port is the store's leader but says: $role" >&2; exit 1; }
  [[ "$role" == leader ]] && role=LEADER
  echo "metasrv:  127.0.0.1:$port  $role"
done
failed=0

if ((once)); then
  exit 0
fi
echo "running; Ctrl-C stops everything (logs in $work)"
wait "$store_pid"
