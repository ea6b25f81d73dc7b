"""Writes torch's export of torch.split(x, [1, 9], dim=1) (ONNX's text
syntax has no sequence types): a Loop of one iteration (maximum trip count
1, condition true) slices x[:, c[i]:c[i+1]] with c = [0, 1] into an empty
sequence; the last piece x[:, 1:] is inserted after the loop; SequenceAt 0
and 1 read the pieces, and the second goes through a MatMul."""
import sys
import onnx
from onnx import TensorProto, helper as h

seq_t = h.make_sequence_type_proto(h.make_tensor_type_proto(TensorProto.FLOAT, None))
body = h.make_graph(
    [h.make_node("Gather", ["cuts", "i"], ["start"], axis=0),
     h.make_node("Add", ["i", "one"], ["i1"]),
     h.make_node("Gather", ["cuts", "i1"], ["end"], axis=0),
     h.make_node("Slice", ["x", "start", "end", "axis"], ["piece"]),
     h.make_node("SequenceInsert", ["s", "piece"], ["s2"]),
     h.make_node("Identity", ["ci"], ["co"])],
    "body",
    [h.make_tensor_value_info("i", TensorProto.INT64, [1]),
     h.make_tensor_value_info("ci", TensorProto.BOOL, []),
     h.make_value_info("s", seq_t)],
    [h.make_tensor_value_info("co", TensorProto.BOOL, []), h.make_value_info("s2", seq_t)])
graph = h.make_graph(
    [h.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
     h.make_node("Loop", ["trips", "true", "empty"], ["pieces"], body=body),
     h.make_node("Slice", ["x", "one", "big", "axis"], ["last"]),
     h.make_node("SequenceInsert", ["pieces", "last"], ["all"]),
     h.make_node("SequenceAt", ["all", "zero"], ["cls"]),
     h.make_node("SequenceAt", ["all", "onei"], ["rest"]),
     h.make_node("MatMul", ["rest", "w"], ["y"])],
    "g",
    [h.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, 4])],
    [h.make_tensor_value_info("cls", TensorProto.FLOAT, None),
     h.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    [h.make_tensor("trips", TensorProto.INT64, [1], [1]),
     h.make_tensor("true", TensorProto.BOOL, [], [1]),
     h.make_tensor("cuts", TensorProto.INT64, [2], [0, 1]),
     h.make_tensor("one", TensorProto.INT64, [1], [1]),
     h.make_tensor("big", TensorProto.INT64, [1], [10]),
     h.make_tensor("axis", TensorProto.INT64, [1], [1]),
     h.make_tensor("zero", TensorProto.INT64, [], [0]),
     h.make_tensor("onei", TensorProto.INT64, [], [1]),
     h.make_tensor("w", TensorProto.FLOAT, [4, 8], [0.0] * 32)])
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
