#!/usr/bin/python3
"""Validate ridge's roofline on this CPU against PyTorch.

For a set of single ops of known sizes (matrix products, ResNet-like 2-D
convolutions, element-wise ops, Softmax, LayerNormalization, a reduction) this
script writes one tiny ONNX model per op (fp32, fixed shapes, weights as graph
inputs), asks ridge for the op's forward time on a device file
(`ridge run MODEL --device-file CAL.yaml --passes=print<cost>,print<roofline>`),
measures the same op's forward time with torch on this CPU (all cores,
warm-up, median of N runs, tensors preallocated, torch.no_grad()), and prints a
Markdown table plus the Spearman rank correlation between estimates and
measurements and the geometric mean of measured/estimate.

The device file should be a calibration of this host (`ridge calibrate`), so
that the comparison tests the roofline model and not a datasheet.

Implementation notes (why the torch numbers are what they are):
- Each op is timed with every implementation this torch offers for it and the
  fastest counts (all are listed in a second table).
- Debian's torch 1.13 links the reference (netlib) BLAS, so torch.matmul runs
  at ~6 GFLOP/s. Matrix products are timed through oneDNN
  (torch._C._nn.mkldnn_linear on mkldnn tensors, Y = X W^T; and a prepacked
  oneDNN Linear) and, for small ones, also through torch.matmul (netlib).
- Convolutions: F.conv2d (oneDNN, weights reordered per call) and a prepacked
  oneDNN Conv2d (torch.utils.mkldnn).
- Element-wise ops, Softmax, LayerNormalization and ReduceSum write into
  preallocated outputs (out= variants), so no run pays page faults for a
  fresh output buffer (glibc mmaps every block above 32 MiB; a 64 MiB softmax
  output costs more in page faults than the softmax itself).
- Relu is timed as torch.clamp_min(x, 0, out=y), which is what torch.relu
  calls.
- The machine may be shared: each timing watches /proc/stat, and one during
  which other processes (or the hypervisor, as steal time) took more than
  --max-other of the CPUs is repeated after waiting for an idle moment; rows
  still disturbed after --retries are marked "(busy)".

Needs Debian's python3-torch and python3-onnx: run with /usr/bin/python3.
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

import torch
import torch.nn.functional as F
import torch.utils.mkldnn  # noqa: F401  (registers torch.utils.mkldnn)

REPO = Path(__file__).resolve().parent.parent
OPSET = 17
# torch.matmul (netlib BLAS, ~6 GFLOP/s here) is a candidate only up to this
# many FLOPs: 512^3 takes ~50 ms a call.
NETLIB_MAX_FLOPS = 3e8


# --------------------------------------------------------------------------
# ONNX models
# --------------------------------------------------------------------------

def tensor_info(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def make_model(node, inputs, output, initializers=()):
    """One-node fp32 model: inputs is [(name, shape)], output is (name, shape)."""
    graph = helper.make_graph(
        [node], node.name,
        [tensor_info(n, s) for n, s in inputs],
        [tensor_info(*output)],
        initializer=list(initializers))
    model = helper.make_model(graph, producer_name="ridge-bench-roofline-cpu",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def conv_out(size, k, s, p):
    return (size + 2 * p - k) // s + 1


# --------------------------------------------------------------------------
# Cases: an ONNX model builder and a torch callable factory per op
# --------------------------------------------------------------------------

class Case:
    def __init__(self, name, op, shape, category, model_fn, torch_fn):
        self.name = name          # unique, used as file and node name
        self.op = op              # ONNX op type
        self.shape = shape        # human-readable shape
        self.category = category  # matmul | conv | elementwise | normalization | reduction
        self.model_fn = model_fn  # () -> onnx.ModelProto
        self.torch_fn = torch_fn  # () -> [(impl, callable)], tensors preallocated


def matmul_case(m, n, k):
    name = f"matmul_{m}x{n}x{k}"

    def model():
        node = helper.make_node("MatMul", ["A", "B"], ["Y"], name=name)
        return make_model(node, [("A", (m, k)), ("B", (k, n))], ("Y", (m, n)))

    def torch_fns():
        a = torch.randn(m, k)
        w = torch.randn(n, k)           # Y = A W^T, W stored [N, K]
        a_mk, w_mk = a.to_mkldnn(), w.to_mkldnn()
        lin = torch.nn.Linear(k, n, bias=False)
        with torch.no_grad():
            lin.weight.copy_(w)
        packed = torch.utils.mkldnn.to_mkldnn(lin)
        fns = [("onednn", lambda: torch._C._nn.mkldnn_linear(a_mk, w_mk, None)),
               ("onednn-prepacked", lambda: packed(a_mk))]
        if 2 * m * n * k <= NETLIB_MAX_FLOPS:
            b = torch.randn(k, n)
            fns.append(("netlib", lambda: torch.matmul(a, b)))
        return fns

    return Case(name, "MatMul", f"M={m} N={n} K={k}", "matmul", model, torch_fns)


def conv_case(label, n, c, h, w, o, k, s, p):
    name = f"conv_{label}"
    oh, ow = conv_out(h, k, s, p), conv_out(w, k, s, p)

    def model():
        node = helper.make_node("Conv", ["X", "W"], ["Y"], name=name,
                                kernel_shape=[k, k], strides=[s, s],
                                pads=[p, p, p, p])
        return make_model(node, [("X", (n, c, h, w)), ("W", (o, c, k, k))],
                          ("Y", (n, o, oh, ow)))

    def torch_fns():
        x = torch.randn(n, c, h, w)
        wt = torch.randn(o, c, k, k) * 0.01
        mod = torch.nn.Conv2d(c, o, k, stride=s, padding=p, bias=False)
        with torch.no_grad():
            mod.weight.copy_(wt)
        packed = torch.utils.mkldnn.to_mkldnn(mod)
        x_mk = x.to_mkldnn()
        return [("F.conv2d", lambda: F.conv2d(x, wt, None, s, p)),
                ("onednn-prepacked", lambda: packed(x_mk))]

    return Case(name, "Conv", f"N={n} C={c} {h}x{w} -> {o}, {k}x{k}/{s}",
                "conv", model, torch_fns)


def unary_torch(op):
    return {
        "Relu": lambda x, y: torch.clamp_min(x, 0.0, out=y),
        "Sigmoid": lambda x, y: torch.sigmoid(x, out=y),
        "Tanh": lambda x, y: torch.tanh(x, out=y),
        "Exp": lambda x, y: torch.exp(x, out=y),
    }[op]


def elementwise_case(op, numel):
    name = f"{op.lower()}_{numel:.0e}".replace("+", "")
    binary = op in ("Add", "Mul")

    def model():
        ins = ["A", "B"] if binary else ["X"]
        node = helper.make_node(op, ins, ["Y"], name=name)
        return make_model(node, [(i, (numel,)) for i in ins], ("Y", (numel,)))

    def torch_fns():
        a = torch.randn(numel)
        y = torch.empty(numel).fill_(0)  # touched: no page faults while timed
        if binary:
            b = torch.randn(numel)
            f = torch.add if op == "Add" else torch.mul
            return [("out=", lambda: f(a, b, out=y))]
        g = unary_torch(op)
        return [("out=", lambda: g(a, y))]

    return Case(name, op, f"{numel:.0e}".replace("+0", "").replace("+", ""),
                "elementwise", model, torch_fns)


def softmax_case(r, c):
    name = f"softmax_{r}x{c}"

    def model():
        node = helper.make_node("Softmax", ["X"], ["Y"], name=name, axis=-1)
        return make_model(node, [("X", (r, c))], ("Y", (r, c)))

    def torch_fns():
        x = torch.randn(r, c)
        y = torch.empty(r, c).fill_(0)
        return [("out=", lambda: torch._softmax(x, -1, False, out=y))]

    return Case(name, "Softmax", f"[{r},{c}] axis -1", "normalization", model,
                torch_fns)


def layernorm_case(r, c):
    name = f"layernorm_{r}x{c}"

    def model():
        node = helper.make_node("LayerNormalization", ["X", "S", "B"], ["Y"],
                                name=name, axis=-1, epsilon=1e-5)
        return make_model(node, [("X", (r, c)), ("S", (c,)), ("B", (c,))],
                          ("Y", (r, c)))

    def torch_fns():
        x = torch.randn(r, c)
        sc, bi = torch.ones(c), torch.zeros(c)
        y = torch.empty(r, c).fill_(0)
        mean, rstd = torch.empty(r, 1), torch.empty(r, 1)
        op = torch.ops.aten.native_layer_norm.out
        return [("out=", lambda: op(x, [c], sc, bi, 1e-5, out0=y, out1=mean,
                                    out2=rstd))]

    return Case(name, "LayerNormalization", f"[{r},{c}] axis -1",
                "normalization", model, torch_fns)


def reducesum_case(r, c):
    name = f"reducesum_{r}x{c}"

    def model():
        node = helper.make_node("ReduceSum", ["X", "axes"], ["Y"], name=name,
                                keepdims=1)
        axes = helper.make_tensor("axes", TensorProto.INT64, [1], [-1])
        return make_model(node, [("X", (r, c))], ("Y", (r, 1)), [axes])

    def torch_fns():
        x = torch.randn(r, c)
        y = torch.empty(r, 1)
        return [("out=", lambda: torch.sum(x, -1, keepdim=True, out=y))]

    return Case(name, "ReduceSum", f"[{r},{c}] axis -1", "reduction", model,
                torch_fns)


def all_cases(quick):
    cases = []
    mm = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512),
          (1024, 1024, 1024), (2048, 2048, 2048),
          (16, 1024, 1024),       # skinny: a small batch through a layer
          (1, 4096, 4096)]        # matrix-vector: memory-bound
    if quick:
        mm = [(128, 128, 128), (1024, 1024, 1024), (1, 4096, 4096)]
    cases += [matmul_case(*s) for s in mm]
    convs = [  # label, N, C, H, W, O, k, stride, pad (ResNet-50 layers)
        ("conv1_7x7s2", 8, 3, 224, 224, 64, 7, 2, 3),
        ("res2_3x3", 8, 64, 56, 56, 64, 3, 1, 1),
        ("res2_1x1", 8, 256, 56, 56, 64, 1, 1, 0),
        ("res3_3x3", 16, 128, 28, 28, 128, 3, 1, 1),
        ("res4_3x3", 16, 256, 14, 14, 256, 3, 1, 1),
        ("res5_3x3", 32, 512, 7, 7, 512, 3, 1, 1),
    ]
    if quick:
        convs = convs[1:2] + convs[4:5]
    cases += [conv_case(*c) for c in convs]
    sizes = [10**5, 10**6, 10**7, 10**8]
    if quick:
        sizes = [10**5, 10**7]
    for op in ("Add", "Mul", "Relu", "Sigmoid", "Tanh", "Exp"):
        cases += [elementwise_case(op, n) for n in sizes]
    norm = [(256, 1024), (8192, 2048)]
    if quick:
        norm = norm[1:]
    cases += [softmax_case(*s) for s in norm]
    cases += [layernorm_case(*s) for s in norm]
    cases += [reducesum_case(*s) for s in norm]
    return cases


# --------------------------------------------------------------------------
# ridge
# --------------------------------------------------------------------------

COST_RE = re.compile(r'^cost "(?P<name>[^"]*)" (?P<op>\S+): fwd_flops=(?P<flops>\d+) '
                     r'macs=(?P<macs>\d+) transc=(?P<transc>\d+) fwd_bytes=(?P<bytes>\d+)')
ROOF_RE = re.compile(r'^roofline "(?P<name>[^"]*)" (?P<op>\S+) (?P<dtype>\S+): fwd '
                     r'I=(?P<I>\S+) P=(?P<P>\S+) t=(?P<t>\S+) compute=(?P<c>\S+) '
                     r'memory=(?P<m>\S+) bound=(?P<bound>\S+)')
DEV_RE = re.compile(r'^device (?P<name>.*): peak=(?P<peak>\S+) vector=(?P<vector>\S+) '
                    r'bandwidth=(?P<bw>\S+) ridge=(?P<ridge>\S+)')


def run_ridge(ridge, model_path, device_file):
    cmd = [ridge, "run", str(model_path), "--device-file", str(device_file),
           "--passes=print<cost>,print<roofline>"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    out = {}
    for line in p.stdout.splitlines():
        if m := COST_RE.match(line):
            out.update(flops=int(m["flops"]), macs=int(m["macs"]),
                       transc=int(m["transc"]), bytes=int(m["bytes"]))
        elif m := ROOF_RE.match(line):
            out.update(I=float(m["I"]), t=float(m["t"]), compute=float(m["c"]),
                       memory=float(m["m"]), bound=m["bound"])
        elif m := DEV_RE.match(line):
            out["device"] = dict(name=m["name"], peak=float(m["peak"]),
                                 vector=float(m["vector"]), bw=float(m["bw"]),
                                 ridge=float(m["ridge"]))
    if "t" not in out or "flops" not in out:
        raise RuntimeError(f"could not parse ridge's output for {model_path}:\n"
                           f"{p.stdout}\n{p.stderr}")
    return out


def has_calibrate(ridge):
    p = subprocess.run([ridge, "--help"], capture_output=True, text=True)
    return re.search(r"^\s+calibrate\s+-", p.stdout, re.M) is not None


def resolve_ridge(path):
    p = Path(path)
    if not p.is_absolute() and not p.exists():
        p = REPO / p
    if not p.exists():
        sys.exit(f"roofline_cpu.py: ridge binary not found: {path}")
    return str(p)


# --------------------------------------------------------------------------
# torch timing and statistics
# --------------------------------------------------------------------------

class CpuMeter:
    """How much of the machine other processes (or the hypervisor: steal time)
    used between start() and stop(), as a share of all CPUs' time."""
    HZ = os.sysconf("SC_CLK_TCK")
    NCPU = os.sysconf("SC_NPROCESSORS_ONLN")

    @staticmethod
    def _busy():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        # user nice system idle iowait irq softirq steal
        return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / CpuMeter.HZ

    def start(self):
        self.t, self.busy, self.own = time.perf_counter(), self._busy(), sum(os.times()[:2])

    def stop(self):
        wall = time.perf_counter() - self.t
        other = (self._busy() - self.busy) - (sum(os.times()[:2]) - self.own)
        return max(0.0, other) / (wall * self.NCPU) if wall > 0 else 0.0


