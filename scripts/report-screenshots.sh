#!/usr/bin/env bash
# Regenerates the README's screenshots of --report pages (docs/*.png) with
# headless chromium. Run from the repository root after scripts/build.sh.
set -euo pipefail
bin=${1:-build/bin}
mkdir -p build/models build/docs docs
/usr/bin/python3 bench/gen_gpt.py --layers 2 --hidden 1024 --heads 16 --seq 1024 --vocab 32000 \
  --batch 8 --out build/models/gpt-2l.onnx > /dev/null
"$bin/ridge" analyze build/models/gpt-2l.onnx --dtype bf16 --report build/docs/analyze.html \
  > /dev/null 2>&1
"$bin/ridge" plan test/plan/Inputs/mlp-wide.onnxtxt --devices 8 --global-batch 8192 --show 5 \
  --report build/docs/plan.html > /dev/null
shot() {
  local profile; profile=$(mktemp -d)
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --window-size="$3" --screenshot="$2" "file://$PWD/$1" > /dev/null 2>&1
  rm -rf "$profile"
}
shot build/docs/analyze.html docs/report-analyze.png 1280,1800
shot build/docs/plan.html docs/report-plan.png 1280,1350
ls -la docs/report-*.png
