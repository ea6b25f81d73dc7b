#!/usr/bin/python3
"""Real-corpus check of ridge's symbolic shapes and costs: every torchvision 0.14 model.

    /usr/bin/python3 validate/torchvision_corpus.py --ridge /tmp/ridge-corpus \
        --out validate/torchvision_corpus.md [--family classification,video] [--only a,b] \
        [--skip c,d] [--timeout 300] [--resume]

For each model of torchvision.models (classification), .detection, .segmentation, .video and
.optical_flow (random weights, weights=None, eval mode; nothing is downloaded) it

 1. exports the model to ONNX twice with Debian's torch 1.13 (opset 17, or the highest that
    works; do_constant_folding=True): (a) every dim fixed, batch 1; (b) with a dynamic batch
    axis `batch` on every input and output (not for detection models, whose input is a list of
    images). Exports go to --work-dir (default /tmp/tvcorpus) and are deleted once analyzed;
 2. runs `ridge analyze MODEL --format json` on each export with no flags, and on the dynamic
    one also with `--dim batch=1`, and reads coverage (nodes, modeled, unmodeled op + reason),
    the free symbols left (`needs_binding`) and the forward / backward MACs of the matrix
    products and convolutions (Conv, ConvTranspose, Gemm, MatMul, Einsum; per node `macs` and
    `bwd_macs`, times the node's loop `multiplier`) of the fixed export;
 3. counts the same work in torch at batch 1 on the same inputs: a TorchDispatchMode counts
    aten mm / addmm / bmm / baddbmm / matmul / linear / convolution / _convolution /
    convolution_backward as torch 2.x's torch.utils.flop_counter.FlopCounterMode does (2 FLOPs
    per multiply-accumulate, bias adds not counted; a convolution's backward costs one forward
    conv for grad_input and one for grad_weight, each when its output_mask bit is set: for
    grouped convs this is FlopCounterMode with the fix of pytorch/pytorch#183405).
    The forward runs with the parameters requiring grad and the input not (so the first layer
    computes no input gradient, as ridge assumes for graph inputs); the backward is
    sum(float outputs).backward(), counted separately;
 4. compares 2 * ridge MACs with torch's FLOPs, forward and backward.

Each model's export and torch count run in a child process with a time limit (--timeout,
default 300 s), one model at a time. Each model's results are kept in WORK_DIR/results/, and
--resume reuses them (to re-render the report, or to go on after an interruption). The ONNX
model-level tests Debian's libonnx-testdata installs (pytorch-converted, pytorch-operator,
simple; data/real holds only download URLs) are analyzed with no flags too, for coverage and
free symbols. Progress goes to stderr; the result is a Markdown report (--out).
"""
import argparse
import collections
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import time

FAMILIES = ("classification", "detection", "segmentation", "video", "optical_flow")
OPSETS = (17, 16, 15, 14, 13, 12, 11)
RIDGE_PRODUCT_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum"}
# Product-like aten ops the counter does not price; seeing one means torch's count is low.
TORCH_UNCOUNTED_PRODUCTS = {"aten.mv", "aten.dot", "aten.addmv", "aten.addbmm", "aten.einsum",
                            "aten.mkldnn_convolution", "aten.conv_tbc", "aten.tensordot"}
TESTDATA_DIRS = ("pytorch-converted", "pytorch-operator", "simple")
RATIO_TOL = 0.005
WORKER_MEMORY_LIMIT = 16 << 30  # address space of one model's child process


# ---------------------------------------------------------------------------------------------
# The corpus: models, their inputs, export

def list_corpus(families):
    """[(name, family)] of every torchvision model of the given families."""
    import torchvision.models as tvm
    modules = {"classification": tvm, "detection": tvm.detection,
               "segmentation": tvm.segmentation, "video": tvm.video,
               "optical_flow": tvm.optical_flow}
    return [(name, fam) for fam in families for name in tvm.list_models(module=modules[fam])]


def build_model(name, family):
    """The model with random weights in eval mode; no pretrained backbone either."""
    import torch
    import torchvision.models as tvm
    torch.manual_seed(0)
    kwargs = {"weights": None}
    if family in ("detection", "segmentation"):
        kwargs["weights_backbone"] = None
    return tvm.get_model(name, **kwargs).eval()