def wait_idle(max_wait, window=1.0, threshold=0.1):
    """Waits (up to max_wait s) for a window in which the CPUs are idle."""
    deadline = time.perf_counter() + max_wait
    while time.perf_counter() < deadline:
        m = CpuMeter()
        m.start()
        time.sleep(window)
        if m.stop() < threshold:
            return True
    return False


def time_op(fn, runs, budget, warmup=3, min_time=0.2):
    """Median seconds per call: at least `runs` calls and `min_time` s of them
    (unless `budget` s pass first, after 3 calls). Also returns the share of
    the machine that other processes used meanwhile."""
    with torch.no_grad():
        t0 = time.perf_counter()
        for _ in range(warmup):
            fn()
            if time.perf_counter() - t0 > budget:
                break
        times = []
        meter = CpuMeter()
        meter.start()
        start = time.perf_counter()
        while len(times) < 100000:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
            elapsed = time.perf_counter() - start
            if len(times) >= runs and elapsed >= min_time:
                break
            if len(times) >= 3 and elapsed > budget:
                break
        other = meter.stop()
    return statistics.median(times), other


def time_quiet(fn, args):
    """time_op, repeated (after waiting for an idle machine) while other
    processes took more than --max-other of the CPUs; the best attempt."""
    best = None
    for attempt in range(args.retries + 1):
        t, other = time_op(fn, args.runs, args.budget)
        if best is None or (other <= args.max_other, -t) > (best[1] <= args.max_other, -best[0]):
            best = (t, other)
        if other <= args.max_other:
            break
        wait_idle(args.idle_wait)
    return best


