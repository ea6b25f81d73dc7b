#!/usr/bin/python3
"""ridge's speed and memory against its peer, side by side in one run.

Builds ridge in Release, generates the inputs it lacks, and for each case runs
ridge and the Python peer (Debian's python3-onnx: onnx.load +
onnx.shape_inference.infer_shapes, what the Python profilers do first), each
under /usr/bin/time. ridge's cases run round-robin, --repeat rounds, each
case twice in a row per round; the table takes the best of the second runs
(each right after a run of its own case, as the peer's timed runs are: the
peer runs once untimed, then best of 3, 1 for the 1M-node graph at 12 s a
run). Prints a Markdown table: case, ridge time, peer time, ratio, ridge
peak RSS, file size; then the 1M/100k growth ratios, as in the table and
again from the first runs (each right after the previous case), and what
fresh memory costs on the machine.

  /usr/bin/python3 bench/run_bench.py [--repeat 5] [--skip-1m] [--no-build]
"""
import argparse, os, re, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "build", "models")
RIDGE = os.path.join(ROOT, "build", "bin", "ridge")
PY = "/usr/bin/python3"
PEER = ("import onnx, sys; m = onnx.load(sys.argv[1], load_external_data=False); "
        "onnx.shape_inference.infer_shapes(m)")


def timed(cmd):
    """(wall seconds, peak RSS bytes, user seconds, system seconds) of one
    run: wall from perf_counter (GNU time rounds to 10 ms), the rest from
    GNU time."""
    start = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "@@%M %U %S"] + cmd, capture_output=True,
                       text=True)
    sec = time.perf_counter() - start
    if p.returncode:
        sys.exit(f"bench: {' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    kb, user, system = re.findall(r"@@(\d+) ([\d.]+) ([\d.]+)", p.stderr)[-1]
    return sec, int(kb) * 1024, float(user), float(system)


def summarize(runs):
    """The fastest of timed() runs (wall, its user and system seconds) and
    the largest peak RSS."""
    fast = min(runs, key=lambda r: r[0])
    return fast[0], max(r[1] for r in runs), fast[2], fast[3]


def best(cmd, n):
    """summarize() of n timed runs after an untimed one, all of cmd."""
    timed(cmd)
    return summarize([timed(cmd) for _ in range(n)])


FRESH = """
import mmap, resource, sys, time
n = 1 << 30
m = mmap.mmap(-1, n)
r0 = resource.getrusage(resource.RUSAGE_SELF)
for i in range(0, n, 4096):
    m[i] = 1
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(r1.ru_stime - r0.ru_stime)
"""


def fresh_memory_cost():
    """System seconds to touch 1 GiB of fresh anonymous memory, per MiB:
    what the kernel (and under a VM, the host) spends supplying zeroed
    pages, which ridge pays for every byte it allocates once."""
    out = subprocess.run([PY, "-c", FRESH], check=True, capture_output=True, text=True)
    return float(out.stdout) * 1000 / 1024


def timing_rows(cmd):
    """--timing's table of one run: {row name: wall seconds} and the engine
    note's (ticks inside the engine, ticks)."""
    p = subprocess.run(cmd + ["--timing"], capture_output=True, text=True, check=True)
    rows = {}
    for m in re.finditer(r"^\s+(?:[\d.]+ \(\s*[\d.]+%\)\s+){3}([\d.]+) \(\s*[\d.]+%\)  (.+)$",
                         p.stderr, re.M):
        rows[m.group(2)] = float(m.group(1))
    e, n = re.search(r"running at (\d+) of (\d+) ticks", p.stderr).groups()
    return rows, (int(e), int(n))


def phase_shares(cmd, n):
    """The largest --timing phase and the expression engine's row, each as
    its median share of the run over n runs (the engine's row is sampled:
    analyzer/Timing.h), and the ticks it rests on."""
    runs = [timing_rows(cmd) for _ in range(n)]
    share = lambda rows, name: rows.get(name, 0.0) / rows["Total"]
    med = lambda xs: sorted(xs)[len(xs) // 2]
    engine = "expression engine (sampled)"
    largest = max((k for k in runs[0][0] if k != "Total"),
                  key=lambda k: med([share(r, k) for r, _ in runs]))
    return (largest, med([share(r, largest) for r, _ in runs]),
            med([share(r, engine) for r, _ in runs]), sum(t[1] for _, t in runs))


def ensure(path, gen):
    if not os.path.exists(path):
        print(f"bench: generating {os.path.relpath(path, ROOT)}", file=sys.stderr)
        subprocess.run(gen, check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-1m", action="store_true")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    if not a.no_build:
        subprocess.run([os.path.join(ROOT, "scripts", "build.sh")], check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, RIDGE_BUILD_TYPE="Release"))
    os.makedirs(MODELS, exist_ok=True)
    vgg = os.path.join(MODELS, "vgg16-embedded.onnx")
    ensure(vgg, [PY, os.path.join(ROOT, "bench", "gen_vgg16.py"), "--out", vgg])
    cases = [("VGG-16, weights embedded: analyze", vgg, [RIDGE, "analyze", vgg, "-o", os.devnull])]
    sizes = [10_000, 100_000] + ([] if a.skip_1m else [1_000_000])
    for n in sizes:
        path = os.path.join(MODELS, f"synth-{n // 1000}k.onnx")
        ensure(path, [PY, os.path.join(ROOT, "bench", "gen_synthetic.py"), "--nodes", str(n),
                      "--out", path])
        cases.append((f"synthetic {n:,} nodes: analyze", path,
                      [RIDGE, "analyze", path, "-o", os.devnull]))
        cases.append((f"synthetic {n:,} nodes: plan, 64 devices", path,
                      [RIDGE, "plan", path, "--devices", "64", "--global-batch", "512",
                       "-o", os.devnull]))
        if n == 100_000:
            # The same graph with its batch a free symbol: analyze prints
            # formulas (the peer infers the same symbolic file); and the
            # bound graph's JSON document.
            sym_path = os.path.join(MODELS, f"synth-{n // 1000}k-batch.onnx")
            ensure(sym_path, [PY, os.path.join(ROOT, "bench", "gen_synthetic.py"), "--nodes",
                              str(n), "--batch", "batch", "--out", sym_path])
            cases.append((f"synthetic {n:,} nodes, batch free: analyze (formulas)", sym_path,
                          [RIDGE, "analyze", sym_path, "-o", os.devnull]))
            cases.append((f"synthetic {n:,} nodes: analyze --format json", path,
                          [RIDGE, "analyze", path, "--format", "json", "-o", os.devnull]))
    gpt = os.path.join(MODELS, "gpt-1.7b.onnx")
    ensure(gpt, [PY, os.path.join(ROOT, "bench", "gen_gpt.py"), "--layers", "24", "--hidden",
                 "2304", "--heads", "24", "--seq", "2048", "--vocab", "51200", "--batch", "batch",
                 "--mask", "trilu", "--out", gpt])
    cases.append(("GPT 1.7B: plan, 4096 devices (all configurations)", gpt,
                  [RIDGE, "plan", gpt, "--devices", "4096", "--global-batch", "4096",
                   "-o", os.devnull]))
    # ridge's cases round-robin, --repeat rounds, best of each: the 100k-
    # and 1M-node cases whose ratio is the growth target then run under the
    # same conditions (on a shared VM the whole machine slows down for
    # minutes at a time, and one case measured only inside such a stretch
    # would skew the ratio). Each case runs twice in a row: the first run
    # follows the previous case, the second a run of its own, which freed
    # about the memory it needs a moment before. On a VM that hands freed
    # memory back to its host (free page reporting), a run that needs more
    # than the run before it freed waits for the host to supply the rest:
    # the first runs measure that order (the 1M-node plan after the 1M-node
    # analyze), the second runs the tool, under the conditions the peer's
    # repeated runs have. The table takes the second runs.
    after_prev = {name: [] for name, _, _ in cases}
    after_self = {name: [] for name, _, _ in cases}
    for _ in range(a.repeat):
        for name, _, cmd in cases:
            after_prev[name].append(timed(cmd))
            after_self[name].append(timed(cmd))
    print("| case | ridge (s) | peer: onnx.load + infer_shapes (s) | ratio | ridge peak RSS (MB) | file (MB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, path, cmd in cases:
        t = summarize(after_self[name])[0]
        rss = summarize(after_self[name] + after_prev[name])[1]
        peer = None if "plan" in name else best([PY, "-c", PEER, path], 1 if "1,000,000" in name else min(a.repeat, 3))[0]
        ratio = f"{peer / t:.0f}x" if peer else "-"
        print(f"| {name} | {t:.3f} | {'-' if peer is None else f'{peer:.3f}'} | {ratio} | "
              f"{rss / 1e6:.1f} | {os.path.getsize(path) / 1e6:.1f} |", flush=True)
    # Linear growth: the 1M-node case against the 100k-node one (target 12x),
    # as in the table (each run after one of its own), then from the first
    # runs (each after the previous case).
    for what in ("analyze", "plan, 64 devices"):
        big, small = (f"synthetic {n} nodes: {what}" for n in ("1,000,000", "100,000"))
        if big not in after_self or small not in after_self:
            continue
        for label, runs in (("", after_self), ("  each run right after the previous case: ", after_prev)):
            b, _, bu, bs = summarize(runs[big])
            s, _, su, ss = summarize(runs[small])
            head = f"\n1M / 100k nodes, {what}: " if not label else label
            print(f"{head}{b / s:.1f}x wall ({b:.3f} s against {s:.3f} s), {bu / su:.1f}x user "
                  f"time; system time {bs:.2f} s against {ss:.2f} s", flush=True)
        rss = summarize(after_self[big] + after_prev[big])[1]
        print(f"  peak RSS at 1M nodes: {rss / 1e6:.0f} bytes a node", flush=True)
    # The expression engine against the phases of --timing (target: not the
    # largest), on the batch-free 100k graph: formulas everywhere.
    sym_case = "synthetic 100,000 nodes, batch free: analyze (formulas)"
    for name, path, cmd in cases:
        if name == sym_case:
            largest, ls, es, ticks = phase_shares(cmd, a.repeat)
            print(f"\n--timing of `{name}`, median of {a.repeat} runs: largest phase "
                  f"'{largest}' {ls:.0%} of the run; expression engine (sampled, {ticks} ticks "
                  f"in all) {es:.0%}", flush=True)
    # What fresh memory costs here, in the same run (it varies between runs
    # on a VM whose host supplies memory on first touch).
    print(f"\nfresh memory on this machine: {fresh_memory_cost():.2f} ms/MiB "
          f"(system time, 1 GiB touched)")


main()
