#!/usr/bin/python3
"""Writes the binary .onnx fixtures the lit tests read. Run from anywhere:
    /usr/bin/python3 test/Inputs/make_fixtures.py
The outputs are committed; rerun only to change them."""
import os
import onnx
from onnx import TensorProto, helper

from protowire import field, varint

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(model.SerializeToString())


def mlp(weight_payload=True, location=None):
    """x[2,64] -> MatMul(W[64,256]) -> Relu. W is embedded (64 KiB of raw_data)
    or external at `location`."""
    w = helper.make_tensor_value_info  # noqa: F841 (kept for symmetry)
    W = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[64, 256])
    if location is None:
        W.raw_data = bytes(64 * 256 * 4) if weight_payload else b""
    else:
        W.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", "0"), ("length", str(64 * 256 * 4))):
            e = W.external_data.add()
            e.key, e.value = k, v
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [2, 256])
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
         helper.make_node("Reshape", ["h", "shape"], ["r"], name="reshape"),
         helper.make_node("Relu", ["r"], ["y"], name="relu")],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [W, shape])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                             producer_name="ridge-fixtures")


save(mlp(), "mlp-embedded.onnx")
save(mlp(location="weights.bin"), "ext-missing.onnx")
save(mlp(location="../outside.bin"), "ext-dotdot.onnx")
save(mlp(location="/etc/hostname"), "ext-absolute.onnx")
save(mlp(location="link.bin"), "ext-symlink.onnx")

# Truncated: the embedded model cut in the middle of W's payload.
data = mlp().SerializeToString()
with open(os.path.join(HERE, "truncated.onnx"), "wb") as f:
    f.write(data[: len(data) // 2])

# Not ONNX at all: a PNG signature and some bytes.
with open(os.path.join(HERE, "not-onnx.onnx"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(32))

# Unknown element type 99 on an initializer.
m = mlp(weight_payload=False)
m.graph.initializer[0].data_type = 99
save(m, "unknown-dtype.onnx")

# Negative dim on a graph input.
m = mlp(weight_payload=False)
m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -3
save(m, "negative-dim.onnx")

# A 1 GB string attribute declared in a tiny file: field 4 (s) of an
# AttributeProto claims 2^30 bytes that are not there.
attr = b"\x0a\x01a" + varint(4 << 3 | 2) + varint(1 << 30) + b"xyz"
node = field(4, b"Relu") + field(5, attr)
graph = field(1, node) + field(2, b"g")
with open(os.path.join(HERE, "huge-string.onnx"), "wb") as f:
    f.write(b"\x08\x08" + field(7, graph))

# Nesting beyond the reader's limit: If inside If, 70 levels deep.
def nested_if(depth):
    out = helper.make_tensor_value_info("o", TensorProto.FLOAT, [1])
    c = helper.make_tensor("c", TensorProto.FLOAT, [1], [1.0])
    leaf = helper.make_graph([helper.make_node("Constant", [], ["o"], value=c)], "leaf", [], [out])
    inner = leaf
    for i in range(depth):
        # Only the then-branch nests: nesting both would double the size per level.
        node = helper.make_node("If", ["cond"], ["o"], then_branch=inner, else_branch=leaf)
        inner = helper.make_graph([node], f"level{i}", [], [out])
    return inner

g = nested_if(70)
g.input.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "deep-nesting.onnx")
print("fixtures written to", HERE)
