#!/usr/bin/env bash
# The layering rule: kv/ includes nothing from core/, server/ or cli/; core/
# nothing from server/ or cli/. Prints every include that breaks it; fails if
# there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
check() {
  local layer=$1 forbidden=$2
  local found
  found=$(grep -rnE "#include \"(${forbidden})/" "$layer" --include='*.h' --include='*.cc' || true)
  if [[ -n "$found" ]]; then
    echo "layering: ${layer}/ must not include ${forbidden//|/, }:" >&2
    echo "$found" >&2
    status=1
  fi
}
check kv 'core|server|cli'
check core 'server|cli'
[[ $status -eq 0 ]] && echo "layering: kv/ and core/ include only what lies below them"
exit $status
