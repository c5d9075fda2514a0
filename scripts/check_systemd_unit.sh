#!/usr/bin/env bash
# The systemd unit as `cmake --install` lays it out: installs the build
# into a temporary prefix, checks that the unit names the binary and the
# docs under that prefix, has `systemd-analyze verify` check it (any
# complaint fails; verify itself exits 0 on many of them) and
# `systemd-analyze security` score its hardening: at most 3.0 ("OK").
#   bash scripts/check_systemd_unit.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check_systemd_unit.sh BUILD_DIR}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
cmake --install "$build" --prefix "$root/usr/local" >/dev/null
unit=$root/usr/local/lib/systemd/system/metasrv.service
test -x "$root/usr/local/bin/metasrv" || { echo "metasrv not installed" >&2; exit 1; }
test -x "$root/usr/local/bin/metasrvctl" || { echo "metasrvctl not installed" >&2; exit 1; }
test -f "$root/usr/local/share/doc/metasrv/metasrv.example.toml" ||
  { echo "example config not installed" >&2; exit 1; }
test -f "$unit" || { echo "unit not installed" >&2; exit 1; }
# The installed example config is one the binary accepts.
"$root/usr/local/bin/metasrv" -c "$root/usr/local/share/doc/metasrv/metasrv.example.toml" \
  --print_config >/dev/null
# The install prefix reached the unit: its binary and its documentation.
grep -qx "ExecStart=$root/usr/local/bin/metasrv -c /etc/metasrv/metasrv.toml" "$unit" ||
  { echo "ExecStart does not name the installed binary:" >&2; grep ExecStart "$unit" >&2; exit 1; }
# The alerts' runbook links point at this install's OPERATIONS.md (or at
# -DMETASRV_RUNBOOK_BASE).
alerts=$root/usr/local/share/doc/metasrv/docs/alerts.yaml
test -f "$alerts" || { echo "alerts.yaml not installed" >&2; exit 1; }
runbooks=$(grep -c "runbook_url: \"file://$root/usr/local/share/doc/metasrv/docs/OPERATIONS.md#" "$alerts" || true)
[[ $runbooks -gt 0 && $runbooks -eq $(grep -c "runbook_url:" "$alerts") ]] ||
  { echo "alerts.yaml's runbook links do not point at the installed OPERATIONS.md:" >&2
    grep "runbook_url:" "$alerts" >&2; exit 1; }
doc=$(sed -n 's|^Documentation=file://||p' "$unit")
test -f "$doc" || { echo "Documentation=$doc is not installed" >&2; exit 1; }
# Every relative link of the installed docs leads somewhere, and the
# dashboard is there.
python3 "$(dirname "$0")/../tests/docs/link_check.py" "$root/usr/local/share/doc/metasrv" >/dev/null ||
  { python3 "$(dirname "$0")/../tests/docs/link_check.py" "$root/usr/local/share/doc/metasrv" >&2; exit 1; }
test -f "$root/usr/local/share/doc/metasrv/docs/grafana/metasrv-dashboard.json" ||
  { echo "the Grafana dashboard is not installed" >&2; exit 1; }
sed -i "s|/etc/metasrv/metasrv.toml|$root/usr/local/share/doc/metasrv/metasrv.example.toml|" "$unit"
out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out" >&2; exit 1; }
if [[ -n "$out" ]]; then echo "$out" >&2; exit 1; fi
score=$(systemd-analyze security --offline=yes "$unit" 2>&1 |
  sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
[[ -n "$score" ]] || { echo "systemd-analyze security gave no score" >&2; exit 1; }
awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }' ||
  { systemd-analyze security --offline=yes "$unit" >&2; echo "exposure $score > 3.0" >&2; exit 1; }
echo "systemd unit OK (exposure $score): $unit"
