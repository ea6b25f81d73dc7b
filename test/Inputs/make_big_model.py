#!/usr/bin/python3
"""Writes an ONNX model larger than protobuf's 2 GiB limit without using the
disk: one initializer's raw_data declares 2.2 GB and the file is sparse
there. The graph is x[4] -> Add(x, b) with a 4-element bias and the big
weight W (unused by any node, like a stored but frozen embedding).

  make_big_model.py OUT
"""
import sys

from protowire import field, varint, vint

BIG = 2_200_000_000  # bytes of W's payload (550M floats)
# TensorProto W: dims(1) 550000000, data_type(2) FLOAT=1, name(8) "W", raw_data(9)
tensor_head = vint(1, BIG // 4) + vint(2, 1) + field(8, b"W") + varint(9 << 3 | 2) + varint(BIG)
tensor_len = len(tensor_head) + BIG
bias = vint(1, 4) + vint(2, 1) + field(8, b"b") + field(9, bytes(16))
# ValueInfo for x and y: name + type { tensor_type { elem_type 1, shape { dim { dim_value 4 } } } }
shape = field(2, field(1, vint(1, 4)))
ttype = field(1, vint(1, 1) + shape)
vi_x = field(1, b"x") + field(2, ttype)
vi_y = field(1, b"y") + field(2, ttype)
node = field(1, b"x") + field(1, b"b") + field(2, b"y") + field(4, b"Add")
graph_rest = field(1, node) + field(2, b"big") + field(5, bias) + field(11, vi_x) + field(12, vi_y)
init_head = varint(5 << 3 | 2) + varint(tensor_len) + tensor_head
graph_len = len(init_head) + BIG + len(graph_rest)
opset = field(8, vint(2, 17))
model_head = vint(1, 8) + opset + varint(7 << 3 | 2) + varint(graph_len) + init_head
with open(sys.argv[1], "wb") as f:
    f.write(model_head)
    f.seek(BIG, 1)  # a hole: reads as zeros, takes no disk
    f.write(graph_rest)
