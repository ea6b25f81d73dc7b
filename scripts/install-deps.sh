#!/usr/bin/env bash
# Installs the Debian 12 packages ridge needs to build and test; idempotent (skips what is present).
# Usage: scripts/install-deps.sh [--validation]   (--validation adds python3-torch for validate/ scripts)
set -euo pipefail
pkgs=(cmake ninja-build g++ clang llvm-19-dev llvm-19-tools libonnx-dev libprotobuf-dev
      protobuf-compiler libfmt-dev zlib1g-dev libzstd-dev libncurses-dev googletest libgtest-dev libonnx-testdata librsvg2-bin
      python3-onnx python3-numpy pybind11-dev python3-dev python3-pytest chromium)
if [[ "${1:-}" == "--validation" ]]; then pkgs+=(python3-torch python3-torchvision); fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