def example_inputs(name, family):
    """The smallest inputs the model accepts, as the positional arguments of forward()."""
    import torch
    if family == "detection":
        return ([torch.rand(3, 320, 320)],)
    if family == "optical_flow":
        return (torch.rand(1, 3, 128, 128), torch.rand(1, 3, 128, 128))
    if family == "video":
        # MViT's position embeddings and S3D's final pooling need 16 frames of 224x224.
        if name.startswith("mvit") or name == "s3d":
            return (torch.randn(1, 3, 16, 224, 224),)
        return (torch.randn(1, 3, 8, 112, 112),)
    side = 299 if name == "inception_v3" else 224
    return (torch.randn(1, 3, side, side),)


def flat_tensors(obj):
    """The tensors of a nested output (tensor, list, tuple, dict), in export order."""
    import torch
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in flat_tensors(item)]
    return []


def io_names(inputs, n_outputs):
    inames = ["input"] if len(inputs) == 1 else [f"input{i}" for i in range(len(inputs))]
    onames = ["output"] if n_outputs == 1 else [f"output{i}" for i in range(n_outputs)]
    return inames, onames


def export_onnx(model, inputs, path, n_outputs, dynamic):
    """Export at the highest opset of OPSETS that works; returns the opset. A lower opset is
    tried only when the exporter's own conversion failed for a reason other than an operator
    it cannot export (which no lower opset supports either)."""
    import torch
    inames, onames = io_names(inputs, n_outputs)
    axes = {n: {0: "batch"} for n in inames + onames} if dynamic else None
    os.makedirs(os.path.dirname(path), exist_ok=True)

    def export(opset):
        with torch.enable_grad():  # as in training: no fused inference-only kernels
            torch.onnx.export(model, inputs, path, opset_version=opset, input_names=inames,
                              output_names=onames, dynamic_axes=axes, do_constant_folding=True,
                              training=torch.onnx.TrainingMode.EVAL)
        return opset

    for opset in OPSETS[:-1]:
        try:
            return export(opset)
        except torch.onnx.errors.UnsupportedOperatorError:
            raise
        except torch.onnx.errors.OnnxExporterError:
            continue
    return export(OPSETS[-1])


# ---------------------------------------------------------------------------------------------
# torch's count (torch.utils.flop_counter.FlopCounterMode's formulas, torch 2.x)

def _mm(a, b):
    return 2 * a[0] * a[1] * b[1]


def _bmm(a, b):
    return 2 * a[0] * a[1] * a[2] * b[2]


def _conv(x, w, out, transposed):
    conv_shape = (x if transposed else out)[2:]
    c_out, c_in, *kernel = w
    return 2 * x[0] * math.prod(conv_shape) * c_out * c_in * math.prod(kernel)


def _conv_backward(grad_out, x, w, transposed, output_mask):
    """grad_input and grad_weight each cost one forward conv. FlopCounterMode's grad_weight
    term (a conv of the input with grad_out) says the same once divided by the groups, as
    pytorch/pytorch#183405 does; without that, a depthwise conv's grad_weight is C times high."""
    return (bool(output_mask[0]) + bool(output_mask[1])) * _conv(x, w, grad_out, transposed)


def _matmul(a, out):
    """matmul / linear: each output element is a dot product over a's last dim."""
    return 2 * math.prod(out) * a[-1]


def aten_product_flops(name, args, out):
    """FLOPs of one aten call if it is a counted product op, else None."""
    shape = lambda t: list(t.shape)  # noqa: E731
    if name == "aten.mm":
        return _mm(shape(args[0]), shape(args[1]))
    if name == "aten.addmm":
        return _mm(shape(args[1]), shape(args[2]))
    if name == "aten.bmm":
        return _bmm(shape(args[0]), shape(args[1]))
    if name == "aten.baddbmm":
        return _bmm(shape(args[1]), shape(args[2]))
    if name in ("aten.matmul", "aten.linear"):
        return _matmul(shape(args[0]), shape(out))
    if name in ("aten.convolution", "aten._convolution"):
        return _conv(shape(args[0]), shape(args[1]), shape(out), bool(args[6]))
    if name == "aten.convolution_backward":
        return _conv_backward(shape(args[0]), shape(args[1]), shape(args[2]), bool(args[7]),
                              args[10])
    return None


