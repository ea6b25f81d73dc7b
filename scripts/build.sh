#!/usr/bin/env bash
# Configures and builds ridge into build/ (Release). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B "${RIDGE_BUILD_DIR:-build}" -G Ninja -DCMAKE_BUILD_TYPE="${RIDGE_BUILD_TYPE:-Release}" "$@" >/dev/null
ninja -C "${RIDGE_BUILD_DIR:-build}" ${RIDGE_NINJA_ARGS:-}
