#!/usr/bin/python3
"""Validates `ridge plan` against Megatron-LM's published Table 1 (Narayanan et
al., SC'21, arXiv 2104.04473; ../shared/validation/megatron-sc21-table1.md).

For each row: generate the GPT graph with bench/gen_gpt.py (weights as absent
external data), then
  - parameters: ridge's trainable count vs the paper's formula
    P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)) (the graph also has the final
    LayerNorm's 2h, which the formula omits; reported separately);
  - FLOPs per iteration: ridge's matrix FLOPs (forward, backward, recomputation)
    vs F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h));
  - throughput: ridge plan evaluates the paper's (t, p, d) with full
    recomputation and fp16 on A100-SXM4-80GB; predicted TFLOP/s per GPU =
    F / predicted step time / n, vs the measured figure.
The micro-batch size and interleaving of each run are those of Megatron-LM's
examples/sc21/run_table_1.sh (the table does not print them). Assumptions:
no sequence parallelism and no ZeRO (neither was
in Megatron-LM in 2021); the data-parallel gradient all-reduce as the
script's DDP runs it: its four models without a pipeline use PyTorch's DDP
(DDP=torch), which reduces buckets during the last micro-batch's backward
(--overlap-grad-reduce=true), the rest Megatron-LM's local DDP, whose
train_step reduces gradients after forward_backward_func
(--overlap-grad-reduce=false); 8 GPUs per node; the A100 device file's
efficiency factors, one set for every row.

  /usr/bin/python3 bench/megatron_validate.py [--ridge build/bin/ridge] [--rows 1-10]
"""
import argparse, json, os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V, S = 51200, 2048
# params(B), heads, hidden, layers, t, p, n, B, measured TFLOP/s per GPU (the
# paper's Table 1), then the run's micro-batch size and interleaving factor v,
# which the table does not print: Megatron-LM's examples/sc21/run_table_1.sh
# (the script that reproduces Table 1) sets MBS per model and
# --num-layers-per-virtual-pipeline-stage k for some, v = layers / (p k).
# The last field is the script's DDP: "torch" (PyTorch's
# DistributedDataParallel) for the four models without a pipeline, "local"
# (Megatron-LM's own) for the rest.
ROWS = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 16, 1, "torch"),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 16, 1, "torch"),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 16, 1, "torch"),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 8, 1, "torch"),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 4, 1, "local"),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 2, 3, "local"),    # k = 5
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 2, 2, "local"),   # k = 5
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 1, 2, "local"),  # k = 3
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 1, 3, "local"),  # k = 1
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 1, 1, "local"),
]


def gpt_model(path, l, h, a):
    """The GPT of l layers, hidden h, a heads (bench/gen_gpt.py, weights as
    absent external data) at path, written unless it is there."""
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gen_gpt.py"),
                        "--layers", str(l), "--hidden", str(h), "--heads", str(a),
                        "--seq", str(S), "--vocab", str(V), "--batch", "batch",
                        "--mask", "trilu", "--out", path],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def plan_cmd(ridge, model, n, B):
    """`ridge plan` as both tables run it: A100-SXM4-80GB, fp16, n GPUs in
    nodes of 8, global batch B, JSON."""
    return [ridge, "plan", model, "--device", "A100-SXM4-80GB", "--dtype", "fp16",
            "--devices", str(n), "--devices-per-node", "8", "--global-batch", str(B),
            "--format", "json"]


def formula_params(l, h):
    return 12 * l * h * h * (1 + 13 / (12 * h) + (V + S) / (12 * l * h))


def formula_flops(B, l, h):
    return 96 * B * S * l * h * h * (1 + S / (6 * h) + V / (16 * l * h))


# Table 2: scheme, params(B), GPUs, global batch, micro-batch, measured TFLOP/s
# per GPU (../shared/validation/megatron-sc21-table2.md).
SHAPES = {174.6: (96, 12288, 96), 529.6: (128, 20480, 105)}  # heads, hidden, layers
PTDP = {174.6: (8, 12), 529.6: (8, 35)}                       # t, p
TABLE2 = [
    ("ZeRO-3", 174.6, 384, 1536, 4, 144),
    ("ZeRO-3", 174.6, 768, 1536, 2, 88),
    ("ZeRO-3", 174.6, 1536, 1536, 1, 44),
    ("ZeRO-3", 529.6, 640, 2560, 4, 138),
    ("ZeRO-3", 529.6, 1120, 2240, 2, 98),
    ("ZeRO-3", 529.6, 2240, 2240, 1, 48),
    ("PTD-P", 174.6, 384, 1536, 1, 153),
    ("PTD-P", 174.6, 768, 1536, 1, 149),
    ("PTD-P", 174.6, 1536, 1536, 1, 141),
    ("PTD-P", 529.6, 560, 2240, 1, 171),
    ("PTD-P", 529.6, 1120, 2240, 1, 167),
    ("PTD-P", 529.6, 2240, 2240, 1, 159),
]