def torch_product_flops(model, inputs):
    """{fwd, bwd, bwd_error, uncounted}: torch's product + conv FLOPs of one forward and one
    backward (bwd None with bwd_error when there is nothing to differentiate or it fails)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.phase = "fwd"
            self.flops = {"fwd": 0, "bwd": 0}
            self.uncounted = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = str(func.overloadpacket)
            flops = aten_product_flops(name, args, out)
            if flops is not None:
                self.flops[self.phase] += flops
            elif name in TORCH_UNCOUNTED_PRODUCTS:
                self.uncounted.add(name)
            return out

    for p in model.parameters():
        p.requires_grad_(True)
    counter = Counter()
    result = {"bwd": None, "bwd_error": None}
    with torch.enable_grad(), counter:
        outputs = [t for t in flat_tensors(model(*inputs))
                   if t.is_floating_point() and t.requires_grad]
        counter.phase = "bwd"
        if not outputs:
            result["bwd_error"] = "no output requires grad"
        else:
            try:
                sum(t.sum() for t in outputs).backward()
                result["bwd"] = counter.flops["bwd"]
            except RuntimeError as e:
                result["bwd_error"] = short_error(e)
    result["fwd"] = counter.flops["fwd"]
    result["uncounted"] = sorted(counter.uncounted)
    return result


def short_error(e, width=110):
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    text = lines[0] if lines else type(e).__name__
    if len(lines) > 1 and len(text) < 30:
        text += " " + lines[1]
    return (type(e).__name__ + ": " + text)[:width]


def worker(name, family, workdir):
    """Child process: torch count, then the fixed and the dynamic-batch export. Writes what is
    done so far to workdir/result.json after each step, so a timeout keeps the finished part."""
    import torch
    torch.set_num_threads(2)
    result = {}
    path = os.path.join(workdir, "result.json")

    def step(key, fn):
        t0 = time.time()
        try:
            result[key] = fn()
        except Exception as e:  # noqa: BLE001 - any failure of a model is a result
            result[key + "_error"] = short_error(e)
        result[key + "_seconds"] = round(time.time() - t0, 1)
        write_json(path, result)

    model = build_model(name, family)
    inputs = example_inputs(name, family)
    with torch.no_grad():
        n_outputs = len(flat_tensors(model(*inputs)))
    step("torch", lambda: torch_product_flops(model, inputs))
    model.zero_grad(set_to_none=True)
    for kind in ("fixed", "dynamic"):
        if kind == "dynamic" and family == "detection":
            continue
        onnx_path = os.path.join(workdir, kind, "model.onnx")
        step(kind, lambda: {"path": onnx_path,
                            "opset": export_onnx(model, inputs, onnx_path, n_outputs,
                                                 kind == "dynamic")})


def write_json(path, obj):
    """Write atomically: a child killed by its time limit leaves the last complete file."""
    with open(path + ".part", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".part", path)


def run_worker(name, family, workdir, timeout):
    """The worker's result for one model, run in a child process under a time limit."""
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--family", family,
           "--work-dir", workdir]
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_LIMIT,) * 2)  # noqa
    status = None
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, preexec_fn=limit)
        if p.returncode != 0:
            tail = p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"]
            status = f"worker exited {p.returncode}: {tail[0][:100]}"
    except subprocess.TimeoutExpired:
        status = f"timeout after {timeout} s"
    path = os.path.join(workdir, "result.json")
    result = json.load(open(path)) if os.path.exists(path) else {}
    if status:
        result["worker_error"] = status
    return result


# ---------------------------------------------------------------------------------------------
# ridge

def ridge_analyze(ridge, onnx_path, extra=(), timeout=300):
    """Summary of `ridge analyze --format json`: coverage, free symbols, product MACs."""
    cmd = [ridge, "analyze", onnx_path, "--format", "json", *extra]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"ridge timed out after {timeout} s"}
    seconds = round(time.time() - t0, 2)
    try:
        return summarize_analysis(json.loads(p.stdout), p.returncode, seconds)
    except (ValueError, KeyError, TypeError):
        tail = (p.stderr.strip().splitlines() or ["no JSON document"])[-1]
        return {"error": f"ridge exit {p.returncode}: {tail[:150]}"}


