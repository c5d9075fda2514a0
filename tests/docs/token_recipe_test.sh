#!/usr/bin/env bash
# The admin-token recipe of the docs (the indented block after
# "<!-- recipe: admin-token -->"), run as written with /etc/metasrv moved
# into a temporary folder and the unit's group `metasrv` played by
# `nogroup`; then the server is started as user nobody, group nogroup (as
# the unit starts it as metasrv:metasrv) and must serve (it reads the
# token file at start, and exits 2 when it cannot). The old recipe (a root-owned mode-600 file) must make it exit 2,
# which shows that the user really cannot read what root alone may.
#   token_recipe_test.sh METASRV_BINARY DOC...
set -euo pipefail
binary=${1:?usage: token_recipe_test.sh METASRV_BINARY DOC...}
shift
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: needs root (chgrp, setpriv)"
  exit 77
fi
recipe=$(awk '/<!-- recipe: admin-token -->/ { on = 1; next }
              on && /^    / { sub(/^    /, ""); print; next }
              on { exit }' "$@")
[[ -n "$recipe" ]] || { echo "no admin-token recipe in $*" >&2; exit 1; }
root=$(mktemp -d)
pid=
cleanup() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$root"
}
trap cleanup EXIT
chmod 0755 "$root"
mkdir -p "$root/etc"
cp "$binary" "$root/metasrv"
chmod 0755 "$root/metasrv"
run=${recipe//\/etc\/metasrv/$root/etc/metasrv}
run=$(sed -E 's/(-g|chgrp) metasrv /\1 nogroup /g' <<<"$run")
echo "running the recipe:"
echo "$run"
bash -euo pipefail -c "$run"
token=$root/etc/metasrv/admin.token
[[ $(stat -c '%U:%G %a' "$token") == "root:nogroup 640" ]] ||
  { echo "token file is $(stat -c '%U:%G %a' "$token")" >&2; exit 1; }

as_service=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$root/log
"${as_service[@]}" "$root/metasrv" --bind_addr=127.0.0.1:$port \
  --metrics_addr=127.0.0.1:0 --admin_token_file="$token" >"$log" 2>&1 &
pid=$!
deadline=$((SECONDS + 20))
until grep -q "serving on 127.0.0.1:$port" "$log"; do
  if ! kill -0 "$pid" 2>/dev/null || ((SECONDS > deadline)); then
    echo "metasrv did not serve as nobody:nogroup with the recipe's token:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
kill "$pid"
wait "$pid" || true
pid=
echo "served as nobody:nogroup with the recipe's token file"

# The old recipe: root-owned, mode 600. The service's user cannot read it.
old=$root/etc/metasrv/old.token
(umask 077 && openssl rand -hex 32 >"$old")
status=0
"${as_service[@]}" "$root/metasrv" --bind_addr=127.0.0.1:$port \
  --metrics_addr=127.0.0.1:0 --admin_token_file="$old" >"$log" 2>&1 || status=$?
[[ $status -eq 2 ]] ||
  { echo "a root-only token file gave exit $status, not 2:" >&2; cat "$log" >&2; exit 1; }
echo "a root-only token file exits 2, as the recipe says"
