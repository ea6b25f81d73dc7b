"""Checks OpCosts.def's required-operand columns against ONNX's schemas
(Debian's python3-onnx): for every row of an op the installed onnx knows,
bit i of RequiredInputs (RequiredOutputs) must be set exactly when the
schema requires input (output) i in every version of the op: a Single
formal parameter, or a Variadic one the op's minimum count reaches. Rows
the installed onnx does not know (com.microsoft ops, ONNX ops newer than
its release) must be named in HAND below, each with the values the table
gives and their source, so a new row is looked at on purpose."""
import re, sys
import onnx
import onnx.defs as d

FP = d.OpSchema.FormalParameterOption
# (domain, op): (required inputs, required outputs) as bit masks, read by
# hand (2026-12-07) from onnx's docs/Changelog.md (opsets 18-21) and
# onnx/defs/nn/defs.cc (DeformConv-22), and from onnxruntime's
# docs/ContribOperators.md; com.microsoft LayerNormalization and
# SimplifiedLayerNormalization, not in that document, from onnxruntime's
# schema (core/graph/contrib_ops: X, scale required, B optional).
HAND = {
    ("", "Mish"): (0x1, 0x1),
    ("", "Gelu"): (0x1, 0x1),
    ("", "BitwiseNot"): (0x1, 0x1),
    ("", "BitwiseAnd"): (0x3, 0x1),
    ("", "BitwiseOr"): (0x3, 0x1),
    ("", "BitwiseXor"): (0x3, 0x1),
    ("", "DeformConv"): (0x7, 0x1),        # X, W, offset; B, mask optional
    ("", "GroupNormalization"): (0x7, 0x1),
    ("", "CenterCropPad"): (0x3, 0x1),
    ("", "AffineGrid"): (0x3, 0x1),
    ("", "Col2Im"): (0x7, 0x1),
    ("", "RegexFullMatch"): (0x1, 0x1),
    ("", "StringConcat"): (0x3, 0x1),
    ("", "StringSplit"): (0x1, 0x3),       # Y, Z
    ("", "SimplifiedLayerNormalization"): (0x3, 0x1),
    ("com.microsoft", "Attention"): (0x3, 0x1),   # input, weights
    ("com.microsoft", "MultiHeadAttention"): (0x1, 0x1),  # query
    ("com.microsoft", "SkipLayerNormalization"): (0x7, 0x1),
    ("com.microsoft", "LayerNormalization"): (0x3, 0x1),
    ("com.microsoft", "SimplifiedLayerNormalization"): (0x3, 0x1),
    ("com.microsoft", "SkipSimplifiedLayerNormalization"): (0x7, 0x1),
    ("com.microsoft", "RotaryEmbedding"): (0xF, 0x1),
    ("com.microsoft", "FusedMatMul"): (0x3, 0x1),
    ("com.microsoft", "MatMulNBits"): (0x7, 0x1),  # A, B, scales
    ("com.microsoft", "GatherBlockQuantized"): (0x7, 0x1),
    ("com.microsoft", "Gelu"): (0x1, 0x1),
    ("com.microsoft", "QuickGelu"): (0x1, 0x1),
    ("com.microsoft", "BiasGelu"): (0x3, 0x1),
    ("com.microsoft", "FastGelu"): (0x1, 0x1),    # bias optional
    ("com.microsoft", "BiasAdd"): (0x7, 0x1),
}

def required(params, least):
    mask = 0
    for i, p in enumerate(params):
        if p.option == FP.Single or (p.option == FP.Variadic and least > i):
            mask |= 1 << i
    return mask

schemas = {}
for s in d.get_all_schemas_with_history():
    key = (s.domain, s.name)
    m = (required(s.inputs, s.min_input), required(s.outputs, s.min_output))
    old = schemas.get(key)
    schemas[key] = (old[0] & m[0], old[1] & m[1]) if old else m

text = open(sys.argv[1]).read()
rows = []
for fam, args in re.findall(r"^RIDGE_(UNARY|BINARY|OP)\(([^)]*)\)", text, re.M):
    f = [a.strip() for a in args.split(",")]
    dom, op = f[0].strip('"'), f[1].strip('"')
    if fam == "UNARY":
        io = (1, 1)
    elif fam == "BINARY":
        io = (int(f[9].rstrip("u"), 16), 1)
    else:
        io = (int(f[4].rstrip("u"), 16), int(f[5].rstrip("u"), 16))
    rows.append((dom, op, io))
def key(dom, op):
    return ("" if dom in ("", "ai.onnx") else dom, op)

bad = from_schema = by_hand = 0
for dom, op, io in rows:
    k = key(dom, op)
    if k in schemas:
        want, from_schema = schemas[k], from_schema + 1
    elif k in HAND:
        want, by_hand = HAND[k], by_hand + 1
    else:
        print("%s %s: not in onnx %s's schemas nor in HAND" % (dom or "ai.onnx", op,
                                                              onnx.__version__))
        bad += 1
        continue
    if want != io:
        print("%s %s: the table requires inputs 0x%x outputs 0x%x, the schema 0x%x 0x%x"
              % (dom or "ai.onnx", op, io[0], io[1], want[0], want[1]))
        bad += 1
print("%d rows: %d from onnx's schemas, %d by hand, %d wrong" % (len(rows), from_schema,
                                                                by_hand, bad))
sys.exit(1 if bad else 0)
