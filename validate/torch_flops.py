#!/usr/bin/python3
"""Independent FLOP reference for ridge: export torchvision models to ONNX and count the
matrix-product FLOPs that PyTorch actually executes, forward and backward.

Runs with Debian's python3-torch (torch 1.13), which is importable only from /usr/bin/python3:
    /usr/bin/python3 validate/torch_flops.py [--batch 1] [--models resnet50,vgg16]

Nothing here uses ridge's formulas. FLOPs are counted by a TorchDispatchMode that sees every
aten op below autograd, i.e. exactly the kernels that run, forward and backward.

Convention (same as the usual "GMACs" tables, times two):
  * one multiply-accumulate = 2 FLOPs;
  * only matrix-product work is counted: mm / addmm / bmm / baddbmm (2*M*N*K per matrix,
    times the batch for bmm), convolutions (2 * N * Cout * Hout * Wout * (Cin/groups) * kH * kW);
  * bias adds, the "beta*C" of addmm/baddbmm, activations, norms, pooling, softmax: NOT counted.
  * aten.convolution_backward(grad_out, input, weight, ..., output_mask):
      grad_input  (if output_mask[0]) costs the forward conv's FLOPs,
      grad_weight (if output_mask[1]) costs the forward conv's FLOPs,
      grad_bias   (output_mask[2]) is a reduction, not counted.
    i.e. FLOPs = (mask[0] + mask[1]) * 2 * numel(grad_out) * (Cin/groups) * kH * kW.
  * mm/bmm in backward are counted as they run (autograd emits one per needed gradient).

The forward pass runs in eval() mode (BatchNorm uses running stats, Dropout is identity, as in
the exported graph) with parameters requiring grad and the input NOT requiring grad, so the
first layer computes no input gradient. Backward is loss = out.sum(); loss.backward().
"""
import argparse
import collections
import json
import math
import os
import sys
import time

import torch
import torchvision
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten


def _numel(shape):
    return math.prod(int(s) for s in shape)


def _mm_flops(a, b):
    # a: [M, K], b: [K, N]
    m, k = a.shape
    k2, n = b.shape
    assert k == k2, (a.shape, b.shape)
    return 2 * m * n * k


def _bmm_flops(a, b):
    # a: [B, M, K], b: [B, K, N]
    bs, m, k = a.shape
    bs2, k2, n = b.shape
    assert bs == bs2 and k == k2, (a.shape, b.shape)
    return 2 * bs * m * n * k


def _conv_flops(x_shape, w_shape, out_shape, transposed):
    """2 * (MACs). For a normal conv each output element takes (Cin/groups)*kH*kW MACs
    (= prod(weight.shape[1:])). For a transposed conv (weight [Cin, Cout/groups, k...]) each
    input element is scattered to Cout/groups * k... outputs (= prod(weight.shape[1:]) too)."""
    per = _numel(w_shape[1:])
    return 2 * (_numel(x_shape) if transposed else _numel(out_shape)) * per


def _count(func, args, kwargs, out):
    """FLOPs of one aten call, or None if the op is not a counted matrix-product op."""
    p = func.overloadpacket
    if p is aten.mm:
        return _mm_flops(args[0], args[1])
    if p is aten.addmm:  # addmm(bias, a, b): bias add not counted
        return _mm_flops(args[1], args[2])
    if p is aten.bmm:
        return _bmm_flops(args[0], args[1])
    if p is aten.baddbmm:  # baddbmm(c, a, b)
        return _bmm_flops(args[1], args[2])
    if p in (aten.convolution, aten._convolution):
        x, w = args[0], args[1]
        transposed = bool(args[6])
        return _conv_flops(x.shape, w.shape, out.shape, transposed)
    if p in (aten.mkldnn_convolution, aten.cudnn_convolution, aten.thnn_conv2d,
             aten._slow_conv2d_forward, aten.slow_conv_dilated2d, aten._nnpack_spatial_convolution):
        x, w = args[0], args[1]
        o = out[0] if isinstance(out, (tuple, list)) else out
        return _conv_flops(x.shape, w.shape, o.shape, False)
    if p is aten.convolution_backward:
        grad_out, x, w = args[0], args[1], args[2]
        transposed = bool(args[7])
        mask = args[10]
        fwd = _conv_flops(x.shape, w.shape, grad_out.shape, transposed)
        return (int(bool(mask[0])) + int(bool(mask[1]))) * fwd
    if p in (aten.matmul, aten.linear, aten.dot, aten.mv, aten.addmv, aten.einsum):
        # Composite ops should be decomposed before they reach the dispatch mode; if one shows
        # up here the count would be incomplete, so fail loudly rather than undercount.
        raise RuntimeError(f"unexpected composite op at dispatch level: {func}")
    return None


class FlopCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.phase = "fwd"
        self.flops = {"fwd": collections.Counter(), "bwd": collections.Counter()}
        self.calls = {"fwd": collections.Counter(), "bwd": collections.Counter()}
        self.seen = {"fwd": collections.Counter(), "bwd": collections.Counter()}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = str(func.overloadpacket)
        self.seen[self.phase][name] += 1
        f = _count(func, args, kwargs, out)
        if f is not None:
            self.flops[self.phase][name] += f
            self.calls[self.phase][name] += 1
        return out


