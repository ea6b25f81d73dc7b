#!/usr/bin/python3
"""Write a GPT-style decoder-only transformer as an ONNX graph (opset 17).

The architecture follows Megatron-LM's GPT (Narayanan et al., SC'21): token +
position embeddings, l pre-LayerNorm blocks (attention with a causal mask, a
4h MLP with Gelu), a final LayerNorm and logits through the tied (transposed)
token embedding.

Every float weight is an initializer with data_location = EXTERNAL that points
into "weights.bin", a file that is never written: a 1T-parameter model costs
a few hundred KiB on disk.  Small int64 constants (Reshape shapes, Split
sizes) are inline initializers; float scalars (1/sqrt(d), 0.5, 1, sqrt(2),
the mask fill value) are Constant nodes, so "sum of the float initializers'
elements" is exactly the parameter count.

Needs Debian's python3-onnx (run with /usr/bin/python3).

  bench/gen_gpt.py --layers 24 --hidden 2304 --heads 24 --seq 2048 \
      --vocab 51200 --batch batch --out build/models/gpt-1.7b.onnx
"""

import argparse
import math
import os
import struct
import sys
import tempfile
import time
from fractions import Fraction

import onnx
from onnx import TensorProto, helper

DTYPES = {
    "float": (TensorProto.FLOAT, 4),
    "float16": (TensorProto.FLOAT16, 2),
    "bfloat16": (TensorProto.BFLOAT16, 2),
}

# Lowest finite value of each dtype, as little-endian raw bytes; the causal
# mask fills masked scores with it (finfo.min, as Megatron and HF do).
LOWEST_RAW = {
    "float": struct.pack("<I", 0xFF7FFFFF),
    "float16": struct.pack("<H", 0xFBFF),
    "bfloat16": struct.pack("<H", 0xFF7F),
}


def scalar_raw(value, dtype):
    """Little-endian raw bytes of a float scalar in dtype."""
    f32 = struct.pack("<f", value)
    if dtype == "float":
        return f32
    if dtype == "float16":
        return struct.pack("<e", value)
    # bfloat16: round-to-nearest-even on the top 16 bits of the float32.
    bits = struct.unpack("<I", f32)[0]
    bits += 0x7FFF + ((bits >> 16) & 1)
    return struct.pack("<H", (bits >> 16) & 0xFFFF)


def megatron_params(l, h, V, s):
    """P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)), evaluated exactly."""
    p = Fraction(12 * l * h * h) * (1 + Fraction(13, 12 * h) + Fraction(V + s, 12 * l * h))
    assert p.denominator == 1
    return int(p)


