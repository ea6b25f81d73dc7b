#!/usr/bin/python3
"""Compare ridge's matrix-product MACs with the FLOPs PyTorch executes (validate/torch_flops.py).

    /usr/bin/python3 validate/torch_flops.py          # once: ONNX exports + torch_flops.json
    /usr/bin/python3 validate/compare_torch.py [--ridge build/bin/ridge] [--models a,b]

For each model in torch_flops.json, runs `ridge analyze MODEL --format json` and sums, over the
"nodes" entries whose "op" is a matrix-product op (Conv, ConvTranspose, Gemm, MatMul, Einsum),
"macs" (forward, bias excluded) and "bwd_macs" (input-gradient + weight-gradient products).
Checks
    torch fwd_flops            vs 2 * sum(macs)                within --fwd-tol   (1%)
    torch fwd_flops+bwd_flops  vs 2 * sum(macs + bwd_macs)     within --total-tol (2%)
prints a Markdown table and exits non-zero if any row fails (or ridge fails on a model).
Uses only the standard library (plus python3-onnx, if present, to find symbolic input dims).
"""
import argparse
import json
import os
import subprocess
import sys
import time

MATRIX_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum"}
CONV_OPS = {"Conv", "ConvTranspose"}
# Published forward GMACs at 1x3x224x224 (torchvision model docs / common FLOP tables).
PUBLISHED_GMACS = {"resnet50": ("ResNet-50", 4.1), "vgg16": ("VGG-16", 15.5)}
TORCH_CONV = {"aten.convolution", "aten._convolution", "aten.convolution_backward",
              "aten.mkldnn_convolution", "aten.cudnn_convolution", "aten.thnn_conv2d",
              "aten._slow_conv2d_forward", "aten.slow_conv_dilated2d",
              "aten._nnpack_spatial_convolution"}


def symbolic_dim_flags(onnx_path, input_shape):
    """--dim NAME=N for each symbolic dim of the (single) graph input, bound to the shape torch
    used. Fixed-shape exports have none. Needs python3-onnx; without it, returns []."""
    try:
        import onnx  # noqa: WPS433
    except ImportError:
        return []
    model = onnx.load(onnx_path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    flags = []
    inputs = [i for i in model.graph.input if i.name not in inits]
    for inp in inputs[:1]:
        for pos, d in enumerate(inp.type.tensor_type.shape.dim):
            if d.dim_param and pos < len(input_shape):
                flags.append(f"--dim={d.dim_param}={input_shape[pos]}")
    return flags


def run_ridge(ridge, onnx_path, extra, timeout):
    cmd = [ridge, "analyze", onnx_path, "--format", "json"] + extra
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    dt = time.time() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr.strip()}")
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        raise RuntimeError(f"{' '.join(cmd)}: output is not JSON ({e})") from e
    return doc, p.stderr.strip(), dt


def sum_ridge(doc):
    """Sums over matrix-product nodes: macs, bwd_macs, split into conv / matmul kinds, plus the
    number of matrix nodes ridge could not model (macs or bwd_macs missing / null)."""
    nodes = doc.get("nodes")
    if not isinstance(nodes, list):
        raise RuntimeError(f"ridge JSON 'nodes' is {type(nodes).__name__}, expected an array of "
                           f"per-node entries (schema {doc.get('schema')!r})")
    s = {"macs": 0, "bwd_macs": 0, "conv_macs": 0, "conv_bwd": 0, "mm_macs": 0, "mm_bwd": 0,
         "n": 0, "unmodeled": []}
    for n in nodes:
        op = n.get("op")
        if op not in MATRIX_OPS:
            continue
        s["n"] += 1
        macs, bwd = n.get("macs"), n.get("bwd_macs")
        if macs is None or bwd is None:
            s["unmodeled"].append(n.get("name", op))
        macs, bwd = int(macs or 0), int(bwd or 0)
        s["macs"] += macs
        s["bwd_macs"] += bwd
        kind = "conv" if op in CONV_OPS else "mm"
        s[f"{kind}_macs"] += macs
        s[f"{kind}_bwd"] += bwd
    return s


def torch_kinds(t):
    """torch FLOPs split into conv and matmul (mm/addmm/bmm/baddbmm) kinds."""
    out = {"conv_fwd": 0, "conv_bwd": 0, "mm_fwd": 0, "mm_bwd": 0}
    for phase in ("fwd", "bwd"):
        for op, f in t[f"{phase}_by_op"].items():
            kind = "conv" if op in TORCH_CONV else "mm"
            out[f"{kind}_{phase}"] += f
    return out


