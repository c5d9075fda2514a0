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
# The configuration names backends by their settings only: it reaches into
# none of them (the store addresses it checks are parsed in ops/, below both).
check server/config 'server/election'
# A lower layer does not know the names of a higher one, in code or in
# comments: no class of server/ and no RPC of proto/ is named in core/ or
# kv/ (unless core or kv has a name of its own that is spelled the same),
# and no class of core/ in kv/.
names=$(/usr/bin/python3 - <<'PY'
import glob, re, subprocess
def declared(pattern, methods=False):
    out = set()
    for f in glob.glob(pattern, recursive=True):
        text = open(f, encoding="utf-8").read()
        out |= set(re.findall(r"^\s*(?:class|struct|enum class)\s+([A-Z][A-Za-z0-9]+)", text, re.M))
        if methods:
            out |= set(re.findall(r"\b([A-Z][A-Za-z0-9]+)\(", text))
    return out
def camel(names):  # Two capitals at least: a name, not a word.
    return {n for n in names if len(re.findall("[A-Z]", n)) >= 2}
rpcs = set()
for f in glob.glob("proto/**/*.proto", recursive=True):
    rpcs |= set(re.findall(r"^\s*rpc\s+([A-Za-z0-9]+)\s*\(", open(f, encoding="utf-8").read(), re.M))
lower = declared("core/**/*.h", True) | declared("kv/**/*.h", True)
for name in sorted(camel(declared("server/**/*.h") | rpcs) - lower):
    print("core|kv", name)
for name in sorted(camel(declared("core/**/*.h")) - declared("kv/**/*.h", True)):
    print("kv", name)
PY
)
while read -r dirs name; do
  [[ -z "$name" ]] && continue
  found=$(grep -rnw "$name" ${dirs//|/ } --include='*.h' --include='*.cc' || true)
  if [[ -n "$found" ]]; then
    echo "layering: ${dirs//|/ and } name ${name}, a name of a higher layer:" >&2
    echo "$found" >&2
    status=1
  fi
done <<<"$names"
[[ $status -eq 0 ]] && echo "layering: kv/, core/ and server/'s folders include only what lies below them; config/ reaches into no backend; kv/ and core/ name nothing above them"
exit $status
