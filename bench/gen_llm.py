#!/usr/bin/python3
"""Write a Llama-style decoder with a KV cache as an ONNX graph, laid out as
Hugging Face optimum exports it (opset 17).

Inputs: input_ids and position_ids [batch_size, sequence_length], attention_mask
[batch_size, "past_sequence_length + sequence_length"], and per layer
past_key_values.{i}.key / .value [batch_size, kv_heads, past_sequence_length,
head_dim]; outputs logits [batch_size, sequence_length, vocab] and
present.{i}.key / .value [batch_size, kv_heads,
"past_sequence_length + sequence_length", head_dim].

Each layer: RMSNorm as torch exports it (Pow, ReduceMean, Add, Sqrt, Div, Mul
in fp32), q/k/v projections, rotary embeddings computed from position_ids
(cos/sin of position x inv_freq, rotate_half), the cache Concat along the
sequence axis, grouped-query attention when --kv-heads < --heads (the cache
repeated by Unsqueeze + Expand + Reshape, as transformers' repeat_kv), the
padding mask from attention_mask, softmax, the output projection, then a
SwiGLU MLP (silu(x W_gate) * (x W_up)) W_down. Final RMSNorm and the LM head.

Weights are initializers with data_location = EXTERNAL pointing into a file
that is never written (a 7B graph is a few hundred KiB). --weights fp16 keeps
every projection a MatMul on an fp16 [in, out] weight; --weights int4 makes
the seven projections of each layer com.microsoft MatMulNBits (4-bit, block
32, fp16 scales, no zero points: ONNX Runtime's default of 8), as ONNX
Runtime GenAI's int4 builder writes them.

Needs Debian's python3-onnx (run with /usr/bin/python3).

  bench/gen_llm.py --layers 32 --hidden 4096 --heads 32 --kv-heads 32 \
      --ffn 11008 --vocab 32000 --out build/models/llama-7b.onnx
"""

import argparse
import math
import os
import struct
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

FP16 = TensorProto.FLOAT16
BLOCK = 32


class Builder:
    def __init__(self, location="weights.bin"):
        self.location = location
        self.offset = 0
        self.nodes = []
        self.inits = []
        self._uid = 0
        self._scalars = {}

    def uid(self, prefix):
        self._uid += 1
        return "%s_%d" % (prefix, self._uid)

    def external(self, name, elem, elem_bits, dims):
        t = TensorProto()
        t.name = name
        t.data_type = elem
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        n = 1
        for d in dims:
            n *= d
        length = (n * elem_bits + 7) // 8
        for k, v in (("location", self.location), ("offset", str(self.offset)),
                     ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.offset += (length + 63) // 64 * 64
        self.inits.append(t)
        return name

    def ints(self, name, values):
        self.inits.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
        return name

    def scalar(self, value, elem=FP16):
        key = (value, elem)
        if key in self._scalars:
            return self._scalars[key]
        name = "const_%d" % len(self._scalars)
        raw = struct.pack("<e", value) if elem == FP16 else struct.pack("<f", value)
        t = helper.make_tensor(name + "_value", elem, [], raw, raw=True)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=t))
        self._scalars[key] = name
        return name

    def op(self, op_type, inputs, name=None, outputs=None, domain=None, **attrs):
        name = name or self.uid(op_type)
        outs = outputs or [name]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, domain=domain,
                                           **attrs))
        return outs[0] if len(outs) == 1 else outs