def summarize_analysis(doc, rc, seconds):
    cov = doc["coverage"]
    summary = {
        "rc": rc, "seconds": seconds,
        "nodes": cov["nodes"], "modeled": cov["modeled"],
        "unmodeled": {u["op"]: u["count"] for u in cov["unmodeled"]},
        "free": doc.get("needs_binding", []),
        "warnings": [w if isinstance(w, str) else json.dumps(w) for w in doc.get("warnings", [])],
    }
    summary.update(product_macs(doc["nodes"]))
    return summary


def product_macs(nodes):
    """{fwd_macs, bwd_macs}: sums over the modeled product/conv nodes; "formula" where a count
    is one (free symbols left)."""
    sums = {"fwd_macs": 0, "bwd_macs": 0}
    for n in nodes:
        if n["op"] not in RIDGE_PRODUCT_OPS or not n["modeled"]:
            continue
        for key, field in (("fwd_macs", "macs"), ("bwd_macs", "bwd_macs")):
            v, k = n[field], n["multiplier"]
            if isinstance(sums[key], str) or isinstance(v, str) or isinstance(k, str):
                sums[key] = "formula"
            else:
                sums[key] += v * k
    return sums


def analyze_exports(ridge, result):
    """ridge runs of one model's exports: fixed (no flags), dynamic (no flags, batch=1)."""
    runs = {}
    if "fixed" in result:
        runs["fixed"] = ridge_analyze(ridge, result["fixed"]["path"])
    if "dynamic" in result:
        runs["dynamic"] = ridge_analyze(ridge, result["dynamic"]["path"])
        runs["dynamic_b1"] = ridge_analyze(ridge, result["dynamic"]["path"], ["--dim", "batch=1"])
    return runs


def analyze_testdata(ridge, root):
    """[(name, ridge summary)] of libonnx-testdata's model-level tests."""
    rows = []
    for sub in TESTDATA_DIRS:
        d = os.path.join(root, sub)
        for test in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            path = os.path.join(d, test, "model.onnx")
            if os.path.exists(path):
                rows.append((f"{sub}/{test}", ridge_analyze(ridge, path)))
    return rows


# ---------------------------------------------------------------------------------------------
# The report

def model_row(name, family, result, runs):
    """One model's numbers for the table and the summary."""
    torch_res = result.get("torch", {})
    fixed, dyn, dyn1 = runs.get("fixed", {}), runs.get("dynamic", {}), runs.get("dynamic_b1", {})
    notes = []
    for key, label in (("worker_error", "worker"), ("torch_error", "torch")):
        if key in result:
            notes.append(f"{label}: {result[key]}")
    if torch_res.get("bwd_error"):
        notes.append(f"torch bwd: {torch_res['bwd_error']}")
    if torch_res.get("uncounted"):
        notes.append("torch also ran " + ", ".join(torch_res["uncounted"]))
    for label, run in (("fixed", fixed), ("dyn", dyn), ("dyn batch=1", dyn1)):
        if run.get("error"):
            notes.append(f"ridge {label}: {run['error']}")
        elif run and run["rc"] != 0:
            notes.append(f"ridge {label}: exit {run['rc']}")
        elif run.get("warnings"):
            notes.append(f"ridge {label}: {len(run['warnings'])} warning(s): "
                         + run["warnings"][0][:120])
    if dyn1 and fixed and "fwd_macs" in dyn1 and "fwd_macs" in fixed and \
            (dyn1["fwd_macs"], dyn1["bwd_macs"]) != (fixed["fwd_macs"], fixed["bwd_macs"]):
        notes.append(f"dyn batch=1 MACs {dyn1['fwd_macs']}/{dyn1['bwd_macs']} != fixed "
                     f"{fixed['fwd_macs']}/{fixed['bwd_macs']}")
    row = {
        "name": name, "family": family,
        "fixed_export": export_status(result, "fixed"),
        "dynamic_export": "n/a" if family == "detection" else export_status(result, "dynamic"),
        "fixed": fixed, "dynamic": dyn, "dynamic_b1": dyn1,
        "ridge_fwd": twice(fixed.get("fwd_macs")), "ridge_bwd": twice(fixed.get("bwd_macs")),
        "torch_fwd": torch_res.get("fwd"), "torch_bwd": torch_res.get("bwd"),
        "notes": notes,
        "seconds": {"torch": result.get("torch_seconds", 0),
                    "export": result.get("fixed_seconds", 0) + result.get("dynamic_seconds", 0),
                    "ridge": sum(run.get("seconds", 0) for run in runs.values())},
    }
    row["fwd_ratio"] = ratio(row["ridge_fwd"], row["torch_fwd"])
    row["bwd_ratio"] = ratio(row["ridge_bwd"], row["torch_bwd"])
    return row