class Builder:
    def __init__(self, dtype, location="weights.bin"):
        self.dtype = dtype
        self.elem, self.elem_size = DTYPES[dtype]
        self.location = location
        self.offset = 0
        self.nodes = []
        self.inits = []
        self.params = 0
        self._uid = 0
        self._scalars = {}

    def uid(self, prefix):
        self._uid += 1
        return "%s_%d" % (prefix, self._uid)

    def weight(self, name, dims):
        """A float initializer whose data lives (nominally) in weights.bin."""
        t = TensorProto()
        t.name = name
        t.data_type = self.elem
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        n = 1
        for d in dims:
            n *= d
        length = n * self.elem_size
        for k, v in (("location", self.location), ("offset", str(self.offset)),
                     ("length", str(length))):
            e = t.external_data.add()
            e.key = k
            e.value = v
        # Keep offsets 64-byte aligned, as onnx's external-data writer would
        # for mmap-friendly layouts.
        self.offset += (length + 63) // 64 * 64
        self.params += n
        self.inits.append(t)
        return name

    def ints(self, name, values):
        self.inits.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
        return name

    def scalar(self, value):
        """A 0-d float constant (Constant node), shared by value."""
        key = value if isinstance(value, str) else float(value)
        if key in self._scalars:
            return self._scalars[key]
        name = "const_%s" % (len(self._scalars))
        raw = LOWEST_RAW[self.dtype] if value == "lowest" else scalar_raw(value, self.dtype)
        t = helper.make_tensor(name + "_value", self.elem, [], raw, raw=True)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=t))
        self._scalars[key] = name
        return name

    def op(self, op_type, inputs, name=None, outputs=1, **attrs):
        name = name or self.uid(op_type)
        outs = [name] if outputs == 1 else ["%s_%d" % (name, i) for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs


def build(args):
    l, h, a, s, V = args.layers, args.hidden, args.heads, args.seq, args.vocab
    if h % a:
        sys.exit("hidden (%d) must be divisible by heads (%d)" % (h, a))
    d = h // a
    b = Builder(args.dtype)
    eps = 1e-5

    def layernorm(x, prefix):
        g = b.weight(prefix + ".weight", [h])
        beta = b.weight(prefix + ".bias", [h])
        return b.op("LayerNormalization", [x, g, beta], name=prefix, axis=-1, epsilon=eps)

    def linear(x, prefix, n_in, n_out):
        w = b.weight(prefix + ".weight", [n_in, n_out])
        bias = b.weight(prefix + ".bias", [n_out])
        y = b.op("MatMul", [x, w], name=prefix + ".matmul")
        return b.op("Add", [y, bias], name=prefix + ".add")

    # Shared int64 constants.
    shape_heads = b.ints("shape_heads", [0, 0, a, d])   # [B,S,H] -> [B,S,A,D]
    shape_hidden = b.ints("shape_hidden", [0, 0, h])    # [B,S,A,D] -> [B,S,H]
    split_qkv = b.ints("split_qkv", [h, h, h])

    # Causal mask: a bool [S,S] lower triangle, built from a ConstantOfShape
    # + Trilu (two tiny nodes) or stored inline (S*S bytes).
    if args.mask == "input":
        # An additive float mask the caller passes (HF's extended attention
        # mask, [B,1,S,S], 0 or finfo.min): a graph input every layer reads.
        causal = "attention_mask"
    elif args.mask == "trilu":
        ss = b.ints("shape_ss", [s, s])
        ones = b.op("ConstantOfShape", [ss], name="mask_ones",
                    value=helper.make_tensor("one", TensorProto.BOOL, [1], [True]))
        causal = b.op("Trilu", [ones], name="causal_mask", upper=0)
    else:
        causal = "causal_mask"
        raw = b"".join(b"\x01" * (i + 1) + b"\x00" * (s - i - 1) for i in range(s))
        b.inits.append(helper.make_tensor(causal, TensorProto.BOOL, [s, s], raw, raw=True))

    split_half = b.ints("split_half", [d // 2, d // 2])

    def rotate(x, prefix):  # x: [B,S,A,D]; cos, sin: [S,D] broadcast as [S,1,D]
        x1, x2 = b.op("Split", [x, split_half], name=prefix + ".split", outputs=2, axis=-1)
        neg = b.op("Neg", [x2], name=prefix + ".neg")
        rot = b.op("Concat", [neg, x1], name=prefix + ".concat", axis=-1)
        xc = b.op("Mul", [x, "rope_cos"], name=prefix + ".cos")
        rs = b.op("Mul", [rot, "rope_sin"], name=prefix + ".sin")
        return b.op("Add", [xc, rs], name=prefix + ".add")

    wte = b.weight("wte", [V, h])
    wpe = b.weight("wpe", [s, h])
    tok = b.op("Gather", [wte, "input_ids"], name="embed.tokens", axis=0)
    x = b.op("Add", [tok, wpe], name="embed.add_pos")            # [B,S,H] + [S,H]

    scale = b.scalar(1.0 / math.sqrt(d))
    lowest = b.scalar("lowest")
    half, one, sqrt2 = b.scalar(0.5), b.scalar(1.0), b.scalar(math.sqrt(2.0))

    for i in range(l):
        p = "layers.%d" % i
        y = layernorm(x, p + ".ln1")
        qkv = linear(y, p + ".attn.qkv", h, 3 * h)
        q, k, v = b.op("Split", [qkv, split_qkv], name=p + ".attn.split", outputs=3, axis=-1)
        q = b.op("Reshape", [q, shape_heads], name=p + ".attn.q_reshape")
        k = b.op("Reshape", [k, shape_heads], name=p + ".attn.k_reshape")
        v = b.op("Reshape", [v, shape_heads], name=p + ".attn.v_reshape")
        if args.rotary:
            # Rotary position embedding with cos/sin tables [S,D] the caller
            # passes (graph inputs every layer reads): x*cos + rotate_half(x)*sin.
            q, k = rotate(q, p + ".attn.q_rope"), rotate(k, p + ".attn.k_rope")
        q = b.op("Transpose", [q], name=p + ".attn.q_t", perm=[0, 2, 1, 3])   # [B,A,S,D]
        k = b.op("Transpose", [k], name=p + ".attn.k_t", perm=[0, 2, 3, 1])   # [B,A,D,S]
        v = b.op("Transpose", [v], name=p + ".attn.v_t", perm=[0, 2, 1, 3])   # [B,A,S,D]
        sc = b.op("MatMul", [q, k], name=p + ".attn.scores")                  # [B,A,S,S]
        sc = b.op("Mul", [sc, scale], name=p + ".attn.scale")
        if args.mask == "input":
            sc = b.op("Add", [sc, causal], name=p + ".attn.mask")
        else:
            sc = b.op("Where", [causal, sc, lowest], name=p + ".attn.mask")
        pr = b.op("Softmax", [sc], name=p + ".attn.softmax", axis=-1)
        ctx = b.op("MatMul", [pr, v], name=p + ".attn.context")               # [B,A,S,D]
        ctx = b.op("Transpose", [ctx], name=p + ".attn.ctx_t", perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, shape_hidden], name=p + ".attn.ctx_reshape")
        att = linear(ctx, p + ".attn.proj", h, h)
        x = b.op("Add", [x, att], name=p + ".attn.residual")

        y = layernorm(x, p + ".ln2")
        y = linear(y, p + ".mlp.fc1", h, 4 * h)
        # Gelu(y) = 0.5 * y * (1 + Erf(y / sqrt(2)))
        e = b.op("Div", [y, sqrt2], name=p + ".mlp.gelu.div")
        e = b.op("Erf", [e], name=p + ".mlp.gelu.erf")
        e = b.op("Add", [e, one], name=p + ".mlp.gelu.add")
        e = b.op("Mul", [y, e], name=p + ".mlp.gelu.mul")
        y = b.op("Mul", [e, half], name=p + ".mlp.gelu.half")
        y = linear(y, p + ".mlp.fc2", 4 * h, h)
        x = b.op("Add", [x, y], name=p + ".mlp.residual")

    if not args.no_final_ln:
        x = layernorm(x, "ln_f")
    wte_t = b.op("Transpose", [wte], name="lm_head.wte_t", perm=[1, 0])      # [H,V], tied
    logits_node = b.op("MatMul", [x, wte_t], name="lm_head.matmul")
    b.nodes.append(helper.make_node("Identity", [logits_node], ["logits"], name="logits"))

    batch = args.batch if args.batch == "batch" else int(args.batch)
    inp = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, s])
    inputs = [inp]
    if args.mask == "input":
        inputs.append(helper.make_tensor_value_info("attention_mask", b.elem, [batch, 1, s, s]))
    if args.rotary:
        for name in ("rope_cos", "rope_sin"):
            inputs.append(helper.make_tensor_value_info(name, b.elem, [s, 1, d]))
    out = helper.make_tensor_value_info("logits", b.elem, [batch, s, V])
    graph = helper.make_graph(b.nodes, "gpt_l%d_h%d_a%d_s%d_v%d" % (l, h, a, s, V),
                              inputs, [out], initializer=b.inits)
    model = helper.make_model(graph, producer_name="ridge-bench-gen_gpt",
                              opset_imports=[helper.make_opsetid("", args.opset)])
    # Pin the IR version so older runtimes/checkers accept it (opset 17 -> IR 8).
    model.ir_version = 8
    return model, b


