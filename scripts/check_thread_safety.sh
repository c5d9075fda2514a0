#!/usr/bin/env bash
# The lock annotations, checked: clang's -Wthread-safety -Werror over every
# source file of kv/, core/, server/ and cli/, as compiled in BUILD_DIR (its
# compile_commands.json, with the generated headers already built). Syntax
# and semantic analysis only (-fsyntax-only): what the analysis needs,
# without generating code, so it takes a minute rather than a clang build.
# (cmake -DMETASRV_THREAD_SAFETY=ON with CXX=clang++ is the same check as a
# full build.)
#   bash scripts/check_thread_safety.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: check_thread_safety.sh BUILD_DIR}
/usr/bin/python3 - "$build/compile_commands.json" "$PWD" <<'PY' |
import json, shlex, sys
commands, root = sys.argv[1], sys.argv[2]
for entry in json.load(open(commands)):
    path = entry["file"]
    rel = path[len(root) + 1:] if path.startswith(root + "/") else ""
    if not rel.split("/")[0] in ("kv", "core", "server", "cli"):
        continue
    args = shlex.split(entry["command"])[1:]
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a == path:
            continue
        out.append(a)
    out += ["-fsyntax-only", "-Wthread-safety", "-Wthread-safety-beta",
            "-Werror", "-Wno-unknown-warning-option", path]
    # One line per file: the directory, then clang++'s arguments.
    print(shlex.quote(entry["directory"]) + " " + " ".join(shlex.quote(a) for a in out))
PY
  xargs -P "$(nproc)" -L 1 bash -c 'cd "$0" && clang++ "$@"'
echo "thread-safety analysis: no findings"