def export_status(result, kind):
    if kind in result:
        return f"ok (opset {result[kind]['opset']})"
    if kind + "_error" in result:
        return result[kind + "_error"]
    return "not reached" + (f" ({result['worker_error']})" if "worker_error" in result else "")


def is_number(v):
    return isinstance(v, (int, float))


def twice(macs):
    return 2 * macs if is_number(macs) else macs


def ratio(a, b):
    if not (is_number(a) and is_number(b)):
        return None
    if b == 0:
        return 1.0 if a == 0 else math.inf
    return a / b


def fully_modeled(run):
    return bool(run) and "error" not in run and run["modeled"] == run["nodes"]


def cell(v, kind="num"):
    if v is None:
        return "n/a"
    if kind == "gflop" and is_number(v):
        return f"{v / 1e9:.4f}"
    if kind == "ratio":
        return f"{v:.4f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def coverage_cell(run):
    if not run:
        return "n/a"
    if "error" in run:
        return "error"
    return f"{run['modeled']}/{run['nodes']}"


def free_cell(run, shown=6):
    if not run or "error" in run:
        return "n/a"
    free = run["free"]
    more = f" (+{len(free) - shown} more)" if len(free) > shown else ""
    return ", ".join(free[:shown]) + more or "none"


def in_tol(r):
    return r is not None and abs(r - 1) <= RATIO_TOL


def summary_lines(rows):
    n = len(rows)
    fixed_ok = sum(r["fixed_export"].startswith("ok") for r in rows)
    dyn_ok = sum(r["dynamic_export"].startswith("ok") for r in rows)
    dyn_n = sum(r["dynamic_export"] != "n/a" for r in rows)
    analyzed = [r for r in rows if r["fixed"]]
    full = [r for r in analyzed
            if all(fully_modeled(run) for run in (r["fixed"], r["dynamic"]) if run)]
    compared = [r for r in rows if r["fwd_ratio"] is not None]
    both = [r for r in rows if r["fwd_ratio"] is not None and r["bwd_ratio"] is not None]
    fwd_in = [r for r in compared if in_tol(r["fwd_ratio"])]
    both_in = [r for r in both if in_tol(r["fwd_ratio"]) and in_tol(r["bwd_ratio"])]
    lines = [
        f"- Models: {n}; exported with fixed shapes: {fixed_ok}; with a dynamic batch: "
        f"{dyn_ok} of {dyn_n} (detection models have no batch axis).",
        f"- Fully modeled with no flags (every node of each export ridge got): {len(full)} of "
        f"{len(analyzed)} analyzed.",
        f"- Within {RATIO_TOL:.1%} of torch: forward {len(fwd_in)} of {len(compared)} compared; "
        f"forward and backward {len(both_in)} of {len(both)} compared.",
    ]
    for key, label in (("fwd_ratio", "forward"), ("bwd_ratio", "backward")):
        have = sorted((r[key], r["name"]) for r in rows if r[key] is not None)
        if have:
            lo, hi = have[0], have[-1]
            lines.append(f"- Worst {label} ratios ridge/torch: lowest {lo[0]:.4f} ({lo[1]}), "
                         f"highest {hi[0]:.4f} ({hi[1]}).")
    timeouts = [r["name"] for r in rows if "timeout" in " ".join(r["notes"])]
    lines.append(f"- Timed out (--timeout): {', '.join(timeouts) or 'none'}.")
    total = {k: sum(r["seconds"][k] for r in rows) / 60 for k in ("torch", "export", "ridge")}
    slowest = max(rows, key=lambda r: r["seconds"]["ridge"], default=None)
    lines.append(f"- Time: torch counts {total['torch']:.1f} min, exports {total['export']:.1f} "
                 f"min, ridge {total['ridge']:.1f} min"
                 + (f" (slowest: {slowest['name']}, {slowest['seconds']['ridge']:.1f} s for its "
                    f"runs)." if slowest else "."))
    return lines


def reason_class(op):
    """An unmodeled op string with its value names and shapes elided, so that the same reason
    in different models (and nodes) groups together."""
    return re.sub(r"\[[^\]]*\]", "[…]", re.sub(r"'[^']*'", "'…'", op))