def count_params(model):
    """Sum of float initializer elements (the parameter count)."""
    floats = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE)
    total = 0
    for t in model.graph.initializer:
        if t.data_type in floats:
            n = 1
            for d in t.dims:
                n *= d
            total += n
    return total


def check_params(model, args):
    l, h, s, V = args.layers, args.hidden, args.seq, args.vocab
    got = count_params(model)
    formula = megatron_params(l, h, V, s)
    # Term by term: per layer QKV 3h^2+3h, proj h^2+h, MLP 8h^2+5h, 2 LNs 4h;
    # embeddings (V+s)h; final LayerNorm 2h (not in the paper's formula).
    per_layer = (3 * h * h + 3 * h) + (h * h + h) + (8 * h * h + 5 * h) + 4 * h
    assert per_layer == 12 * h * h + 13 * h
    final_ln = 0 if args.no_final_ln else 2 * h
    expected = l * per_layer + (V + s) * h + final_ln
    print("params: graph %d, Megatron formula %d, final LayerNorm %d (formula + final LN = %d)"
          % (got, formula, final_ln, formula + final_ln))
    assert got == expected, "graph params %d != term-by-term %d" % (got, expected)
    assert got == formula + final_ln, "graph params %d != formula %d + final LN %d" % (
        got, formula, final_ln)
    return got, formula


