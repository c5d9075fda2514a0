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
    --initial-cluster=local=http://127.0.0.1:"$3" --pre-vote=true --logger=zap --log-level=error &
  started_pid=$!
  wait_until 100 0.1 etcd_healthy "$2" && return 0
  echo "etcd did not start on 127.0.0.1:$2" >&2
  return 1
}

# as_user USER COMMAND...: COMMAND as USER when we are root (PostgreSQL and
# MariaDB refuse to run as root), else as ourselves.
as_user() {
  local user=$1
  shift
  if [[ $(id -u) -eq 0 ]]; then
    setpriv --reuid="$user" --regid="$user" --init-groups "$@"
  else
    "$@"
  fi
}

# start_postgres DIR PORT PASSWORD: a PostgreSQL on 127.0.0.1:PORT with its
# data in DIR, user metasrv/PASSWORD, in the background (pid in
# $started_pid), accepting sessions on return.
start_postgres() {
  local dir=$1 port=$2 bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  mkdir -p "$dir"
  printf '%s\n' "$3" >"$dir/pw"
  [[ $(id -u) -eq 0 ]] && chown -R postgres:postgres "$dir"
  as_user postgres "$bin/initdb" --pgdata="$dir/data" --username=metasrv \
    --pwfile="$dir/pw" --auth-local=trust --auth-host=scram-sha-256 --no-sync >/dev/null
  # Started directly (not through a function): $! is the server itself.
  local run=()
  [[ $(id -u) -eq 0 ]] && run=(setpriv --reuid=postgres --regid=postgres --init-groups)
  "${run[@]}" "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" \
    -c listen_addresses=127.0.0.1 &
  started_pid=$!
  wait_until 100 0.1 "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && return 0
  echo "PostgreSQL did not start on 127.0.0.1:$port" >&2
  return 1
}

# start_mariadb DIR PORT PASSWORD: a MariaDB on 127.0.0.1:PORT with its data
# in DIR, user metasrv/PASSWORD and database metasrv, in the background (pid
# in $started_pid), accepting sessions on return.
start_mariadb() {
  local dir=$1 port=$2 user=()
  mkdir -p "$dir"
  [[ $(id -u) -eq 0 ]] && user=(--user=mysql) && chown mysql:mysql "$dir"
  mariadb-install-db --no-defaults --datadir="$dir/data" "${user[@]}" \
    --auth-root-authentication-method=normal --skip-test-db >/dev/null
  mariadbd --no-defaults "${user[@]}" --datadir="$dir/data" --socket="$dir/sock" \
    --pid-file="$dir/pid" --port="$port" --bind-address=127.0.0.1 --skip-name-resolve \
    --log-error="$dir/error.log" --skip-log-bin &
  started_pid=$!
  wait_until 100 0.1 mariadb-admin --no-defaults --socket="$dir/sock" --user=root ping \
    >/dev/null 2>&1 || { echo "MariaDB did not start on 127.0.0.1:$port" >&2; return 1; }
  mariadb --no-defaults --socket="$dir/sock" --user=root -e \
    "CREATE USER 'metasrv'@'%' IDENTIFIED BY '$3'; GRANT ALL ON *.* TO 'metasrv'@'%';
     CREATE DATABASE metasrv;"
}