def reason_kind(cls):
    """Where a reason sits: the op whose own output shape is lost, an op downstream of one
    (an input of unknown shape), or another reason."""
    if "(output '…' has unknown shape" in cls:
        return "shape lost here"
    if "(input '…' has unknown shape" in cls:
        return "downstream"
    return "other"


def unmodeled_reasons(rows):
    """[(reason class, kind, models, nodes, an example)] over every ridge run of every model
    (nodes: the most any one run of that model left unmodeled): the ops where shapes are lost
    first, then other reasons, then the ops downstream of a lost shape; most models first."""
    models, nodes, example = collections.Counter(), collections.Counter(), {}
    for r in rows:
        per_model = collections.Counter()
        for run in (r["fixed"], r["dynamic"], r["dynamic_b1"]):
            per_run = collections.Counter()
            for op, count in (run or {}).get("unmodeled", {}).items():
                per_run[reason_class(op)] += count
                example.setdefault(reason_class(op), f"{r['name']}: {op}")
            for cls, count in per_run.items():
                per_model[cls] = max(per_model[cls], count)
        models.update(per_model.keys())
        nodes.update(per_model)
    kinds = ("shape lost here", "other", "downstream")
    order = sorted(models, key=lambda c: (kinds.index(reason_kind(c)), -models[c], -nodes[c], c))
    return [(c, reason_kind(c), models[c], nodes[c], example[c]) for c in order]