def run_checker(model, weights_bytes, location="weights.bin"):
    """onnx.checker refuses an EXTERNAL tensor whose file is absent, so check
    a copy in a scratch directory next to a sparse (no-disk) weights file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save(model, path)
        with open(os.path.join(tmp, location), "wb") as f:
            f.truncate(weights_bytes)
        onnx.checker.check_model(path, full_check=False)


def verify(model, weights_bytes):
    """onnx.checker + strict shape inference; report values left unresolved."""
    run_checker(model, weights_bytes)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                 data_prop=True)
    known = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        dims = None
        if vi.type.tensor_type.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else
                    (d.dim_param if d.HasField("dim_param") else None)
                    for d in vi.type.tensor_type.shape.dim]
        known[vi.name] = dims
    bad = []
    for n in inferred.graph.node:
        for o in n.output:
            dims = known.get(o)
            if dims is None or any(x is None for x in dims):
                bad.append((n.op_type, o, dims))
    for op_type, o, dims in bad:
        print("  unresolved: %s %s -> %s" % (op_type, o, dims))
    print("checker OK; strict shape inference: %d node outputs, %d unresolved"
          % (sum(len(n.output) for n in inferred.graph.node), len(bad)))
    return inferred, bad


def selftest(ap):
    configs = [
        # tiny: every shape checked by onnx.checker + strict shape inference
        ["--layers", "2", "--hidden", "64", "--heads", "4", "--seq", "16",
         "--vocab", "100", "--batch", "batch", "--check"],
        # Megatron SC'21 Table 1, first row (1.7B); P(formula) = 1,652,226,048
        ["--layers", "24", "--hidden", "2304", "--heads", "24", "--seq", "2048",
         "--vocab", "51200", "--batch", "batch", "--mask", "trilu"],
        ["--layers", "24", "--hidden", "2304", "--heads", "24", "--seq", "2048",
         "--vocab", "51200", "--batch", "batch", "--mask", "trilu", "--no-final-ln"],
    ]
    for argv in configs:
        args = ap.parse_args(argv)
        print("selftest:", " ".join(argv))
        model, b = build(args)
        got, formula = check_params(model, args)
        if args.check:
            _, bad = verify(model, b.offset)
            assert not bad, "unresolved shapes"
    assert megatron_params(24, 2304, 51200, 2048) == 1652226048
    print("selftest OK")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--batch", default="1",
                    help='an integer, or the symbolic dim "batch"')
    ap.add_argument("--out")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="float")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--rotary", action="store_true",
                    help="rotary position embedding on q and k, its cos/sin tables [S,1,D] "
                         "graph inputs (as HF exports pass them)")
    ap.add_argument("--mask", choices=["bool", "trilu", "input"], default="bool",
                    help="causal mask: inline bool [S,S] initializer (default), "
                         "ConstantOfShape+Trilu nodes (no S*S bytes in the file), or an "
                         "additive float graph input attention_mask [B,1,S,S]")
    ap.add_argument("--no-final-ln", action="store_true",
                    help="omit the final LayerNorm (then params == the formula exactly)")
    ap.add_argument("--check", action="store_true",
                    help="run onnx.checker and strict shape inference (small configs)")
    ap.add_argument("--selftest", action="store_true",
                    help="build (in memory) a tiny config and Megatron's 1.7B config, "
                         "assert their parameter counts, check the tiny one; write nothing")
    args = ap.parse_args()
    if args.selftest:
        return selftest(ap)
    for a in ("layers", "hidden", "heads", "seq", "vocab", "out"):
        if getattr(args, a) is None:
            ap.error("--%s is required" % a)
    if args.batch != "batch" and not args.batch.isdigit():
        sys.exit('--batch must be an integer or "batch"')
    if args.opset < 17:
        sys.exit("--opset must be >= 17 (LayerNormalization)")

    t0 = time.time()
    model, b = build(args)
    check_params(model, args)
    if args.check:
        verify(model, b.offset)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    onnx.save(model, args.out)   # weights are already EXTERNAL; nothing else is written
    print("wrote %s: %d nodes, %d initializers, %d bytes, %.2fs"
          % (args.out, len(model.graph.node), len(model.graph.initializer),
             os.path.getsize(args.out), time.time() - t0))


if __name__ == "__main__":
    main()