def ranks(xs):
    """Ranks 1..n, ties get their average rank."""
    xs = np.asarray(xs, dtype=float)
    order = np.argsort(xs, kind="mergesort")
    r = np.empty(len(xs))
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        r[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    den = math.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / den) if den > 0 else float("nan")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def fmt_us(s):
    us = s * 1e6
    return f"{us:.0f}" if us >= 100 else f"{us:.1f}" if us >= 10 else f"{us:.2f}"


def fmt_si(v):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:.3g}{unit}"
    return f"{v:.3g}"


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ridge", default="build/bin/ridge",
                    help="ridge binary (relative paths: cwd, then the repository)")
    ap.add_argument("--device-file",
                    help="device YAML; default: `ridge calibrate -o /tmp/host.yaml` "
                         "when ridge has that subcommand")
    ap.add_argument("--models-dir", default=str(REPO / "build/models/roofline_cpu"),
                    help="where the one-op ONNX models are written")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="torch threads (default: all CPUs this process may use)")
    ap.add_argument("--runs", type=int, default=15, help="timed runs per op (median)")
    ap.add_argument("--budget", type=float, default=1.0,
                    help="seconds of timed runs per op at most (after 3 runs)")
    ap.add_argument("--quick", action="store_true", help="a smaller set of ops")
    ap.add_argument("--only", help="regex: run only the cases whose name matches")
    ap.add_argument("--max-other", type=float, default=0.1,
                    help="a timing during which other processes used more than this "
                         "share of the CPUs is repeated")
    ap.add_argument("--retries", type=int, default=3,
                    help="repetitions of a disturbed timing")
    ap.add_argument("--idle-wait", type=float, default=30,
                    help="seconds to wait for an idle machine before a repetition")
    args = ap.parse_args()

    ridge = resolve_ridge(args.ridge)
    device_file = args.device_file
    if device_file is None:
        if not has_calibrate(ridge):
            sys.exit("roofline_cpu.py: this ridge has no `calibrate` subcommand; "
                     "pass --device-file FILE")
        device_file = "/tmp/host.yaml"
        print(f"running {ridge} calibrate -o {device_file}", file=sys.stderr)
        subprocess.run([ridge, "calibrate", "-o", device_file], check=True,
                       stdout=sys.stderr)
    if not Path(device_file).exists():
        sys.exit(f"roofline_cpu.py: device file not found: {device_file}")

    torch.set_num_threads(args.threads)
    models = Path(args.models_dir)
    models.mkdir(parents=True, exist_ok=True)

    # The same device with launch_overhead = torch's per-op floor, to show
    # how much of the small-op error is framework overhead.
    wait_idle(args.idle_wait)
    floor_t, _ = time_quiet(_floor_fn(), args)
    text = Path(device_file).read_text()
    floor_file = models / "device-with-torch-floor.yaml"
    floor_file.write_text(re.sub(r"(?m)^launch_overhead:.*$",
                                 f"launch_overhead: {floor_t:.3e}", text))

    cases = all_cases(args.quick)
    if args.only:
        cases = [c for c in cases if re.search(args.only, c.name)]
    rows, device = [], None
    for c in cases:
        path = models / f"{c.name}.onnx"
        onnx.save(c.model_fn(), str(path))
        est = run_ridge(ridge, path, device_file)
        est_floor = run_ridge(ridge, path, floor_file)
        device = device or est.get("device")
        impls = {}
        for impl, fn in c.torch_fn():
            impls[impl] = time_quiet(fn, args)
        del fn  # the last closure holds the case's tensors
        impl = min(impls, key=lambda i: impls[i][0])
        t, other = impls[impl]
        rows.append(dict(case=c, est=est, est_floor=est_floor, impl=impl,
                         meas=t, other=other, impls=impls))
        print(f"{c.name}: ridge {est['t'] * 1e6:.2f} us, torch {t * 1e6:.2f} us "
              f"({impl}, other load {other:.2f}) "
              + " ".join(f"{k}={v[0] * 1e6:.1f}" for k, v in impls.items()),
              file=sys.stderr)

    # ---- report ----
    print(f"# ridge roofline vs torch on {cpu_model()} ({args.threads} threads)\n")
    if device:
        print(f"device `{device['name']}` from `{device_file}`: fp32 peak "
              f"{device['peak'] / 1e9:.1f} GFLOP/s, bandwidth {device['bw'] / 1e9:.2f} GB/s, "
              f"ridge point {device['ridge']:.2f} FLOP/byte\n")
    print("| op | shape | FLOPs | bytes | I (FLOP/B) | ridge (us) | torch (us) | "
          "measured/ridge | bound | torch impl |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        c, e = r["case"], r["est"]
        print(f"| {c.op} | {c.shape} | {fmt_si(e['flops'])} | {fmt_si(e['bytes'])} | "
              f"{e['I']:.2f} | {fmt_us(e['t'])} | {fmt_us(r['meas'])} | "
              f"{r['meas'] / e['t']:.2f} | {e['bound']} | {r['impl']}"
              f"{' (busy)' if r['other'] > args.max_other else ''} |")

    est = [r["est"]["t"] for r in rows]
    meas = [r["meas"] for r in rows]
    ratios = [m / e for m, e in zip(meas, est)]
    print(f"\n{len(rows)} ops: Spearman rank correlation {spearman(est, meas):.3f}, "
          f"geometric mean of measured/ridge {geomean(ratios):.2f} "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f})\n")

    print("| category | ops | geo-mean measured/ridge | min | max |")
    print("|---|---:|---:|---:|---:|")
    for cat in ("matmul", "conv", "elementwise", "normalization", "reduction"):
        rs = [m / r["est"]["t"] for m, r in zip(meas, rows) if r["case"].category == cat]
        if rs:
            print(f"| {cat} | {len(rs)} | {geomean(rs):.2f} | {min(rs):.2f} | {max(rs):.2f} |")
    for bound in sorted({r["est"]["bound"] for r in rows}):
        rs = [m / r["est"]["t"] for m, r in zip(meas, rows) if r["est"]["bound"] == bound]
        print(f"| bound={bound} | {len(rs)} | {geomean(rs):.2f} | {min(rs):.2f} | "
              f"{max(rs):.2f} |")

    est_f = [r["est_floor"]["t"] for r in rows]
    ratios_f = [m / e for m, e in zip(meas, est_f)]
    print(f"\ntorch per-op floor (1-element torch.add, out=): {floor_t * 1e6:.2f} us. "
          f"With launch_overhead set to it: Spearman {spearman(est_f, meas):.3f}, "
          f"geometric mean {geomean(ratios_f):.2f} (min {min(ratios_f):.2f}, "
          f"max {max(ratios_f):.2f})")

    multi = [r for r in rows if len(r["impls"]) > 1]
    if multi:
        names = []
        for r in multi:
            names += [k for k in r["impls"] if k not in names]
        print("\nEvery torch implementation timed (us; the fastest is used above; "
              "netlib = torch.matmul through Debian's reference BLAS, this torch's "
              "default matmul path):\n")
        print("| op | shape | " + " | ".join(names) + " |")
        print("|---|---|" + "---:|" * len(names))
        for r in multi:
            cells = [fmt_us(r["impls"][k][0]) if k in r["impls"] else "-" for k in names]
            print(f"| {r['case'].op} | {r['case'].shape} | " + " | ".join(cells) + " |")
    busy = [r["case"].name for r in rows if r["other"] > args.max_other]
    if busy:
        print(f"\n(busy): other processes used more than {args.max_other:.0%} of the CPUs "
              f"during every attempt: {', '.join(busy)}")


def _floor_fn():
    a, b, y = torch.ones(1), torch.ones(1), torch.empty(1)
    return lambda: torch.add(a, b, out=y)


if __name__ == "__main__":
    main()