def write_report(path, rows, testdata, args):
    command = (f"/usr/bin/python3 validate/torchvision_corpus.py --ridge {args.ridge} --out "
               f"{args.out}" + (f" --family {args.family}" if args.family else "")
               + (f" --only {args.only}" if args.only else "")
               + (f" --skip {args.skip}" if args.skip else ""))
    out = ["# ridge on the torchvision 0.14 corpus", "",
           f"Generated by `{command}` (torch "
           + torch_version() + "). Random weights, eval mode, batch 1; FLOPs are 2 x MACs of "
           "Conv/ConvTranspose/Gemm/MatMul/Einsum (ridge, fixed-shape export) against torch's "
           "aten product and convolution FLOPs (FlopCounterMode's formulas; a grouped conv's "
           "weight gradient counted as one forward conv, as after pytorch/pytorch#183405, where "
           "torch 2.x's FlopCounterMode counts it `groups` times). GFLOP = 1e9 FLOP.",
           "", "## Summary", ""]
    out += summary_lines(rows)
    out += ["", "## Unmodeled ops (over the corpus)", "",
            "| op (reason) | kind | models | nodes | example |", "|---|---|---:|---:|---|"]
    out += [f"| {cell(c)} | {kind} | {m} | {n} | {cell(ex)} |"
            for c, kind, m, n, ex in unmodeled_reasons(rows)] or ["| none | | | | |"]
    out += ["", "## Models", "",
            "| model | family | export fixed | export dyn | nodes | modeled fixed | modeled dyn "
            "| free fixed | free dyn | ridge fwd GFLOP | torch fwd GFLOP | fwd ratio "
            "| ridge bwd GFLOP | torch bwd GFLOP | bwd ratio |",
            "|---|---|---|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        f = r["fixed"]
        out.append("| " + " | ".join([
            r["name"], r["family"], cell(r["fixed_export"]), cell(r["dynamic_export"]),
            str(f.get("nodes", "n/a")), coverage_cell(f), coverage_cell(r["dynamic"]),
            free_cell(f), free_cell(r["dynamic"]),
            cell(r["ridge_fwd"], "gflop"), cell(r["torch_fwd"], "gflop"),
            cell(r["fwd_ratio"], "ratio"), cell(r["ridge_bwd"], "gflop"),
            cell(r["torch_bwd"], "gflop"), cell(r["bwd_ratio"], "ratio")]) + " |")
    noted = [r for r in rows if r["notes"]]
    if noted:
        out += ["", "## Notes", ""]
        out += [f"- {r['name']}: " + "; ".join(cell(n) for n in r["notes"]) for r in noted]
    if testdata:
        out += testdata_section(testdata)
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


def testdata_section(testdata):
    clean = [name for name, s in testdata if fully_modeled(s) and not s["free"]]
    out = ["", "## libonnx-testdata model tests (no flags)", "",
           f"{len(testdata)} models ({', '.join(TESTDATA_DIRS)}; data/real holds only download "
           f"URLs, no models): {len(clean)} fully modeled with no free symbol; the others:", "",
           "| test | nodes | modeled | free symbols | unmodeled |", "|---|---:|---:|---|---|"]
    for name, s in testdata:
        if name in clean:
            continue
        if "error" in s:
            out.append(f"| {name} | | | | {cell(s['error'])} |")
            continue
        unmod = "; ".join(f"{op} x{c}" for op, c in s["unmodeled"].items())
        out.append(f"| {name} | {s['nodes']} | {s['modeled']} | {free_cell(s)} | "
                   f"{cell(unmod)} |")
    return out


def torch_version():
    import torch
    import torchvision
    return f"{torch.__version__}, torchvision {torchvision.__version__}"


# ---------------------------------------------------------------------------------------------

def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ridge", default="build/bin/ridge", help="the ridge binary")
    ap.add_argument("--out", default="validate/torchvision_corpus.md", help="Markdown report")
    ap.add_argument("--family", default="", help="comma-separated subset of: "
                    + ", ".join(FAMILIES))
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--skip", default="", help="comma-separated model names to leave out")
    ap.add_argument("--timeout", type=int, default=300,
                    help="seconds for one model's torch count and exports (default 300)")
    ap.add_argument("--work-dir", default="/tmp/tvcorpus", help="where the exports go")
    ap.add_argument("--resume", action="store_true",
                    help="reuse the per-model results a previous run left in WORK_DIR/results "
                    "(same ridge binary); run only the models without one")
    ap.add_argument("--testdata", default="/usr/share/libonnx-testdata/data",
                    help="libonnx-testdata's data directory ('' to skip)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    return ap.parse_args()


def select_corpus(args):
    families = [f for f in args.family.split(",") if f] or list(FAMILIES)
    unknown = set(families) - set(FAMILIES)
    if unknown:
        sys.exit(f"unknown family {sorted(unknown)}; choose from {FAMILIES}")
    corpus = list_corpus(families)
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}
    missing = (only | skip) - {name for name, _ in corpus}
    if missing:
        sys.exit(f"not in the corpus: {sorted(missing)}")
    return [(n, f) for n, f in corpus if (not only or n in only) and n not in skip]


def check_model(args, name, family):
    """(worker result, ridge runs) of one model; cached in WORK_DIR/results/NAME.json."""
    cache = os.path.join(args.work_dir, "results", name + ".json")
    if args.resume and os.path.exists(cache):
        with open(cache) as f:
            cached = json.load(f)
        return cached["result"], cached["runs"]
    workdir = os.path.join(args.work_dir, name)
    result = run_worker(name, family, workdir, args.timeout)
    runs = analyze_exports(args.ridge, result)
    if any("error" in run for run in runs.values()):
        print(f"{name}: ridge failed; exports kept in {workdir}", file=sys.stderr)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    write_json(cache, {"result": result, "runs": runs})
    return result, runs


def main():
    args = parse_args()
    if args.worker:
        worker(args.worker, args.family, args.work_dir)
        return
    corpus = select_corpus(args)
    t0 = time.time()
    rows = []
    for i, (name, family) in enumerate(corpus, 1):
        t_model = time.time()
        row = model_row(name, family, *check_model(args, name, family))
        rows.append(row)
        print(f"[{i}/{len(corpus)}] {name} ({family}): fixed {row['fixed_export'][:40]}, "
              f"dyn {row['dynamic_export'][:40]}, fwd {cell(row['fwd_ratio'], 'ratio')}, "
              f"bwd {cell(row['bwd_ratio'], 'ratio')}, {time.time() - t_model:.0f} s "
              f"(total {(time.time() - t0) / 60:.1f} min)", file=sys.stderr, flush=True)
        write_report(args.out, rows, [], args)  # partial report as we go
    testdata = analyze_testdata(args.ridge, args.testdata) if args.testdata else []
    print(f"libonnx-testdata: {len(testdata)} models analyzed", file=sys.stderr)
    write_report(args.out, rows, testdata, args)
    print(f"wrote {args.out} ({(time.time() - t0) / 60:.1f} min)", file=sys.stderr)


if __name__ == "__main__":
    main()
