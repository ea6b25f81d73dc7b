#!/usr/bin/python3
"""Runs `ridge SUBCOMMAND` on every model in Debian's libonnx-testdata and
reports how many load, how many fail cleanly (exit 1 with "ridge: error:"),
and how many crash or hang (anything else). Exit status 1 if any crashed or
hung, or if fewer models than --min-ok succeeded.

  /usr/bin/python3 scripts/sweep-testdata.py --ridge build/bin/ridge [--subcommand print]
"""
import argparse, collections, concurrent.futures, glob, os, re, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--ridge", default="build/bin/ridge")
ap.add_argument("--root", default="/usr/include/onnx/backend/test/data")
ap.add_argument("--subcommand", default="print")
ap.add_argument("--extra", default="", help="extra ridge arguments")
ap.add_argument("--min-ok", type=int, default=0, help="fail if fewer models succeed")
ap.add_argument("--timeout", type=float, default=60)
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--list-errors", action="store_true")
ap.add_argument("--count-modeled", action="store_true",
                help="also cost every model (print<cost>) and count those fully modeled")
ap.add_argument("--min-modeled", type=int, default=0,
                help="fail if fewer models are fully modeled")
args = ap.parse_args()

models = sorted(glob.glob(os.path.join(args.root, "*", "*", "model.onnx")))
if not models:
    sys.exit(f"sweep: no models under {args.root} (is libonnx-testdata installed?)")


def run(path):
    if args.count_modeled:
        cmd = [args.ridge, "run", path, "--passes=print<cost>"] + args.extra.split()
    else:
        cmd = [args.ridge, args.subcommand, path, "-o", os.devnull] + args.extra.split()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return path, "hang", ""
    if p.returncode == 0:
        if args.count_modeled:
            m = re.search(r"^coverage: (\d+) of (\d+) nodes modeled", p.stdout, re.M)
            full = bool(m) and m.group(1) == m.group(2)
            unmodeled = re.findall(r"^unmodeled: (.*) x\d+$", p.stdout, re.M)
            return path, "ok", ("FULL" if full else "PARTIAL:" + "; ".join(unmodeled))
        return path, "ok", p.stderr
    if p.returncode == 1 and "ridge: error:" in p.stderr:
        return path, "error", p.stderr
    return path, "crash", f"exit {p.returncode}: {p.stderr[-400:]}"


with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
    results = list(ex.map(run, models))

counts = collections.Counter(kind for _, kind, _ in results)
by_suite = collections.defaultdict(collections.Counter)
for path, kind, _ in results:
    by_suite[path.split(os.sep)[-3]][kind] += 1
print(f"sweep: {len(models)} models: {counts['ok']} ok, {counts['error']} clean errors, "
      f"{counts['crash']} crashed, {counts['hang']} timed out")
for suite in sorted(by_suite):
    c = by_suite[suite]
    print(f"  {suite:<18} {sum(c.values()):5} models: {c['ok']} ok, {c['error']} errors, "
          f"{c['crash']} crashed, {c['hang']} timed out")
# Why the rest do not load: the error message with the file name and value
# names stripped, grouped.
reasons = collections.Counter()
for path, kind, err in results:
    if kind == "ok":
        continue
    line = next((l for l in err.splitlines() if "error:" in l), err.strip()[:200])
    line = line.replace(path, "FILE")
    reasons[re.sub(r"'[^']*'", "'…'", line)] += 1
    if args.list_errors or kind in ("crash", "hang"):
        print(f"  {kind}: {path}: {err.strip()[:300]}")
if reasons:
    print("reasons:")
    for r, n in reasons.most_common():
        print(f"  {n:5}  {r}")
modeled_short = False
if args.count_modeled:
    full = sum(1 for _, kind, info in results if kind == "ok" and info == "FULL")
    print(f"fully modeled: {full} of {len(models)} models")
    why = collections.Counter()
    for _, kind, info in results:
        if kind == "ok" and info.startswith("PARTIAL:"):
            for item in info[len("PARTIAL:"):].split("; "):
                if item:
                    why[re.sub(r"'[^']*'", "'…'", item)] += 1
    if why:
        print("not modeled (models):")
        for r, n in why.most_common(25):
            print(f"  {n:5}  {r}")
    modeled_short = full < args.min_modeled
bad = counts["crash"] + counts["hang"]
if bad or counts["ok"] < args.min_ok or modeled_short:
    sys.exit(1)
