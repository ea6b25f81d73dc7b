#!/usr/bin/env python3
"""ridge's kernel-time model against DeepBench's measured GPU kernels.

For each GPU in shared/validation/deepbench/ (T4, P100, GTX 1080 Ti, Titan Xp)
and each precision it was measured in, this script builds every kernel as a
node of a one-op-per-kernel ONNX graph, runs `ridge analyze --format json` on
that GPU's device file, and compares each kernel phase ridge predicts with
the measurement. It prints, per GPU, kind, precision and phase: the typical
error (median of |log(predicted / measured)|, shown as a percentage), the
share of phases within 1.25x, and the geometric-mean bias (predicted /
measured); then the same per GPU, and whether the targets of issue 18 hold.

How each DeepBench kernel becomes a graph (DeepBench's code/nvidia/*.cu):
  gemm   Gemm(A, B) with transA/transB as `ta`/`tb`; forward only.
  conv   Conv(X, W) with X and W passed as --trainable-input: both need
         gradients, so ridge runs the data gradient (bwd_in) and the filter
         gradient (bwd_w), as cuDNN's BackwardData and BackwardFilter do.
  rnn/lstm/gru
         ONNX RNN (ReLU: DeepBench's "vanilla" is CUDNN_RNN_RELU) / LSTM /
         GRU with input size = hidden, X and R trainable (as for conv), W
         not. DeepBench runs cuDNN with
         CUDNN_SKIP_INPUT: no input projection, so the comparison takes
         ridge's "recurrence" kernel (fwd), "recurrence backward" (bwd_in)
         and "dR (recurrent weights)" (bwd_w), and leaves out the input
         projection ONNX always has.
Precisions: fp32 graphs in fp32; T4 `fp16` = fp16 graphs on tensor cores;
P100 `fp16-storage` = fp16 graphs (2-byte operands; with no tensor cores for
fp16 ridge's kernel model multiplies them at the fp32 rate, as cuDNN's
PSEUDO_HALF_CONFIG and cuBLAS's fp32 compute type do).

Measurements that no kernel can reach are left out and listed: a phase
whose DeepBench FLOP count implies more than 1.1x the device's highest peak
(2.25x for the 3x3 stride-1 convolutions Winograd may run). All of them are
P100 fp16-storage RNN weight gradients, whose sheet values are not rounded
like the others (derived, not measured, as far as the sheet shows).

Usage: deepbench_validate.py --ridge build/bin/ridge [--data DIR] [--out DIR]
"""
import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile

import onnx
import yaml
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# Which sheets ran with DeepBench's convolution algorithms forced. Built
# with USE_TENSOR_CORES=1 (and cuDNN 7 or later), conv_bench.cu sets
# CUDNN_TENSOR_OP_MATH and forces IMPLICIT_PRECOMP_GEMM forward,
# BWD_DATA_ALGO_1 and BWD_FILTER_ALGO_1, none of them Winograd; otherwise
# it takes the fastest algorithm cudnnFind returns. code/nvidia/Makefile
# defaults to USE_TENSOR_CORES=0, and the sheets show which build ran: the
# T4's fp16 convolutions reach 32 TFLOP/s at stride 2 (twice the 16 TFLOP/s
# Turing's CUDA cores give fp16: tensor cores, so the forced build), while
# its fp32 3x3 convolutions reach 12.5 TFLOP/s, above the 8.1 TFLOP/s fp32
# peak (a Winograd algorithm, so cudnnFind's choice). Those run with
# --winograd=false; the others may run Winograd.
FORCED_ALGOS = {("T4", "fp16")}
DEVICES = {  # DeepBench file -> ridge device name
    "T4": "T4",
    "P100": "P100-PCIE-16GB",
    "1080Ti": "GTX-1080-Ti",
    "TitanXp": "Titan-Xp",
}
PHASES = ("fwd_ms", "bwd_in_ms", "bwd_w_ms")
GATES = {"rnn": 1, "lstm": 4, "gru": 3}
ONNX_OP = {"rnn": "RNN", "lstm": "LSTM", "gru": "GRU"}
# Which of ridge's kernels DeepBench's phase measures (see the docstring).
RNN_KERNELS = {"fwd_ms": ("fwd", "recurrence"),
               "bwd_in_ms": ("bwd", "recurrence backward"),
               "bwd_w_ms": ("bwd", "dR (recurrent weights)")}


def device_peak(name):
    """The highest peak_flops of the shipped device file named `name`."""
    folder = os.path.join(ROOT, "devices")
    for f in sorted(os.listdir(folder)):
        if f.endswith(".yaml"):
            d = yaml.safe_load(open(os.path.join(folder, f)))
            if d.get("name") == name:
                return max(float(v) for v in d["peak_flops"].values())
    sys.exit(f"no device file in {folder} is named {name}")


def conv_out(k):
    p = (k["H"] + 2 * k["pad_h"] - k["R"]) // k["stride_h"] + 1
    q = (k["W"] + 2 * k["pad_w"] - k["S"]) // k["stride_w"] + 1
    return p, q


