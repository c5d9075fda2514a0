#!/usr/bin/env bash
# Installs what is missing, builds, and starts the standalone metasrv on its
# embedded in-memory KV (127.0.0.1:3002 unless flags say otherwise).
#   scripts/run.sh [metasrv flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh \
  -DMETASRV_BUILD_TESTS=OFF -DMETASRV_BUILD_BENCH=OFF
bash scripts/next_steps.sh "${BUILD_DIR:-build}/server/metasrv" "$@"
exec "${BUILD_DIR:-build}/server/metasrv" "$@"
