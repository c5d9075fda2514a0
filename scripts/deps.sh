#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs, when they are missing.
#   scripts/deps.sh          build and run the server
#   scripts/deps.sh test     also everything the tests and benchmarks use
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev rapidjson-dev prometheus-cpp-dev libzstd-dev libmicrohttpd-dev grpc-proto
  libtomlplusplus-dev libsystemd-dev libpq-dev libmariadb-dev libssl-dev libnghttp2-dev
  libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
)
if [[ "${1:-}" == "test" ]]; then
  # python3-h2, -zstandard and -protobuf: the test client that speaks exactly
  # as GreptimeDB's (tonic) meta client does.
  # postgresql and mariadb-server: the HA tests start their own servers
  # (the packages' own services are not started, see below); prometheus:
  # promtool checks docs/alerts.yaml.
  # golang-go, golang-google-grpc-dev and nghttp2-client: the interop
  # suite's grpc-go client (built offline in GOPATH mode) and raw frames.
  # libseccomp-dev: a test runs the server with netlink sockets forbidden,
  # as the systemd unit runs it. graphviz: the docs' diagrams are checked
  # against their sources.
  packages+=(libseccomp-dev graphviz etcd-server etcd-client openssl python3 python3-h2 python3-zstandard python3-yaml systemd
             python3-protobuf postgresql mariadb-server mariadb-client prometheus
             nftables iproute2
             golang-go golang-google-grpc-dev golang-github-golang-protobuf-1-3-dev
             nghttp2-client)
  # The interop suite's grpc-js client runs on the machine's Node.js and
  # npm; Debian's when there are none.
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "installing: ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "need root to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
# Packaged services (PostgreSQL, MariaDB, etcd, Prometheus) are installed but
# not started: the tests run their own on free loopback ports.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod +x "$policy"
  own_policy=1
fi
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if ((own_policy)); then "${sudo[@]}" rm -f "$policy"; fi