def table2(args):
    """Table 2: each row's scheme evaluated as a fixed configuration. ZeRO-3:
    data parallelism only (t = p = 1, d = GPUs), ZeRO stage 3, the row's
    micro-batch, the all-gathers and reduce-scatters overlapped with the
    backward as DeepSpeed prefetches them (--overlap-grad-reduce). PTD-P: the
    paper's t and p, d = GPUs / (t p), micro-batch 1, Megatron-LM's default
    non-interleaved 1F1B schedule (the paper's section 5.3.2 calls it the
    default; its section 5.1 names the interleaved schedule for Table 1 and
    section 5.2 names none for Table 2), gradients reduced after the
    backward; the interleaved schedule ridge would choose is printed beside
    it. Both: full recomputation (the paper's FLOP formula counts it), fp16,
    no sequence parallelism."""
    print("| scheme | params (B) | GPUs | B | t | p | d | mb | predicted TFLOP/s | measured "
          "| error | PTD-P interleaved (ridge's v): TFLOP/s, error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    errors, preds, fits = [], {}, True
    for scheme, pb, n, B, mb, meas in TABLE2:
        a, h, l = SHAPES[pb]
        model = gpt_model(os.path.join(args.out, f"gpt-table2-{pb}.onnx"), l, h, a)
        t, p = PTDP[pb] if scheme == "PTD-P" else (1, 1)
        d = n // (t * p)
        cmd = plan_cmd(args.ridge, model, n, B) + [
            "--tp", str(t), "--pp", str(p), "--dp", str(d), "--micro-batch", str(mb),
            "--recompute", "full", "--sequence-parallel=false"]
        if scheme == "ZeRO-3":
            cmd += ["--zero", "3", "--overlap-grad-reduce=true"]
        else:
            cmd += ["--zero", "0", "--overlap-grad-reduce=false"]
        alt = ""
        if scheme == "PTD-P":
            r = subprocess.run(cmd + args.extra.split(), capture_output=True, text=True)
            if r.returncode == 0:
                inter = json.loads(r.stdout)["fixed"]
                ip = formula_flops(B, l, h) / inter["step_seconds"] / n / 1e12
                alt = f"{ip:.1f} (v={inter['interleave']}), {(ip - meas) / meas * 100:+.1f}%"
            else:
                alt = "ridge failed: " + r.stderr.strip()[:100]
        cmd += ["--interleave", "1"]
        r = subprocess.run(cmd + args.extra.split(), capture_output=True, text=True)
        if r.returncode:
            print(f"| {scheme} | {pb} | {n} | ridge failed: {r.stderr.strip()[:200]} |")
            errors.append(float("inf"))
            continue
        e = json.loads(r.stdout)["fixed"]
        pred = formula_flops(B, l, h) / e["step_seconds"] / n / 1e12
        err = (pred - meas) / meas
        errors.append(err)
        preds[(scheme, pb, n)] = pred
        fits &= e["fits"]
        print(f"| {scheme} | {pb} | {n} | {B} | {t} | {p} | {d} | {mb} | {pred:.1f} | {meas} "
              f"| {err * 100:+.1f}%{'' if e['fits'] else ' (does not fit: ' + e['why'] + ')'} "
              f"| {alt or '-'} |")
    mean = sum(abs(x) for x in errors) / len(errors)
    worst = max(abs(x) for x in errors)
    print(f"\nmean |error|: {mean * 100:.1f}%, worst |error|: {worst * 100:.1f}% "
          f"(target: 3% mean, 6% worst)")
    # What the table shows, which the prediction must show too: ZeRO-3's
    # throughput falls as GPUs are added at a fixed batch (its gathers of
    # every parameter do not shrink), PTD-P's barely; PTD-P is faster at
    # every GPU count both ran at.
    ok = fits
    for pb in SHAPES:
        for scheme in ("ZeRO-3", "PTD-P"):
            rows = sorted((n, preds[k]) for k in preds for n in [k[2]] if k[:2] == (scheme, pb))
            falls = all(a[1] > b[1] for a, b in zip(rows, rows[1:]))
            drop = rows[-1][1] / rows[0][1] if rows else 0
            meas = sorted((n, m) for sc, p_, n, _, _, m in TABLE2 if (sc, p_) == (scheme, pb))
            print(f"{scheme} {pb}B: " + " > ".join(f"{x:.1f}" for _, x in rows) +
                  f" TFLOP/s on {', '.join(str(n) for n, _ in rows)} GPUs: falls {falls}, "
                  f"last/first {drop:.2f} (measured {meas[-1][1] / meas[0][1]:.2f})")
            ok &= falls
        both = [n for (sc, p_, n) in preds if sc == "PTD-P" and p_ == pb
                and ("ZeRO-3", pb, n) in preds]
        faster = all(preds[("PTD-P", pb, n)] > preds[("ZeRO-3", pb, n)] for n in both)
        print(f"{pb}B: PTD-P faster than ZeRO-3 on {both} GPUs: {faster}")
        ok &= faster
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ridge", default=os.path.join(ROOT, "build", "bin", "ridge"))
    ap.add_argument("--rows", default="1-10")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "models"))
    ap.add_argument("--extra", default="", help="extra ridge plan flags")
    ap.add_argument("--table", type=int, choices=[1, 2], default=1,
                    help="Table 1 (PTD-P weak scaling) or Table 2 (ZeRO-3 vs PTD-P)")
    args = ap.parse_args()
    if args.table == 2:
        os.makedirs(args.out, exist_ok=True)
        sys.exit(table2(args))
    lo, hi = (int(x) for x in args.rows.split("-"))
    os.makedirs(args.out, exist_ok=True)
    print("| params (B) | t | p | d | B | ridge params = formula | ridge FLOPs / formula "
          "| mb, v (run_table_1.sh) | predicted TFLOP/s | measured | error | "
          "ridge's own plan | its TFLOP/s | fits |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    worst = 0.0
    errs = []
    ok = True
    for i, (pb, a, h, l, t, p, n, B, meas, mb, v, ddp) in enumerate(ROWS[lo - 1:hi], lo):
        d = n // (t * p)
        model = gpt_model(os.path.join(args.out, f"gpt-megatron-{i}.onnx"), l, h, a)
        # Megatron-LM's local DDP all-reduces gradients after the whole
        # backward (train_step, after forward_backward_func); PyTorch's DDP
        # reduces each bucket as its gradients are ready, in the last
        # micro-batch's backward (Megatron-LM's forward_backward_no_pipelining
        # runs the others under model.no_sync()). So does ridge here, for the
        # paper's configuration and for its own plan alike.
        overlap = "true" if ddp == "torch" else "false"
        base = plan_cmd(args.ridge, model, n, B) + [f"--overlap-grad-reduce={overlap}"] + \
            args.extra.split()
        # The paper's runs (2021) had full recomputation (run_table_1.sh:
        # --recompute-method uniform, one layer per checkpoint) and neither
        # sequence parallelism nor ZeRO.
        fixed = subprocess.run(base + ["--tp", str(t), "--pp", str(p), "--dp", str(d),
                                       "--micro-batch", str(mb), "--interleave", str(v),
                                       "--recompute", "full", "--sequence-parallel=false",
                                       "--zero", "0"],
                               capture_output=True, text=True)
        if fixed.returncode:
            print(f"| {pb} | ridge failed: {fixed.stderr.strip()[:200]} |")
            ok = False
            continue
        r = json.loads(fixed.stdout)
        e = r["fixed"]
        F = formula_flops(B, l, h)
        pred = F / e["step_seconds"] / n / 1e12
        err = (pred - meas) / meas
        worst = max(worst, abs(err))
        errs.append(abs(err))
        own = json.loads(subprocess.run(base, capture_output=True, text=True, check=True).stdout)
        o = own["top"][0] if own["top"] else None
        own_tflops = F / o["step_seconds"] / n / 1e12 if o else 0
        own_cfg = (f"t={o['tp']} p={o['pp']} d={o['dp']} mb={o['micro_batch_size']} "
                   f"v={o['interleave']} {o['recompute']} z={o['zero']}"
                   f"{' sp' if o['sequence_parallel'] else ''}") if o else "none fits"
        rp = r["params"]
        fp = formula_params(l, h)
        print(f"| {pb} | {t} | {p} | {d} | {B} | {rp:,.0f} = {fp:,.0f} + {rp - fp:,.0f} (2h) "
              f"| {e['matrix_flops'] / F:.4f} | mb={e['micro_batch_size']} v={e['interleave']} "
              f"| {pred:.1f} | {meas} | {err * 100:+.1f}% | {own_cfg} | {own_tflops:.1f} "
              f"| {'yes' if e['fits'] else 'NO'} |")
        if abs(err) > 0.10 or not e["fits"] or (o and own_tflops < pred * 0.999):
            ok = False
    mean = sum(errs) / len(errs) if errs else 0.0
    print(f"\nmean |error|: {mean * 100:.1f}%, worst |error|: {worst * 100:.1f}%  "
          f"({'all rows within 10%' if worst <= 0.10 else 'FAIL'}; the issue's target is 3% "
          f"mean, 6% worst)")
    sys.exit(0 if ok else 1)


main()
