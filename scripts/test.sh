#!/usr/bin/env bash
# Installs what is missing, builds everything, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh test
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh \
  -DMETASRV_BUILD_TESTS=ON -DMETASRV_BUILD_BENCH=ON
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" --timeout 600
