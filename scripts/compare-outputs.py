#!/usr/bin/python3
"""Before/after check for changes meant to keep ridge's output as it is.

  snapshot: runs a fixed set of `ridge analyze` and `ridge plan` commands with
            --format json (and the text form of a few) and writes each one's
            stdout, stderr and exit status to DIR;
  compare:  says which of two snapshots' files differ (exit 1 if any).

  /usr/bin/python3 scripts/compare-outputs.py snapshot --ridge build/bin/ridge --out /tmp/before
  ... change the code, rebuild ...
  /usr/bin/python3 scripts/compare-outputs.py snapshot --ridge build/bin/ridge --out /tmp/after
  /usr/bin/python3 scripts/compare-outputs.py compare /tmp/before /tmp/after

The models: the examples and plan test inputs, the benchmark's generated
models under build/models (those present), and every --every'th model of
Debian's libonnx-testdata. Paths in the output are the same in both runs
(relative to the repository root), so files compare byte for byte.
"""
import argparse, concurrent.futures, glob, hashlib, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = "/usr/include/onnx/backend/test/data"


def commands(every):
    """(name, argv) pairs, argv without the ridge binary."""
    cmds = []

    def analyze(path, *extra):
        cmds.append((path, ["analyze", path, "--format", "json", *extra]))

    def plan(path, *extra):
        cmds.append((path, ["plan", path, "--format", "json", *extra]))

    analyze("examples/mlp.onnxtxt", "--dim", "batch=32")
    cmds.append(("examples/mlp.onnxtxt", ["analyze", "examples/mlp.onnxtxt", "--dim", "batch=32"]))
    plan("examples/mlp.onnxtxt", "--devices", "8", "--global-batch", "256")
    cmds.append(("examples/mlp.onnxtxt",
                 ["plan", "examples/mlp.onnxtxt", "--devices", "8", "--global-batch", "256"]))
    for p in sorted(glob.glob(os.path.join(ROOT, "test/plan/Inputs/*.onnxtxt"))):
        rel = os.path.relpath(p, ROOT)
        analyze(rel, "--dim", "batch=16")
        plan(rel, "--devices", "8", "--global-batch", "64")
    for p in sorted(glob.glob(os.path.join(ROOT, "test/cost/*.onnxtxt"))):
        analyze(os.path.relpath(p, ROOT))
    models = os.path.join("build", "models")
    for name in ("synth-10k.onnx", "synth-100k.onnx"):
        p = os.path.join(models, name)
        if os.path.exists(os.path.join(ROOT, p)):
            analyze(p)
            plan(p, "--devices", "64", "--global-batch", "512")
    p = os.path.join(models, "gpt-1.7b.onnx")
    if os.path.exists(os.path.join(ROOT, p)):
        analyze(p, "--dim", "batch=8")
        plan(p, "--devices", "4096", "--global-batch", "4096")
        plan(p, "--devices", "64", "--global-batch", "512", "--scaling")
        plan(p, "--devices", "64", "--global-batch", "512", "--tp", "8", "--pp", "2", "--dp", "4",
             "--recompute", "full")
    p = os.path.join(models, "vgg16-embedded.onnx")
    if os.path.exists(os.path.join(ROOT, p)):
        analyze(p)
    tests = sorted(glob.glob(os.path.join(TESTDATA, "*", "*", "model.onnx")))
    for p in tests[::every]:
        analyze(p)
        plan(p, "--devices", "4", "--global-batch", "8")
    return cmds


def key(argv):
    h = hashlib.sha1("\0".join(argv).encode()).hexdigest()[:12]
    return f"{argv[0]}-{os.path.basename(os.path.dirname(argv[1]))}-{os.path.basename(argv[1])}-{h}"


def snapshot(a):
    os.makedirs(a.out, exist_ok=True)
    ridge = os.path.abspath(a.ridge)

    def one(item):
        _, argv = item
        p = subprocess.run([ridge] + argv, cwd=ROOT, capture_output=True, timeout=600,
                           env=dict(os.environ, NO_COLOR="1"))
        with open(os.path.join(a.out, key(argv)), "wb") as f:
            f.write(b"$ ridge " + " ".join(argv).encode() + b"\n")
            f.write(b"exit " + str(p.returncode).encode() + b"\n-- stdout\n")
            f.write(p.stdout)
            f.write(b"-- stderr\n")
            f.write(p.stderr)

    cmds = commands(a.every)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        list(ex.map(one, cmds))
    print(f"snapshot: {len(cmds)} commands written to {a.out}")


def compare(a):
    left, right = sorted(os.listdir(a.before)), sorted(os.listdir(a.after))
    missing = sorted(set(left) ^ set(right))
    differ = [n for n in sorted(set(left) & set(right))
              if open(os.path.join(a.before, n), "rb").read() != open(os.path.join(a.after, n), "rb").read()]
    for n in missing:
        print(f"compare: only in one snapshot: {n}")
    for n in differ:
        print(f"compare: differs: {n}")
    same = len(set(left) & set(right)) - len(differ)
    print(f"compare: {same} identical, {len(differ)} differ, {len(missing)} in one snapshot only")
    return 1 if differ or missing else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("--ridge", default="build/bin/ridge")
    s.add_argument("--out", required=True)
    s.add_argument("--every", type=int, default=10, help="every N'th libonnx-testdata model")
    s.add_argument("--jobs", type=int, default=2)
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    a = ap.parse_args()
    return snapshot(a) if a.cmd == "snapshot" else compare(a)


sys.exit(main() or 0)
