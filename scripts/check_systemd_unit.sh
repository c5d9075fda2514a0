#!/usr/bin/env bash
# The systemd unit as `cmake --install` lays it out: installs the build
# into a temporary prefix, points the unit's ExecStart there, and has
# `systemd-analyze verify` check it. Any complaint fails (verify itself exits
# 0 on many of them).
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
sed -i "s|/usr/local/bin/metasrv|$root/usr/local/bin/metasrv|; s|/etc/metasrv/metasrv.toml|$root/usr/local/share/doc/metasrv/metasrv.example.toml|" "$unit"
out=$(systemd-analyze verify "$unit" 2>&1) || { echo "$out" >&2; exit 1; }
if [[ -n "$out" ]]; then echo "$out" >&2; exit 1; fi
echo "systemd unit OK: $unit"
