"""Writes a SequenceMap over the three pieces SplitToSequence cuts x [6, 4]
into (split [2, 2, 2] along axis 0): the body multiplies each piece [2, 4]
by w [4, 8]; ConcatFromSequence joins the results along axis 0."""
import sys
from onnx import TensorProto, helper as h

body = h.make_graph(
    [h.make_node("MatMul", ["p", "w"], ["q"])], "body",
    [h.make_tensor_value_info("p", TensorProto.FLOAT, None)],
    [h.make_tensor_value_info("q", TensorProto.FLOAT, None)])
graph = h.make_graph(
    [h.make_node("SplitToSequence", ["x", "split"], ["pieces"], axis=0),
     h.make_node("SequenceMap", ["pieces"], ["mapped"], body=body),
     h.make_node("ConcatFromSequence", ["mapped"], ["y"], axis=0)],
    "g",
    [h.make_tensor_value_info("x", TensorProto.FLOAT, [6, 4])],
    [h.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [h.make_tensor("w", TensorProto.FLOAT, [4, 8], [0.0] * 32),
     h.make_tensor("split", TensorProto.INT64, [3], [2, 2, 2])])
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
open(sys.argv[1], "wb").write(model.SerializeToString())
