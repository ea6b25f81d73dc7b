#!/usr/bin/env bash
# README command 2: install what is missing, build, run every test (lit + unit).
# With --sanitize: the same in a Debug build with ASan and UBSan (build-asan/).
# With --tsan: the same with ThreadSanitizer (build-tsan/, optimized: the
# threads of ridge plan).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
dir=build
if [[ "${1:-}" == "--sanitize" ]]; then
  dir=build-asan
  RIDGE_BUILD_DIR=$dir RIDGE_BUILD_TYPE=Debug scripts/build.sh -DRIDGE_SANITIZE=ON -DCMAKE_CXX_COMPILER=clang++ >/dev/null
elif [[ "${1:-}" == "--tsan" ]]; then
  dir=build-tsan
  RIDGE_BUILD_DIR=$dir RIDGE_BUILD_TYPE=RelWithDebInfo scripts/build.sh -DRIDGE_TSAN=ON -DCMAKE_CXX_COMPILER=clang++ >/dev/null
  export TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}"
else
  scripts/build.sh >/dev/null
fi
ninja -C "$dir" ridge-unittests >/dev/null
log=$(mktemp)
set +e
/usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv "$dir/test" "$dir/test/unit" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# One plain summary line: "N passed, N failed".
/usr/bin/python3 - "$log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
count = lambda k: sum(int(n) for n in re.findall(r"^\s*%s\s*:\s*(\d+)" % k, text, re.M))
passed = count("Passed") + count("Expectedly Failed")
failed = count("Failed") + count("Unexpectedly Passed") + count("Unresolved") + count("Timed Out")
print(f"lit: {passed} passed, {failed} failed")
PY
rm -f "$log"
exit "$rc"
