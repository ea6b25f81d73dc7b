#!/usr/bin/env bash
# Fuzzes ridge's input parsers with libFuzzer, each for a bounded time, and
# prints what was found. See test/fuzz/README.md.
#
# Usage: scripts/fuzz.sh [--time SECONDS] [--fresh] [--no-infer] [binary|text|bytes|device ...]
#   --time SECONDS  per target (default 60, or $RIDGE_FUZZ_SECONDS)
#   --fresh         start from the seed corpus alone (drop the corpus that
#                   earlier runs grew in $RIDGE_FUZZ_BUILD_DIR/fuzz/corpus)
#   --no-infer      loaders skip ONNX shape inference (RIDGE_FUZZ_INFER_SHAPES=0):
#                   fuzz ridge's own code past inputs that crash ONNX 1.12
#   targets         default: all four (bytes: the Python module's in-memory input)
# Env: RIDGE_FUZZ_BUILD_DIR (default build-fuzz), RIDGE_NINJA_ARGS (e.g. -j1).
#
# One fuzzing process at a time (libFuzzer -fork=1: a child fuzzes while the
# parent restarts it after each crash, so one bug does not end the run).
# Every distinct finding (deduplicated by its sanitizer report's top frames) is
# copied to test/fuzz/findings/TARGET/ with its report beside it (.txt).
# Exit status: 0 if nothing was found, 1 if anything was, 2 on a setup error.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

secs=${RIDGE_FUZZ_SECONDS:-60}
fresh=0
targets=()
while (($#)); do
  case "$1" in
    --time) secs=$2; shift 2 ;;
    --time=*) secs=${1#--time=}; shift ;;
    --fresh) fresh=1; shift ;;
    --no-infer) export RIDGE_FUZZ_INFER_SHAPES=0; shift ;;
    binary|text|bytes|device) targets+=("$1"); shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=(binary text bytes device)
