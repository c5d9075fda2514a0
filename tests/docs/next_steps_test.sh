#!/usr/bin/env bash
# scripts/run.sh's first screen (scripts/next_steps.sh): for a server started
# with the same flags, every metasrvctl line it prints runs and succeeds
# (health says SERVING) and the metrics URL it prints answers with metasrv_
# metrics.
#   next_steps_test.sh METASRV_BINARY
set -euo pipefail
binary=${1:?usage: next_steps_test.sh METASRV_BINARY}
cd "$(dirname "$0")/../.."
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
grpc=$(free_port)
http=$(free_port)
flags=(--bind_addr=127.0.0.1:$grpc --metrics_addr=127.0.0.1:$http)
screen=$(bash scripts/next_steps.sh "$binary" "${flags[@]}")
echo "$screen"
"$binary" "${flags[@]}" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 200); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$http/health', timeout=1)" 2>/dev/null && break
  sleep 0.05
done
ran=0
while read -r line; do
  command=${line%%#*}
  out=$(bash -c "$command") || { echo "failed: $command" >&2; exit 1; }
  if [[ $command == *" health"* && $out != "SERVING" ]]; then
    echo "health said '$out'" >&2
    exit 1
  fi
  ran=$((ran + 1))
done < <(grep -E '^  [^ ]*metasrvctl ' <<<"$screen")
[[ $ran -ge 2 ]] || { echo "no metasrvctl step on the screen" >&2; exit 1; }
url=$(grep -oE 'http://[^ ]+/metrics' <<<"$screen")
[[ $url == "http://127.0.0.1:$http/metrics" ]] || { echo "metrics URL '$url'" >&2; exit 1; }
python3 -c "import urllib.request,sys; body=urllib.request.urlopen('$url', timeout=5).read().decode(); sys.exit(0 if 'metasrv_is_leader 1' in body else 1)" ||
  { echo "$url has no metasrv_is_leader 1" >&2; exit 1; }
grep -q "metasrv_addrs = \[\"127.0.0.1:$grpc\"\]" <<<"$screen" ||
  { echo "no GreptimeDB setting for 127.0.0.1:$grpc" >&2; exit 1; }
echo "next steps: $ran metasrvctl commands ran, the metrics URL answered"