class Transformer(torch.nn.Module):
    """One TransformerEncoderLayer, batch_first (the layer itself is the model)."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def build(name):
    tv = torchvision.models
    ctors = {
        "resnet18": tv.resnet18, "alexnet": tv.alexnet, "vgg11": tv.vgg11,
        "mobilenet_v3_small": tv.mobilenet_v3_small, "densenet121": tv.densenet121,
        "resnet50": tv.resnet50, "vgg16": tv.vgg16,
    }
    if name == "transformer_encoder":
        return Transformer()
    return ctors[name](weights=None)


ALL = ["resnet18", "alexnet", "vgg11", "mobilenet_v3_small", "densenet121", "resnet50",
       "vgg16", "transformer_encoder"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=1, help="batch size for the CNNs (default 1)")
    ap.add_argument("--image", type=int, default=224, help="CNN input H=W (default 224)")
    ap.add_argument("--tf-batch", type=int, default=8, help="transformer batch (default 8)")
    ap.add_argument("--tf-seq", type=int, default=128, help="transformer sequence length (128)")
    ap.add_argument("--models", default=",".join(ALL), help="comma-separated subset of: "
                    + ", ".join(ALL))
    ap.add_argument("--out-dir", default="build/models", help="where the .onnx files and "
                    "torch_flops.json go (default build/models)")
    ap.add_argument("--no-export", action="store_true", help="count only, skip ONNX export")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    os.makedirs(args.out_dir, exist_ok=True)
    json_path = os.path.join(args.out_dir, "torch_flops.json")
    results = {}
    if os.path.exists(json_path):  # keep entries of models not re-run this time
        with open(json_path) as f:
            results = json.load(f)

    t_all = time.time()
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        if name not in ALL:
            sys.exit(f"unknown model {name!r}; choose from {ALL}")
        t0 = time.time()
        torch.manual_seed(0)
        model = build(name)
        model.eval()
        if name == "transformer_encoder":
            shape = [args.tf_batch, args.tf_seq, 512]
        else:
            shape = [args.batch, 3, args.image, args.image]
        x = torch.randn(*shape)  # requires_grad=False: the first layer computes no dX

        onnx_path = os.path.join(args.out_dir, f"{name}.onnx")
        if not args.no_export:
            # Grad stays enabled (parameters require grad): in eval mode with grad disabled,
            # TransformerEncoderLayer takes its fused fast path (aten::_transformer_encoder_
            # layer_fwd), which has no ONNX symbolic. With grad enabled it uses the plain ops.
            with torch.enable_grad():
                torch.onnx.export(model, (x,), onnx_path, opset_version=args.opset,
                                  input_names=["input"], output_names=["output"],
                                  do_constant_folding=True,
                                  training=torch.onnx.TrainingMode.EVAL)
        t_export = time.time() - t0

        for p in model.parameters():
            p.requires_grad_(True)
        model.zero_grad(set_to_none=True)
        counter = FlopCounter()
        with torch.enable_grad(), counter:
            out = model(x)
            loss = out.sum()
            counter.phase = "bwd"
            loss.backward()
        fwd = sum(counter.flops["fwd"].values())
        bwd = sum(counter.flops["bwd"].values())
        results[name] = {
            "onnx": onnx_path,
            "input_shape": shape,
            "fwd_flops": fwd,
            "bwd_flops": bwd,
            "fwd_by_op": dict(counter.flops["fwd"]),
            "bwd_by_op": dict(counter.flops["bwd"]),
            "fwd_calls": dict(counter.calls["fwd"]),
            "bwd_calls": dict(counter.calls["bwd"]),
            "fwd_ops_seen": dict(sorted(counter.seen["fwd"].items())),
            "bwd_ops_seen": dict(sorted(counter.seen["bwd"].items())),
            "torch_version": torch.__version__,
            "torchvision_version": torchvision.__version__,
        }
        print(f"{name:20s} input {shape}  fwd {fwd / 1e9:9.3f} GFLOP  bwd {bwd / 1e9:9.3f} "
              f"GFLOP  bwd/fwd {bwd / fwd:5.3f}  (export {t_export:.1f}s, total "
              f"{time.time() - t0:.1f}s)", flush=True)
        del model, out, loss, counter

    order = {n: i for i, n in enumerate(ALL)}
    results = dict(sorted(results.items(), key=lambda kv: (order.get(kv[0], len(ALL)), kv[0])))
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {json_path} ({time.time() - t_all:.1f}s)")

    published = {"resnet50": 4.1, "vgg16": 15.5}  # GMACs at 1x3x224x224 (torchvision docs)
    for name, ref in published.items():
        r = results.get(name)
        if r and r["input_shape"] == [1, 3, 224, 224]:
            print(f"sanity: {name} forward {r['fwd_flops'] / 2e9:.3f} GMACs "
                  f"(= {r['fwd_flops'] / 1e9:.3f} GFLOP); published ~{ref} GMACs")


if __name__ == "__main__":
    main()
