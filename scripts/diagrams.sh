#!/usr/bin/env bash
# Renders docs/diagrams/*.dot to SVG beside them with graphviz (Debian's
# `graphviz` package). With --check, renders to a temporary folder and fails
# if a committed SVG differs from its source's rendering.
#   scripts/diagrams.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/../docs/diagrams"
command -v dot >/dev/null || { echo "diagrams: needs graphviz (apt-get install graphviz)" >&2; exit 1; }
status=0
for source in *.dot; do
  svg=${source%.dot}.svg
  if [[ ${1:-} == --check ]]; then
    if ! dot -Tsvg "$source" | cmp -s - "$svg"; then
      echo "diagrams: $svg is not the rendering of $source (run scripts/diagrams.sh)" >&2
      status=1
    fi
  else
    dot -Tsvg "$source" -o "$svg"
  fi
done
[[ $status -eq 0 && ${1:-} == --check ]] && echo "diagrams: every SVG is its source's rendering"
exit $status
