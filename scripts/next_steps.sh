#!/usr/bin/env bash
# What to do once the server runs, for the addresses its flags give: printed
# by scripts/run.sh before it starts the server.
#   scripts/next_steps.sh METASRV_BINARY [metasrv flags...]
set -euo pipefail
binary=${1:?usage: next_steps.sh METASRV_BINARY [flags...]}
shift
config=$("$binary" "$@" --print_config 2>/dev/null) || exit 0  # It says why.
value() {  # value SECTION KEY: the quoted value of KEY in [SECTION].
  awk -v section="[$1]" -v key="$2" '
    /^\[/ { in_section = ($0 == section); next }
    in_section && $1 == key { gsub(/^[^=]*= *'\''|'\''$/, ""); print; exit }' <<<"$config"
}
grpc=$(value grpc bind_addr)
http=$(value http addr)
# A wildcard bind is dialled on loopback from this machine.
grpc=${grpc/#0.0.0.0:/127.0.0.1:}
grpc=${grpc/#\[::\]:/[::1]:}
http=${http/#0.0.0.0:/127.0.0.1:}
ctl=$(dirname "$(dirname "$binary")")/cli/metasrvctl
mode="standalone: in-memory KV, no store"
if ! grep -qx "store_addrs = \[\]" <<<"$config"; then
  mode="one replica of an HA cluster: it leads once elected"
fi
cat <<TEXT
metasrv starts on $grpc ($mode). Next, in another terminal:
  $ctl --addr=$grpc health     # SERVING
  $ctl --addr=$grpc get        # the flow state (empty until flownodes report)
TEXT
if [[ -n "$http" ]]; then
  echo "  curl -s http://$http/metrics | grep ^metasrv_   # metrics; /health and /ready beside"
fi
cat <<TEXT
  GreptimeDB: set meta_client.metasrv_addrs = ["$grpc"] in its flownode and frontend configs.
  More: README.md ("Pointing a GreptimeDB cluster at it"), docs/OPERATIONS.md. Ctrl-C stops it.

TEXT
