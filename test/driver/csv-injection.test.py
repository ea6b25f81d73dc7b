# Writes a chain of Relus named as a CSV-injection attempt would name them.
import sys
import onnx
from onnx import TensorProto, helper

names = ["=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "+1", '-2,"quoted"', "plain"]
nodes, prev = [], "x"
for i, n in enumerate(names):
    out = "v%d" % i
    nodes.append(helper.make_node("Relu", [prev], [out], name=n))
    prev = out
g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                      [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
