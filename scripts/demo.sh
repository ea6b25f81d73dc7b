#!/usr/bin/env bash
# README command 1: install what is missing, build, analyze the example model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh >/dev/null
exec build/bin/ridge analyze examples/mlp.onnxtxt --dim batch=32 "$@"
