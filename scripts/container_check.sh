#!/usr/bin/env bash
# Builds the container image as a new user would on a Debian 12 machine with
# no Docker daemon and no registry, runs it, and fails over the etcd compose
# file. Everything is made from a clean state and removed at the end:
#   1. podman, runc, debootstrap and podman-compose from Debian's packages;
#   2. a bookworm root filesystem by debootstrap (minbase) from the mirror apt
#      already uses, imported as docker.io/library/debian:12 and :12-slim, so
#      that docker/Dockerfile's FROM lines find it locally;
#   3. podman build --pull=never --format docker (the docker format keeps the
#      HEALTHCHECK) of docker/Dockerfile's runtime image;
#   4. the image run alone: gRPC health inside it (metasrvctl health),
#      /health and /ready from the host, its own health check, a non-root
#      user; its size printed;
#   5. container names resolving on a network of ours (netavark with
#      aardvark-dns; probed first, a failure if not),
#      docker/compose.yaml (etcd and three replicas) up with podman-compose:
#      exactly one replica leads; the leader's container is killed and a new
#      leader must be named within the lease TTL + 2 s; then all goes down.
# This machine's defaults podman cannot use are set in a config of our own:
# runc as the runtime (crun 1.8 refuses the mixed cgroup layout) and lower
# open-files and process limits (podman's defaults are above this machine's
# hard limits, which a container cannot be given).
#   bash scripts/container_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

stage() { echo "-- $(date -u +%H:%M:%S) $*"; }

# netavark with aardvark-dns: container names resolve on a network of ours
# (the replicas find etcd by its name); iptables for netavark's firewall.
packages=(podman runc debootstrap podman-compose netavark aardvark-dns iptables)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  stage "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

work=$(mktemp -d /var/tmp/metasrv-container.XXXXXX)
export CONTAINERS_CONF="$work/containers.conf"
export CONTAINERS_STORAGE_CONF="$work/storage.conf"
cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
[network]
network_backend = "netavark"
EOF
# A store of our own: nothing from an earlier run is reused.
cat >"$CONTAINERS_STORAGE_CONF" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/storage"
runroot = "$work/run"
EOF
project=metasrvci
compose=(podman-compose -p "$project" -f docker/compose.yaml)
cleanup() {
  set +e
  podman rm -f metasrv-ci metasrvci-dns-target >/dev/null 2>&1
  podman network rm -f metasrvci-dns >/dev/null 2>&1
  "${compose[@]}" down -v >/dev/null 2>&1
  podman system reset -f >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# An HTTP GET on the host: "CODE BODY", or "000" when nothing answers.
http() {
  python3 - "$1" <<'EOF'
import sys, urllib.error, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
        print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().strip())
except Exception:
    print("000")
EOF
}
# Runs "$@" until it succeeds, at most $1 seconds; fails naming $2.
wait_until() {
  local seconds=$1 what=$2
  shift 2
  local end=$((SECONDS + seconds))
  until "$@"; do
    if ((SECONDS >= end)); then
      echo "timed out after ${seconds}s waiting for $what" >&2
      return 1
    fi
    sleep 0.2
  done
}

stage "a bookworm root filesystem (debootstrap minbase), imported as debian:12"
mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources \
  2>/dev/null | head -n 1)
