# Writes three versions of a small MLP with named nodes: base (64 -> 128 -> 10),
# a layer added (fc_mid 128 -> 128 and its Relu), and the hidden dim widened
# (64 -> 256 -> 10). Batch 32, f32, weights as zeros.
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(path, hidden, extra_layer):
    inits, nodes = [], []

    def gemm(name, x, k, n):
        inits.append(numpy_helper.from_array(np.zeros((k, n), np.float32), name + ".w"))
        inits.append(numpy_helper.from_array(np.zeros((n,), np.float32), name + ".b"))
        nodes.append(helper.make_node("Gemm", [x, name + ".w", name + ".b"], [name], name=name))
        return name

    def relu(name, x):
        nodes.append(helper.make_node("Relu", [x], [name], name=name))
        return name

    h = relu("relu1", gemm("fc1", "x", 64, hidden))
    if extra_layer:
        h = relu("relu_mid", gemm("fc_mid", h, hidden, hidden))
    y = gemm("fc2", h, hidden, 10)
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, [32, 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


out = sys.argv[1]
if len(sys.argv) > 3 and sys.argv[2] == "--totals":
    # Prints what diff.test checks of a `ridge diff --format json` document.
    import json
    doc = json.load(open(sys.argv[3]))
    for t in doc["totals"]:
        if t["total"] in ("params", "totals.fwd.flops"):
            print("%s old=%d new=%d delta=%d" % (t["total"], t["old"], t["new"], t["delta"]))
    n = doc["nodes"]
    print("changed=%s added=%s removed=%s" % tuple(
        ",".join(sorted(x["name"] for x in n[k])) for k in ("changed", "added", "removed")))
    sys.exit(0)
mlp(out + ".base.onnx", 128, False)
mlp(out + ".layer.onnx", 128, True)
mlp(out + ".wide.onnx", 256, False)
