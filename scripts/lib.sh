# Shell helpers of the scripts and benchmarks; sourced.

# wait_for_port PORT [TRIES]: until 127.0.0.1:PORT accepts (50 ms apart).
wait_for_port() {
  for _ in $(seq "${2:-200}"); do
    (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}

# start_etcd DATA_DIR CLIENT_PORT PEER_PORT: a one-member etcd on loopback,
# in the background (its pid in $started_pid), healthy on return.
start_etcd() {
  etcd --name=local --data-dir="$1" \
    --listen-client-urls=http://127.0.0.1:"$2" --advertise-client-urls=http://127.0.0.1:"$2" \
    --listen-peer-urls=http://127.0.0.1:"$3" --initial-advertise-peer-urls=http://127.0.0.1:"$3" \
    --initial-cluster=local=http://127.0.0.1:"$3" --logger=zap --log-level=error &
  started_pid=$!
  for _ in $(seq 100); do
    ETCDCTL_API=3 etcdctl --endpoints=127.0.0.1:"$2" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "etcd did not start on 127.0.0.1:$2" >&2
  return 1
}