[[ "$secs" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --time wants whole seconds" >&2; exit 2; }

scripts/install-deps.sh

B=${RIDGE_FUZZ_BUILD_DIR:-build-fuzz}
W=$B/fuzz # seeds, corpora, artifacts, logs, dictionaries
TESTDATA=/usr/include/onnx/backend/test/data/node
LLVM_BIN=/usr/lib/llvm-19/bin

declare -A BIN=([binary]=fuzz-binary-loader [text]=fuzz-text-loader [bytes]=fuzz-bytes-loader
                [device]=fuzz-device-yaml)
declare -A MAXLEN=([binary]=16384 [text]=8192 [bytes]=16384 [device]=8192)

# --- Build ------------------------------------------------------------------
# RIDGE_SANITIZE instruments everything with ASan+UBSan. -fsanitize=fuzzer-no-link
# (coverage for libFuzzer) on everything is what the top-level CMakeLists.txt
# adds under RIDGE_FUZZ; passing it here as well is harmless.
echo "fuzz.sh: configuring $B (clang++, ASan+UBSan+libFuzzer)" >&2
cmake -S . -B "$B" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRIDGE_FUZZ=ON -DRIDGE_SANITIZE=ON -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link >/dev/null
run_targets=()
for t in "${targets[@]}"; do
  echo "fuzz.sh: building ${BIN[$t]}" >&2
  if ninja -C "$B" ${RIDGE_NINJA_ARGS:-} "${BIN[$t]}" >"$B/fuzz-build-$t.log" 2>&1; then
    run_targets+=("$t")
  else
    tail -30 "$B/fuzz-build-$t.log" >&2
    echo "fuzz.sh: ${BIN[$t]} failed to build (log: $B/fuzz-build-$t.log)" >&2
    exit 2
  fi
done

# --- Seed corpora -----------------------------------------------------------
rm -rf "$W/seeds" "$W/artifacts" "$W/logs"
mkdir -p "$W/seeds" "$W/artifacts" "$W/logs" "$W/dicts"
((fresh)) && rm -rf "$W/corpus"

# N paths spread evenly over the sorted list on stdin.
spread() { awk -v n="$1" '{ a[NR] = $0 } END { if (NR <= n) { for (i = 1; i <= NR; i++) print a[i] }
  else { for (i = 0; i < n; i++) print a[1 + int(i * NR / n)] } }'; }

seed_binary() {
  local d=$W/seeds/binary i=0 f
  mkdir -p "$d"
  cp test/Inputs/*.onnx "$d/"
  # About 50 small models of different ops from ONNX's own test data.
  while read -r f; do
    cp "$f" "$d/$(basename "$(dirname "$f")").onnx"
  done < <(find "$TESTDATA" -name model.onnx -size -2049c 2>/dev/null | sort | spread 50)
}

seed_text() {
  local d=$W/seeds/text f
  mkdir -p "$d"
  while read -r f; do cp "$f" "$d/$(echo "${f#test/}" | tr / _)"; done \
    < <(find test -name '*.onnxtxt' -not -path 'test/fuzz/*' -not -path 'test/Inputs/fuzz/*' | sort)
  # The `//--- NAME.onnxtxt` sections of split-file tests.
  while read -r f; do
    local tmp=$W/seeds/split
    rm -rf "$tmp" && "$LLVM_BIN/split-file" "$f" "$tmp" 2>/dev/null || continue
    for s in "$tmp"/*.onnxtxt; do [[ -f $s ]] && cp "$s" "$d/split_$(basename "$s")"; done
    rm -rf "$tmp"
  done < <(grep -rl --include='*.test' -e '^//--- .*\.onnxtxt' test | sort)
  # ONNX 1.12 has no Python printer for its text syntax: write ~100 of the
  # test-data models in it (a subset of the syntax, enough for seeds).
  cat >"$W/totext.py" <<'PY'
import os, re, sys
import numpy as np
import onnx
from onnx import numpy_helper

ID = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
ELEM = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
        8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
        16: "bfloat16"}

class Skip(Exception):
    pass

def ident(s):
    if not ID.match(s):
        raise Skip()
    return s

def flt(v):
    if not np.isfinite(v):
        raise Skip()
    return repr(float(v))

def ttype(t):
    k = t.WhichOneof("value")
    if k == "tensor_type":
        e = ELEM.get(t.tensor_type.elem_type)
        if not e:
            raise Skip()
        if not t.tensor_type.HasField("shape"):
            return e
        dims = []
        for d in t.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                dims.append(str(d.dim_value))
            elif d.HasField("dim_param"):
                dims.append(ident(d.dim_param))
            else:
                raise Skip()
        return e + "[" + ",".join(dims) + "]"
    if k == "sequence_type":
        return "seq(" + ttype(t.sequence_type.elem_type) + ")"
    if k == "optional_type":
        return "optional(" + ttype(t.optional_type.elem_type) + ")"
    raise Skip()

def vis(lst):
    return ", ".join(ttype(v.type) + " " + ident(v.name) for v in lst)

def tensor(t):
    e = ELEM.get(t.data_type)
    if not e or e in ("string", "float16", "bfloat16"):
        raise Skip()
    a = numpy_helper.to_array(t).ravel()
    if a.size > 64:
        raise Skip()
    vals = [flt(x) if e in ("float", "double") else str(int(x)) for x in a]
    return e + "[" + ",".join(str(d) for d in t.dims) + "] {" + ", ".join(vals) + "}"

def attr(a):
    T = onnx.AttributeProto
    if a.type == T.FLOAT: v = flt(a.f)
    elif a.type == T.INT: v = str(a.i)
    elif a.type == T.STRING:
        s = a.s.decode("utf-8", "replace")
        if '"' in s or "\\" in s: raise Skip()
        v = '"' + s + '"'
    elif a.type == T.INTS and a.ints: v = "[" + ", ".join(str(x) for x in a.ints) + "]"
    elif a.type == T.FLOATS and a.floats: v = "[" + ", ".join(flt(x) for x in a.floats) + "]"
    elif a.type == T.STRINGS and a.strings:
        v = "[" + ", ".join('"' + s.decode("utf-8", "replace") + '"' for s in a.strings) + "]"
    elif a.type == T.TENSOR: v = tensor(a.t)
    elif a.type == T.GRAPH: v = graph(a.g, "  ")
    else: raise Skip()
    return ident(a.name) + " = " + v

def node(n):
    outs = ", ".join(ident(o) if o else "" for o in n.output)
    op = (n.domain + "." if n.domain else "") + ident(n.op_type)
    at = " <" + ", ".join(attr(a) for a in n.attribute) + ">" if n.attribute else ""
    ins = ", ".join(ident(i) if i else "" for i in n.input)
    return outs + " = " + op + at + " (" + ins + ")"

def graph(g, ind=""):
    if g.initializer or g.sparse_initializer:
        raise Skip()
    body = "\n".join(ind + "  " + node(n) for n in g.node)
    return (ident(g.name) + " (" + vis(g.input) + ") => (" + vis(g.output) + ")\n" +
            ind + "{\n" + body + "\n" + ind + "}")

def model(m):
    if m.functions:
        raise Skip()
    ops = ", ".join('"%s" : %d' % (o.domain, o.version) for o in m.opset_import)
    return "<ir_version: %d, opset_import: [%s]>\n%s\n" % (m.ir_version, ops, graph(m.graph))

out, written, skipped = sys.argv[1], 0, 0
for path in sys.argv[2:]:
    try:
        text = model(onnx.load(path))
    except Skip:
        skipped += 1
        continue
    name = os.path.basename(os.path.dirname(path)) + ".onnxtxt"
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
    written += 1
print("text seeds from ONNX test data: %d written, %d skipped" % (written, skipped))
PY
  find "$TESTDATA" -name model.onnx -size -8193c 2>/dev/null | sort | spread 100 |
    xargs -r /usr/bin/python3 "$W/totext.py" "$d" 2>&1 | sed 's/^/fuzz.sh: /' >&2 || true
}

seed_bytes() { # binary and text models alike: openBuffer tells them apart
  local d=$W/seeds/bytes
  [[ -d $W/seeds/binary ]] || seed_binary
  [[ -d $W/seeds/text ]] || seed_text
  mkdir -p "$d"
  cp "$W/seeds/binary/"* "$W/seeds/text/"* "$d/"
}

seed_device() {
  mkdir -p "$W/seeds/device"
  cp devices/*.yaml "$W/seeds/device/"
}

# libFuzzer dictionaries: tokens mutations should insert whole.
dict() { local t; for t in "$@"; do printf '"%s"\n' "$(printf '%s' "$t" | sed 's/\\/\\\\/g; s/"/\\"/g')"; done; }
dict ir_version opset_import producer_name producer_version domain model_version doc_string \
  metadata_props seq map optional sparse_tensor float uint8 int8 uint16 int16 int32 int64 \
  string bool float16 double uint32 uint64 complex64 complex128 bfloat16 '=>' '<' '>' '{' '}' \
  '(' ')' '[' ']' ',' ':' '=' '""' '"" : 17' '#' '.' 'ai.onnx' 'ai.onnx.ml' If Loop Scan \
  Constant Reshape MatMul Gemm Conv Add Relu Split Concat then_branch else_branch body value \
  axis axes shape '1e308' '-9223372036854775808' '18446744073709551616' >"$W/dicts/text.dict"
{
  grep -ohE '^\s*[a-z_0-9]+:' devices/*.yaml | tr -d ' :' | sort -u | while read -r k; do dict "$k:"; done
  dict '---' '...' '- ' ': ' '[' ']' '{' '}' '&a ' '*a' '!!str ' '!!float ' '|' '>' '~' null true \
    false '.inf' '-.inf' '.nan' 1e400 -1 0 0x10 '1e-400' '"' "'" '#' '? ' '%YAML 1.2'
} >"$W/dicts/device.dict"

# --- Fuzz ---------------------------------------------------------------------
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# A finding's key for deduplication: the sanitizer's kind of error and the top
# three frames that are ridge's or ONNX's, not the runtime's (named where the
# symbolizer knows the function, else module+offset).
signature() {
  awk '
    /^SUMMARY:/ && k == "" { k = $2 " " $3; if ($3 ~ /^[0-9]/) k = $2 " leak" }
    /^ *#[0-9]+ 0x[0-9a-f]+ / && n < 3 {
      f = $0
      if (match(f, / in /)) {
        f = substr(f, RSTART + 4)
        sub(/ \(BuildId: [0-9a-f]+\)$/, "", f); sub(/ \/.*$/, "", f); sub(/ \([^ ]*[+]0x[0-9a-f]+\)$/, "", f)
      } else if (match(f, /\([^ ()]*[+]0x[0-9a-f]+\)/)) {
        f = substr(f, RSTART + 1, RLENGTH - 2); sub(/^.*\//, "", f)
      }
      if (f ~ /^(__sanitizer|__asan|__ubsan|__interceptor|__libc|__GI_|fuzzer::|abort|raise|gsignal|malloc|calloc|realloc|operator new|_start|main$|LLVMFuzzerTestOneInput)/) next
      sig = sig " | " f; n++
    }
    END { print k sig }' "$1"
}

summary=()
found_any=0
for t in "${run_targets[@]}"; do
  bin=$B/bin/${BIN[$t]}
  "seed_$t"
  corpus=$W/corpus/$t art=$W/artifacts/$t log=$W/logs/$t.log
  mkdir -p "$corpus" "$art"
  nseeds=$(find "$W/seeds/$t" -type f | wc -l)
  echo "fuzz.sh: ${BIN[$t]}: ${secs}s from $nseeds seeds + $(find "$corpus" -type f | wc -l) corpus files" >&2
  dictopt=()
  [[ -s $W/dicts/$t.dict ]] && dictopt=(-dict="$W/dicts/$t.dict")
  # Input files go to a folder of their own (in RAM where possible), removed
  # afterwards: a crashed process cannot clean up after itself.
  shm=/tmp; [[ -w /dev/shm ]] && shm=/dev/shm
  tmpdir=$(mktemp -d "$shm/ridge-fuzz-$t.XXXXXX")
  start=$(date +%s)
  RIDGE_FUZZ_TMPDIR=$tmpdir "$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -max_len="${MAXLEN[$t]}" \
    "${dictopt[@]}" -artifact_prefix="$art/" "$corpus" "$W/seeds/$t" >"$log" 2>&1 || true
  ran=$(($(date +%s) - start))
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -1 || true)
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  cov=$(sed -nE 's/.* cov: ([0-9]+) .*/\1/p' <<<"$last")
  corp=$(find "$corpus" -type f | wc -l)

  # Triage: reproduce each crash/leak (smallest first, at most 40), keep the
  # smallest input per signature; timeouts and OOMs: the smallest of each kind.
  findings=$ROOT/test/fuzz/findings/$t
  declare -A seen=()
  ncrash=0 ntimeout=0 noom=0 distinct=0
  while read -r a; do
    [[ -n $a ]] || continue
    kind=$(basename "$a"); kind=${kind%%-*}
    case $kind in crash|leak) ncrash=$((ncrash + 1)) ;; timeout|slow) ntimeout=$((ntimeout + 1)) ;; oom) noom=$((noom + 1)) ;; esac
    if [[ $kind == crash || $kind == leak ]] && ((ncrash <= 40)); then
      RIDGE_FUZZ_TMPDIR=$tmpdir timeout 120 "$bin" -rss_limit_mb=2048 -timeout=10 "$a" >"$a.txt" 2>&1 || true
      key=$(signature "$a.txt")
    else
      key=$kind
    fi
    [[ -n ${seen[$key]:-} ]] && continue
    seen[$key]=1
    distinct=$((distinct + 1))
    mkdir -p "$findings"
    cp "$a" "$findings/"
    [[ -f $a.txt ]] && cp "$a.txt" "$findings/"
    echo "fuzz.sh: ${BIN[$t]}: finding $(basename "$a") ($(stat -c %s "$a") bytes): ${key:0:200}" >&2
  done < <(find "$art" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
             -o -name 'slow-unit-*' -o -name 'oom-*' \) -printf '%s %p\n' | sort -n | cut -d' ' -f2-)
  unset seen
  rm -rf "$tmpdir"
  ((distinct)) && found_any=1
  summary+=("$(printf '%-20s %6s %10s %6s %7s %8s %9s %5s %9s' "${BIN[$t]}" "$ran" "${execs:-?}" \
    "${cov:-?}" "$corp" "$ncrash" "$ntimeout" "$noom" "$distinct")")
done

echo
printf '%-20s %6s %10s %6s %7s %8s %9s %5s %9s\n' target seconds execs cov corpus crashes timeouts ooms distinct
printf '%s\n' "${summary[@]}"
echo "(crashes include leaks; distinct = deduplicated findings copied to test/fuzz/findings/; logs: $W/logs/)"
exit $found_any