def err_pct(ref, got):
    if ref == 0:
        return 0.0 if got == 0 else float("inf")
    return 100.0 * (got - ref) / ref


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ridge", default="build/bin/ridge", help="ridge binary (build/bin/ridge)")
    ap.add_argument("--json", default="build/models/torch_flops.json",
                    help="torch_flops.py output (build/models/torch_flops.json)")
    ap.add_argument("--models", default="", help="comma-separated subset (default: all)")
    ap.add_argument("--fwd-tol", type=float, default=1.0, help="forward tolerance, %% (1)")
    ap.add_argument("--total-tol", type=float, default=2.0, help="fwd+bwd tolerance, %% (2)")
    ap.add_argument("--ridge-arg", action="append", default=[],
                    help="extra argument passed to ridge analyze (repeatable)")
    ap.add_argument("--timeout", type=float, default=600, help="per-model ridge timeout, s")
    ap.add_argument("--no-breakdown", action="store_true",
                    help="omit the conv / matmul breakdown table")
    args = ap.parse_args()

    if not os.path.exists(args.json):
        sys.exit(f"{args.json} not found: run /usr/bin/python3 validate/torch_flops.py first")
    if not (os.path.isfile(args.ridge) and os.access(args.ridge, os.X_OK)):
        sys.exit(f"ridge binary {args.ridge!r} not found or not executable (use --ridge)")
    with open(args.json) as f:
        torch_res = json.load(f)
    names = [m.strip() for m in args.models.split(",") if m.strip()] or list(torch_res)

    rows, kinds, failures, notes, ridge_sums = [], [], [], [], {}
    for name in names:
        t = torch_res.get(name)
        if t is None:
            failures.append(f"{name}: not in {args.json}")
            continue
        path = t["onnx"]
        if not os.path.exists(path):
            failures.append(f"{name}: {path} missing (re-run torch_flops.py)")
            continue
        extra = symbolic_dim_flags(path, t["input_shape"]) + args.ridge_arg
        try:
            doc, stderr, dt = run_ridge(args.ridge, path, extra, args.timeout)
            s = sum_ridge(doc)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            failures.append(f"{name}: {e}")
            rows.append(f"| {name} | {t['fwd_flops'] / 1e9:.3f} | error | | "
                        f"{(t['fwd_flops'] + t['bwd_flops']) / 1e9:.3f} | error | | FAIL |")
            continue
        ridge_sums[name] = s
        if stderr:
            notes.append(f"{name}: ridge stderr: {stderr.splitlines()[0]}"
                         + (f" (+{len(stderr.splitlines()) - 1} lines)"
                            if len(stderr.splitlines()) > 1 else ""))
        if s["unmodeled"]:
            notes.append(f"{name}: {len(s['unmodeled'])} matrix node(s) without macs/bwd_macs: "
                         + ", ".join(map(str, s["unmodeled"][:5])))
        tf, tt = t["fwd_flops"], t["fwd_flops"] + t["bwd_flops"]
        rf, rt = 2 * s["macs"], 2 * (s["macs"] + s["bwd_macs"])
        ef, et = err_pct(tf, rf), err_pct(tt, rt)
        ok = abs(ef) <= args.fwd_tol and abs(et) <= args.total_tol
        if not ok:
            failures.append(f"{name}: fwd err {ef:+.3f}%, fwd+bwd err {et:+.3f}%")
        rows.append(f"| {name} | {tf / 1e9:.3f} | {rf / 1e9:.3f} | {ef:+.3f} | {tt / 1e9:.3f} | "
                    f"{rt / 1e9:.3f} | {et:+.3f} | {'pass' if ok else 'FAIL'} |")
        tk = torch_kinds(t)
        kinds.append(f"| {name} | {tk['conv_fwd'] / 1e9:.3f} / {2 * s['conv_macs'] / 1e9:.3f} | "
                     f"{tk['conv_bwd'] / 1e9:.3f} / {2 * s['conv_bwd'] / 1e9:.3f} | "
                     f"{tk['mm_fwd'] / 1e9:.3f} / {2 * s['mm_macs'] / 1e9:.3f} | "
                     f"{tk['mm_bwd'] / 1e9:.3f} / {2 * s['mm_bwd'] / 1e9:.3f} | {s['n']} | "
                     f"{dt:.2f} |")

    print(f"ridge vs PyTorch (torch {next(iter(torch_res.values())).get('torch_version', '?')}),"
          f" matrix-product FLOPs = 2 x MACs, bias excluded; pass: fwd within {args.fwd_tol}%,"
          f" fwd+bwd within {args.total_tol}%\n")
    print("| model | torch fwd GFLOP | ridge fwd GFLOP | err % | torch fwd+bwd GFLOP | "
          "ridge fwd+bwd GFLOP | err % | pass |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    if kinds and not args.no_breakdown:
        print("\nBreakdown, GFLOP as torch / ridge (conv = Conv*, matmul = Gemm/MatMul/Einsum vs "
              "aten mm/addmm/bmm/baddbmm):\n")
        print("| model | conv fwd | conv bwd | matmul fwd | matmul bwd | ridge matrix nodes | "
              "ridge s |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        print("\n".join(kinds))

    print()
    for key, (label, ref) in PUBLISHED_GMACS.items():
        t, s = torch_res.get(key), ridge_sums.get(key)
        if t is None or key not in names:
            continue
        shape = "x".join(map(str, t["input_shape"]))
        ridge_g = f"{s['macs'] / 1e9:.3f}" if s else "n/a"
        print(f"{label} forward @ {shape}: ridge {ridge_g} GMACs, torch "
              f"{t['fwd_flops'] / 2e9:.3f} GMACs, published ~{ref} GMACs")
    for n in notes:
        print(f"note: {n}")
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print("\nall models pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
