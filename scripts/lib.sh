# Shell helpers of the scripts and benchmarks; sourced.

# wait_until TRIES SECONDS COMMAND...: runs COMMAND until it succeeds, up to
# TRIES times, SECONDS apart. The one polling loop of the scripts.
wait_until() {
  local tries=$1 pause=$2
  shift 2
  for _ in $(seq "$tries"); do
    "$@" && return 0
    sleep "$pause"
  done
  return 1
}

# port_open PORT: whether 127.0.0.1:PORT accepts a connection.
port_open() { (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# wait_for_port PORT [TRIES]: until 127.0.0.1:PORT accepts (50 ms apart).
wait_for_port() {
  wait_until "${2:-200}" 0.05 port_open "$1" && return 0
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}

# etcd_healthy PORT: whether the etcd on 127.0.0.1:PORT answers as healthy.
etcd_healthy() {
  ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:"$1" endpoint health >/dev/null 2>&1
}

# start_etcd DATA_DIR CLIENT_PORT PEER_PORT: a one-member etcd on loopback,
# in the background (its pid in $started_pid), healthy on return.
start_etcd() {
  etcd --name=local --data-dir="$1" \
    --listen-client-urls=http://127.0.0.1:"$2" --advertise-client-urls=http://127.0.0.1:"$2" \
    --listen-peer-urls=http://127.0.0.1:"$3" --initial-advertise-peer-urls=http://127.0.0.1:"$3" \
    --initial-cluster=local=http://127.0.0.1:"$3" --logger=zap --log-level=error &
  started_pid=$!
  wait_until 100 0.1 etcd_healthy "$2" && return 0
  echo "etcd did not start on 127.0.0.1:$2" >&2
  return 1
}
