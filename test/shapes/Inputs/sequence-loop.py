"""Writes a model whose Loop grows a sequence (ONNX's text syntax has no
sequence types): seq = [a]; three iterations each insert a; then
SequenceLength, SequenceAt(0) and ConcatFromSequence(axis 0) of the result."""
import sys
import onnx
from onnx import TensorProto, helper as h

elem = h.make_tensor_type_proto(TensorProto.FLOAT, [2, 3])
seq_t = h.make_sequence_type_proto(elem)
body = h.make_graph(
    [h.make_node("Identity", ["ci"], ["co"]),
     h.make_node("SequenceInsert", ["s", "a"], ["s2"])],
    "body",
    [h.make_tensor_value_info("i", TensorProto.INT64, []),
     h.make_tensor_value_info("ci", TensorProto.BOOL, []),
     h.make_value_info("s", seq_t)],
    [h.make_tensor_value_info("co", TensorProto.BOOL, []), h.make_value_info("s2", seq_t)])
graph = h.make_graph(
    [h.make_node("SequenceConstruct", ["a"], ["seq"]),
     h.make_node("Loop", ["three", "c", "seq"], ["out"], body=body),
     h.make_node("SequenceLength", ["out"], ["n"]),
     h.make_node("SequenceAt", ["out", "zero"], ["e"]),
     h.make_node("ConcatFromSequence", ["out"], ["cat"], axis=0)],
    "g",
    [h.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]),
     h.make_tensor_value_info("c", TensorProto.BOOL, [])],
    [h.make_tensor_value_info("n", TensorProto.INT64, []),
     h.make_tensor_value_info("e", TensorProto.FLOAT, None),
     h.make_tensor_value_info("cat", TensorProto.FLOAT, None)],
    [h.make_tensor("three", TensorProto.INT64, [], [3]),
     h.make_tensor("zero", TensorProto.INT64, [], [0])])
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
