#!/usr/bin/env bash
# The layering rule: kv/ includes nothing from core/, server/ or cli/; core/
# nothing from server/ or cli/; inside server/, each folder includes only
# itself and the folders before it in SERVER_ORDER (so no two include each
# other), and none includes the top (metasrv_server.h). Prints every include
# that breaks it; fails if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
check() {
  local layer=$1 forbidden=$2
  local found
  found=$(grep -rnE "#include \"(${forbidden})[/.]" "$layer" --include='*.h' --include='*.cc' || true)
  if [[ -n "$found" ]]; then
    echo "layering: ${layer}/ must not include ${forbidden//|/, }:" >&2
    echo "$found" >&2
    status=1
  fi
}
check kv 'core|server|cli'
check core 'server|cli'

# Lowest first: ops (metrics, HTTP, logging, addresses), rpc (gRPC
# plumbing), codec (answer encodings), election, watch, services, config
# (the settings); server/metasrv_server.* and main.cc above them all.
SERVER_ORDER=(ops rpc codec election watch services config)
for ((i = 0; i < ${#SERVER_ORDER[@]}; i++)); do
  folder=${SERVER_ORDER[i]}
  higher=("${SERVER_ORDER[@]:i+1}")
  forbidden="server/metasrv_server"
  for h in "${higher[@]}"; do forbidden+="|server/${h}"; done
  check "server/${folder}" "${forbidden}"
done
# Every folder of server/ has its place in the order.
for dir in server/*/; do
  name=$(basename "$dir")
  if [[ ! " ${SERVER_ORDER[*]} " =~ " ${name} " ]]; then
    echo "layering: server/${name}/ is not in SERVER_ORDER" >&2
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "layering: kv/, core/ and server/'s folders include only what lies below them"
exit $status