mirror=${mirror:-http://deb.debian.org/debian}
debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log"; exit 1; }
# What debootstrap leaves behind for apt (its .debs, the package lists)
# would only weigh down every image.
rm -rf "$work/rootfs"/var/cache/apt/archives/*.deb "$work/rootfs"/var/lib/apt/lists/*
tar -C "$work/rootfs" -c . | podman import - docker.io/library/debian:12 >/dev/null
podman tag docker.io/library/debian:12 docker.io/library/debian:12-slim
rm -rf "$work/rootfs"

stage "podman build --pull=never --format docker (the runtime image)"
podman build --pull=never --format docker -f docker/Dockerfile --target runtime \
  -t localhost/metasrv:ci . >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log"; exit 1; }
size=$(podman image inspect localhost/metasrv:ci --format '{{.Size}}')
echo "image localhost/metasrv:ci: $((size / 1000000)) MB"

stage "the image alone: gRPC health, /health, /ready, its health check, its user"
podman run -d --name metasrv-ci -p 127.0.0.1:23002:3002 -p 127.0.0.1:24000:4000 \
  localhost/metasrv:ci >/dev/null
health_ok() { [[ $(http http://127.0.0.1:24000/health) == 200* ]]; }
wait_until 30 "/health 200" health_ok
echo "/health: $(http http://127.0.0.1:24000/health)"
ready=$(http http://127.0.0.1:24000/ready)
echo "/ready: $ready"
[[ $ready == 200* ]]
grpc=$(podman exec metasrv-ci /usr/local/bin/metasrvctl --addr=127.0.0.1:3002 health)
echo "metasrvctl health in the container: $grpc"
[[ $grpc == *SERVING* && $grpc != *NOT_SERVING* ]]
podman healthcheck run metasrv-ci
echo "podman healthcheck run: healthy"
uid=$(podman exec metasrv-ci id -u)
echo "runs as uid $uid"
((uid != 0))
podman rm -f metasrv-ci >/dev/null

# Replicas find etcd by its container name, which resolves where podman's
# networks have their own DNS: netavark with aardvark-dns, installed above.
# Where it does not, no replica can reach etcd and no failover can happen:
# the stage fails. A network of our own with one container from the image
# above tells, in seconds, before the compose images are built.
stage "container DNS: does one container's name resolve in another on a network of ours?"
podman network create metasrvci-dns >/dev/null
podman run -d --no-healthcheck --name metasrvci-dns-target --network metasrvci-dns \
  localhost/metasrv:ci >/dev/null
dns=yes
podman run --rm --no-healthcheck --network metasrvci-dns --entrypoint getent \
  localhost/metasrv:ci \
  hosts metasrvci-dns-target >/dev/null 2>&1 || dns=no
podman rm -f metasrvci-dns-target >/dev/null
podman network rm -f metasrvci-dns >/dev/null
if [[ $dns == no ]]; then
  echo "container names do not resolve on a network of ours (netavark with aardvark-dns installed): no replica could reach etcd" >&2
  exit 1
fi

stage "docker/compose.yaml with podman-compose: etcd and three replicas"
"${compose[@]}" up -d --build >"$work/compose.log" 2>&1 || { tail -n 40 "$work/compose.log"; exit 1; }
ports=(4000 4010 4020)
# The index of the one replica whose /ready says it leads; none: fails.
leader_index() {
  local leaders=() i
  for i in 0 1 2; do
    [[ $(http "http://127.0.0.1:${ports[$i]}/ready") == "200 leader"* ]] && leaders+=("$i")
  done
  ((${#leaders[@]} == 1)) && echo "${leaders[0]}"
}
one_leader() { [[ -n $(leader_index) ]]; }
wait_until 120 "exactly one leader" one_leader
old=$(leader_index)
echo "replica metasrv-$old leads; the others: $(http http://127.0.0.1:${ports[$(((old + 1) % 3))]}/ready)"
container=$(podman ps --format '{{.Names}}' | grep -E "metasrv-${old}([_-]1)?$" | head -n 1)
ttl=5  # The replicas' --lease_ttl (the default).
killed_at=$(date +%s.%N)
podman kill "$container" >/dev/null
# A new leader: one replica other than the killed one says it leads.
new_leader() {
  local i=$(leader_index)
  [[ -n $i && $i != "$old" ]]
}
wait_until $((ttl + 10)) "a new leader" new_leader
took=$(python3 -c "import time; print(f'{time.time() - $killed_at:.2f}')")
echo "killed metasrv-$old; metasrv-$(leader_index) leads after ${took}s (bound: TTL + 2 = $((ttl + 2))s)"
python3 -c "import sys; sys.exit(0 if $took <= $ttl + 2 else 1)"
"${compose[@]}" down -v >/dev/null 2>&1
stage "container checks passed"