def kernel_flops(k):
    """DeepBench's own FLOP count of one phase (direct convolution)."""
    if k["kind"] == "gemm":
        return 2.0 * k["M"] * k["N"] * k["K"]
    if k["kind"] == "conv":
        p, q = conv_out(k)
        return 2.0 * k["N"] * k["K"] * p * q * k["C"] * k["R"] * k["S"]
    return 2.0 * k["N"] * GATES[k["kind"]] * k["hidden"] ** 2 * k["T"]


def build_graph(kernels, elem):
    """One graph, one node per kernel; returns (model, names, trainable inputs)."""
    nodes, inputs, outputs, names, trained = [], [], [], [], []

    def inp(name, shape, train=False):
        inputs.append(helper.make_tensor_value_info(name, elem, shape))
        if train:
            trained.append(name)

    for i, k in enumerate(kernels):
        n = f"k{i}"
        names.append(n)
        if k["kind"] == "gemm":
            a = [k["K"], k["M"]] if k["ta"] == "T" else [k["M"], k["K"]]
            b = [k["N"], k["K"]] if k["tb"] == "T" else [k["K"], k["N"]]
            inp(n + "_a", a)
            inp(n + "_b", b)
            nodes.append(helper.make_node("Gemm", [n + "_a", n + "_b"], [n + "_y"], name=n,
                                          transA=int(k["ta"] == "T"),
                                          transB=int(k["tb"] == "T")))
            outputs.append(helper.make_tensor_value_info(n + "_y", elem, [k["M"], k["N"]]))
        elif k["kind"] == "conv":
            inp(n + "_x", [k["N"], k["C"], k["H"], k["W"]], True)
            inp(n + "_w", [k["K"], k["C"], k["R"], k["S"]], True)
            p, q = conv_out(k)
            nodes.append(helper.make_node(
                "Conv", [n + "_x", n + "_w"], [n + "_y"], name=n,
                kernel_shape=[k["R"], k["S"]], strides=[k["stride_h"], k["stride_w"]],
                pads=[k["pad_h"], k["pad_w"], k["pad_h"], k["pad_w"]]))
            outputs.append(helper.make_tensor_value_info(n + "_y", elem, [k["N"], k["K"], p, q]))
        else:
            g, hid = GATES[k["kind"]], k["hidden"]
            inp(n + "_x", [k["T"], k["N"], hid], True)
            inp(n + "_w", [1, g * hid, hid])
            inp(n + "_r", [1, g * hid, hid], True)
            attrs = {"hidden_size": hid}
            if k["kind"] == "rnn":
                attrs["activations"] = ["Relu"]
            nodes.append(helper.make_node(ONNX_OP[k["kind"]], [n + "_x", n + "_w", n + "_r"],
                                          [n + "_y"], name=n, **attrs))
            outputs.append(helper.make_tensor_value_info(n + "_y", elem, [k["T"], 1, k["N"], hid]))
    graph = helper.make_graph(nodes, "deepbench", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), names, trained


def kernel_seconds(node, phase, want, launch):
    """The phase's (or its kernel want's) time as DeepBench measures it: the
    call repeated back to back, synchronized once. On a device file with a
    kernel_gap the host issues each call while the device runs the previous
    one: max(device time, launches x launch_overhead) (a two-stage
    pipeline); without one (launch = 0 here) each kernel's time includes its
    launch already."""
    t = node.get("fwd_time" if phase == "fwd" else "bwd_time")
    if not t:
        return None
    if want is None:
        n = sum(k.get("launches", 1) for k in t.get("kernels", [])) or 1
        return max(t["seconds"], n * launch)
    for k in t.get("kernels", []):
        # "conv wgrad" or its Winograd variant, "conv wgrad (Winograd)".
        if k["name"] in (want, want + " (Winograd)"):
            return max(k["seconds"], k.get("launches", 1) * launch)
    return None


def predict(ridge, device, kernels, elem, extra, workdir, tag):
    model, names, trained = build_graph(kernels, elem)
    path = os.path.join(workdir, tag + ".onnx")
    onnx.save(model, path)
    cmd = [ridge, "analyze", path, "--device", device, "--format", "json", "--top", "0"] + extra
    for t in trained:
        cmd += ["--trainable-input", t]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"ridge failed on {path}: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    by_name = {n["name"]: n for n in doc["nodes"]}
    dev = doc["device"]
    launch = dev["launch_overhead"] if dev.get("kernel_gap", 0) > 0 else 0.0
    preds = []
    for k, n in zip(kernels, names):
        node = by_name[n]
        p = {}
        for ph in PHASES:
            if k["kind"] in GATES:
                phase, want = RNN_KERNELS[ph]
            elif k["kind"] == "conv":
                phase, want = {"fwd_ms": ("fwd", None), "bwd_in_ms": ("bwd", "conv dgrad"),
                               "bwd_w_ms": ("bwd", "conv wgrad")}[ph]
            else:
                phase, want = ("fwd", None) if ph == "fwd_ms" else (None, None)
            if phase:
                s = kernel_seconds(node, phase, want, launch)
                if s:
                    p[ph] = s * 1e3
        preds.append(p)
    return preds


