"""Writes a graph with a Hugging Face-style KV cache's inputs (ONNX's text
syntax has no dim expressions): ids [b, s], a mask [b, p + s] (optimum's
"past_sequence_length + sequence_length" form) and four cache tensors
[b, 2, p, 4]; the one node reads ids only."""
import sys
import onnx
from onnx import TensorProto, helper as h

cache = [h.make_tensor_value_info(n, TensorProto.FLOAT, ["b", 2, "p", 4])
         for n in ("k0", "v0", "k1", "v1")]
graph = h.make_graph(
    [h.make_node("Cast", ["ids"], ["y"], to=TensorProto.FLOAT)], "kv",
    [h.make_tensor_value_info("ids", TensorProto.INT64, ["b", "s"]),
     h.make_tensor_value_info("mask", TensorProto.INT64, ["b", "p + s"])] + cache,
    [h.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "s"])])
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), sys.argv[1])