def build(args):
    L, h, a, kv, f, V = args.layers, args.hidden, args.heads, args.kv_heads, args.ffn, args.vocab
    if h % a or a % kv:
        sys.exit("--hidden must divide by --heads, and --heads by --kv-heads")
    d = h // a
    if args.weights == "int4" and (h % BLOCK or f % BLOCK):
        sys.exit("--weights int4: --hidden and --ffn must be multiples of %d" % BLOCK)
    b = Builder()
    batch, seq, past = "batch_size", "sequence_length", "past_sequence_length"
    total = "past_sequence_length + sequence_length"

    def linear(x, prefix, n_in, n_out):
        if args.weights == "fp16":
            w = b.external(prefix + ".weight", FP16, 16, [n_in, n_out])
            return b.op("MatMul", [x, w], name=prefix)
        blocks = n_in // BLOCK
        w = b.external(prefix + ".qweight", TensorProto.UINT8, 8, [n_out, blocks, BLOCK // 2])
        s = b.external(prefix + ".scales", FP16, 16, [n_out * blocks])
        return b.op("MatMulNBits", [x, w, s], name=prefix, domain="com.microsoft",
                    K=n_in, N=n_out, bits=4, block_size=BLOCK)

    def rmsnorm(x, prefix):
        g = b.external(prefix + ".weight", FP16, 16, [h])
        x32 = b.op("Cast", [x], name=prefix + ".cast_in", to=TensorProto.FLOAT)
        sq = b.op("Pow", [x32, b.scalar(2.0, TensorProto.FLOAT)], name=prefix + ".pow")
        ms = b.op("ReduceMean", [sq], name=prefix + ".mean", axes=[-1], keepdims=1)
        ms = b.op("Add", [ms, b.scalar(1e-6, TensorProto.FLOAT)], name=prefix + ".add_eps")
        rs = b.op("Sqrt", [ms], name=prefix + ".sqrt")
        rs = b.op("Div", [b.scalar(1.0, TensorProto.FLOAT), rs], name=prefix + ".rsqrt")
        y = b.op("Mul", [x32, rs], name=prefix + ".normalize")
        y = b.op("Cast", [y], name=prefix + ".cast_out", to=FP16)
        return b.op("Mul", [y, g], name=prefix + ".scale")

    heads_shape = b.ints("shape_q", [0, 0, a, d])
    kv_shape = b.ints("shape_kv", [0, 0, kv, d])
    hidden_shape = b.ints("shape_hidden", [0, 0, h])
    half_split = b.ints("split_half", [d // 2, d // 2])

    # Rotary tables from position_ids: emb = concat(p * inv_freq, p * inv_freq).
    inv_freq = b.external("rotary.inv_freq", TensorProto.FLOAT, 32, [d // 2])
    pos = b.op("Cast", ["position_ids"], name="rotary.pos", to=TensorProto.FLOAT)
    pos = b.op("Unsqueeze", [pos, b.ints("axis_2", [2])], name="rotary.pos_unsq")
    freqs = b.op("Mul", [pos, inv_freq], name="rotary.freqs")              # [B,S,d/2]
    emb = b.op("Concat", [freqs, freqs], name="rotary.emb", axis=-1)      # [B,S,d]
    axis1 = b.ints("axis_1", [1])
    cos = b.op("Cast", [b.op("Cos", [emb], name="rotary.cos_f")], name="rotary.cos_h", to=FP16)
    sin = b.op("Cast", [b.op("Sin", [emb], name="rotary.sin_f")], name="rotary.sin_h", to=FP16)
    cos = b.op("Unsqueeze", [cos, axis1], name="rotary.cos")               # [B,1,S,d]
    sin = b.op("Unsqueeze", [sin, axis1], name="rotary.sin")

    # Padding mask: (1 - attention_mask) * lowest, [B,1,1,T].
    m = b.op("Cast", ["attention_mask"], name="mask.cast", to=FP16)
    m = b.op("Sub", [b.scalar(1.0), m], name="mask.invert")
    m = b.op("Mul", [m, b.scalar(-65504.0)], name="mask.fill")
    mask = b.op("Unsqueeze", [m, b.ints("axes_12", [1, 2])], name="mask.unsq")

    def rotate(x, prefix):
        x1, x2 = b.op("Split", [x, half_split], name=prefix + ".split",
                      outputs=[prefix + ".x1", prefix + ".x2"], axis=-1)
        nx2 = b.op("Neg", [x2], name=prefix + ".neg")
        rot = b.op("Concat", [nx2, x1], name=prefix + ".rot", axis=-1)
        xc = b.op("Mul", [x, cos], name=prefix + ".mul_cos")
        xs = b.op("Mul", [rot, sin], name=prefix + ".mul_sin")
        return b.op("Add", [xc, xs], name=prefix + ".rope")

    embed = b.external("embed_tokens.weight", FP16, 16, [V, h])
    x = b.op("Gather", [embed, "input_ids"], name="embed_tokens", axis=0)
    scale = b.scalar(1.0 / math.sqrt(d))
    if kv < a:
        rep = b.ints("repeat_kv", [1, 1, a // kv, 1, 1])
        full = b.ints("shape_repeat", [0, a, -1, d])
    past_inputs, present_outputs = [], []
    for i in range(L):
        p = "layers.%d" % i
        y = rmsnorm(x, p + ".input_layernorm")
        q = linear(y, p + ".self_attn.q_proj", h, h)
        k = linear(y, p + ".self_attn.k_proj", h, kv * d)
        v = linear(y, p + ".self_attn.v_proj", h, kv * d)
        q = b.op("Reshape", [q, heads_shape], name=p + ".self_attn.q_reshape")
        k = b.op("Reshape", [k, kv_shape], name=p + ".self_attn.k_reshape")
        v = b.op("Reshape", [v, kv_shape], name=p + ".self_attn.v_reshape")
        q = b.op("Transpose", [q], name=p + ".self_attn.q_t", perm=[0, 2, 1, 3])   # [B,a,S,d]
        k = b.op("Transpose", [k], name=p + ".self_attn.k_t", perm=[0, 2, 1, 3])   # [B,kv,S,d]
        v = b.op("Transpose", [v], name=p + ".self_attn.v_t", perm=[0, 2, 1, 3])
        q = rotate(q, p + ".self_attn.q_rot")
        k = rotate(k, p + ".self_attn.k_rot")
        pk, pv = "past_key_values.%d.key" % i, "past_key_values.%d.value" % i
        past_inputs += [pk, pv]
        k = b.op("Concat", [pk, k], name=p + ".self_attn.k_cache", axis=2,
                 outputs=["present.%d.key" % i])
        v = b.op("Concat", [pv, v], name=p + ".self_attn.v_cache", axis=2,
                 outputs=["present.%d.value" % i])
        present_outputs += [k, v]
        if kv < a:  # repeat_kv: [B,kv,T,d] -> [B,kv,a/kv,T,d] -> [B,a,T,d]
            for name in ("k", "v"):
                src = k if name == "k" else v
                u = b.op("Unsqueeze", [src, "axis_2"], name="%s.self_attn.%s_unsq" % (p, name))
                e = b.op("Expand", [u, rep], name="%s.self_attn.%s_expand" % (p, name))
                r = b.op("Reshape", [e, full], name="%s.self_attn.%s_repeat" % (p, name))
                if name == "k":
                    k = r
                else:
                    v = r
        kt = b.op("Transpose", [k], name=p + ".self_attn.k_tt", perm=[0, 1, 3, 2])  # [B,a,d,T]
        sc = b.op("MatMul", [q, kt], name=p + ".self_attn.scores")                   # [B,a,S,T]
        sc = b.op("Mul", [sc, scale], name=p + ".self_attn.scale")
        sc = b.op("Add", [sc, mask], name=p + ".self_attn.mask")
        pr = b.op("Softmax", [sc], name=p + ".self_attn.softmax", axis=-1)
        ctx = b.op("MatMul", [pr, v], name=p + ".self_attn.context")                 # [B,a,S,d]
        ctx = b.op("Transpose", [ctx], name=p + ".self_attn.ctx_t", perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, hidden_shape], name=p + ".self_attn.ctx_reshape")
        o = linear(ctx, p + ".self_attn.o_proj", h, h)
        x = b.op("Add", [x, o], name=p + ".attn_residual")
        y = rmsnorm(x, p + ".post_attention_layernorm")
        g = linear(y, p + ".mlp.gate_proj", h, f)
        u = linear(y, p + ".mlp.up_proj", h, f)
        sg = b.op("Sigmoid", [g], name=p + ".mlp.sigmoid")
        g = b.op("Mul", [g, sg], name=p + ".mlp.silu")
        y = b.op("Mul", [g, u], name=p + ".mlp.gate_up")
        y = linear(y, p + ".mlp.down_proj", f, h)
        x = b.op("Add", [x, y], name=p + ".mlp_residual")
    x = rmsnorm(x, "norm")
    head = b.external("lm_head.weight", FP16, 16, [h, V])
    b.op("MatMul", [x, head], name="lm_head", outputs=["logits"])

    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [batch, total]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, [batch, seq])]
    inputs += [helper.make_tensor_value_info(n, FP16, [batch, kv, past, d]) for n in past_inputs]
    outputs = [helper.make_tensor_value_info("logits", FP16, [batch, seq, V])]
    outputs += [helper.make_tensor_value_info(n, FP16, [batch, kv, total, d])
                for n in present_outputs]
    graph = helper.make_graph(b.nodes, "llm_l%d_h%d_a%d_kv%d_f%d_v%d" % (L, h, a, kv, f, V),
                              inputs, outputs, initializer=b.inits)
    opsets = [helper.make_opsetid("", 17)]
    if args.weights == "int4":
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, producer_name="ridge-bench-gen_llm", opset_imports=opsets)
    model.ir_version = 8
    return model, b


def weight_bytes(args):
    """Stored bytes of the weights, by formula (what ridge must report)."""
    L, h, a, kv, f, V = args.layers, args.hidden, args.heads, args.kv_heads, args.ffn, args.vocab
    d = h // a
    proj = [(h, h), (h, kv * d), (h, kv * d), (h, h), (h, f), (h, f), (f, h)]
    if args.weights == "fp16":
        per_layer = sum(2 * i * o for i, o in proj)
    else:  # 4 bits per weight + one fp16 scale per block of 32
        per_layer = sum(i * o // 2 + 2 * o * (i // BLOCK) for i, o in proj)
    per_layer += 2 * 2 * h                       # two RMSNorm weights
    return L * per_layer + 2 * V * h * 2 + 2 * h + 4 * (d // 2)  # embed, head, norm, inv_freq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("layers", "hidden", "heads", "kv-heads", "ffn", "vocab"):
        ap.add_argument("--" + name, type=int, required=True)
    ap.add_argument("--weights", choices=["fp16", "int4"], default="fp16")
    ap.add_argument("--out", required=True)
    ap.add_argument("--check", action="store_true",
                    help="run onnx.checker and ONNX shape inference (fp16 weights)")
    args = ap.parse_args()
    model, b = build(args)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            with open(os.path.join(tmp, b.location), "wb") as fh:
                fh.truncate(b.offset)
            onnx.checker.check_model(path, full_check=args.weights == "fp16")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    onnx.save(model, args.out)
    print("wrote %s: %d nodes, %d initializers; weights %d bytes by formula"
          % (args.out, len(model.graph.node), len(model.graph.initializer), weight_bytes(args)))


if __name__ == "__main__":
    main()