def shape_key(k):
    """The kernel's sizes, one CSV field: gemm MxNxK ta tb, conv NxCxHxW KxRxS/stride,
    recurrent hidden x batch x T."""
    if k["kind"] == "gemm":
        return f'{k["M"]}x{k["N"]}x{k["K"]} {k["ta"]}{k["tb"]}'
    if k["kind"] == "conv":
        return (f'{k["N"]}x{k["C"]}x{k["H"]}x{k["W"]} {k["K"]}x{k["R"]}x{k["S"]}'
                f'/{k["stride_h"]}x{k["stride_w"]} p{k["pad_h"]}x{k["pad_w"]}')
    return f'h{k["hidden"]} n{k["N"]} t{k["T"]}'


def impossible(k, ms, peak):
    allow = 2.25 if (k["kind"] == "conv" and k["R"] == 3 and k["S"] == 3
                     and k["stride_h"] == 1 and k["stride_w"] == 1) else 1.0
    return kernel_flops(k) / (ms * 1e-3) > 1.1 * peak * allow


def stats(errs):
    a = sorted(abs(e) for e in errs)
    med = a[len(a) // 2] if len(a) % 2 else 0.5 * (a[len(a) // 2 - 1] + a[len(a) // 2])
    within = sum(1 for e in a if e <= math.log(1.25)) / len(a)
    bias = math.exp(sum(errs) / len(errs))
    return math.exp(med) - 1, within, bias


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ridge", default=os.path.join(ROOT, "build", "bin", "ridge"))
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "validation", "deepbench"))
    ap.add_argument("--out", help="write per-phase rows (CSV) here")
    args = ap.parse_args()

    groups = collections.OrderedDict()
    per_gpu = collections.OrderedDict()
    excluded, rows = [], []
    with tempfile.TemporaryDirectory() as work:
        for gpu, device in DEVICES.items():
            data = json.load(open(os.path.join(args.data, gpu + ".json")))
            peak = device_peak(device)
            for prec, kernels in data.items():
                elem = TensorProto.FLOAT if prec == "fp32" else TensorProto.FLOAT16
                extra = ["--winograd=false"] if (gpu, prec) in FORCED_ALGOS else []
                preds = predict(args.ridge, device, kernels, elem, extra, work, f"{gpu}-{prec}")
                for k, p in zip(kernels, preds):
                    kind = "rnn" if k["kind"] in GATES else k["kind"]
                    for ph in PHASES:
                        m = k.get(ph)
                        if m is None:
                            continue
                        if impossible(k, m, peak):
                            excluded.append((gpu, prec, k["kind"], ph))
                            continue
                        if ph not in p:
                            sys.exit(f"ridge gave no {ph} for {gpu} {prec} {k}")
                        e = math.log(p[ph] / m)
                        groups.setdefault((gpu, kind, prec, ph), []).append(e)
                        per_gpu.setdefault(gpu, []).append(e)
                        rows.append((gpu, prec, k["kind"], ph, shape_key(k), m, p[ph]))

    print("| GPU | kind | precision | phase | n | typical error | within 1.25x | bias |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    bad_groups = []
    for (gpu, kind, prec, ph), errs in groups.items():
        typ, within, bias = stats(errs)
        flag = "" if 0.85 <= bias <= 1.15 else " **"
        if flag:
            bad_groups.append((gpu, kind, prec, ph, bias))
        print(f"| {gpu} | {kind} | {prec} | {ph[:-3]} | {len(errs)} | {typ:.0%} | {within:.0%} | "
              f"{bias:.2f}{flag} |")
    print()
    print("| GPU | phases | typical error | within 1.25x | bias | targets (<= 15%, >= 70%) |")
    print("|---|---:|---:|---:|---:|---|")
    ok_all = True
    for gpu, errs in per_gpu.items():
        typ, within, bias = stats(errs)
        ok = typ <= 0.15 and within >= 0.70
        ok_all &= ok
        print(f"| {gpu} | {len(errs)} | {typ:.0%} | {within:.0%} | {bias:.2f} | "
              f"{'met' if ok else 'not met'} |")
    allerr = [e for v in per_gpu.values() for e in v]
    typ, within, bias = stats(allerr)
    print(f"\nall GPUs: {len(allerr)} phases, typical error {typ:.0%}, {within:.0%} within 1.25x, "
          f"bias {bias:.2f}")
    print(f"groups with a bias outside 0.85-1.15: {len(bad_groups)} of {len(groups)}")
    c = collections.Counter(excluded)
    print(f"left out as faster than any kernel can run: {len(excluded)} phases"
          + ("".join(f"; {g} {p} {k} {ph[:-3]}: {n}" for (g, p, k, ph), n in sorted(c.items()))))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "deepbench-phases.csv"), "w") as f:
            f.write("gpu,precision,kind,phase,shape,measured_ms,predicted_ms\n")
            for r in rows:
                f.write("%s,%s,%s,%s,%s,%.6g,%.6g\n" % r)
    return 0 if ok_all and not bad_groups else 1


if __name__ == "__main__":
    sys.exit(main())
