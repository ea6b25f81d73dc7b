#!/usr/bin/python3
"""Writes VGG-16 (224x224, 1000 classes) as ONNX with its 138M float weights
embedded (raw_data, about 553 MB), using python3-onnx alone: the benchmark's
large-file case needs no torch. Weights are zeros: only the size matters.

  /usr/bin/python3 bench/gen_vgg16.py --out build/models/vgg16-embedded.onnx
"""
import argparse
import numpy as np
import onnx
from onnx import TensorProto, helper

CFG = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def weight(name, dims):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    t.raw_data = np.zeros(int(np.prod(dims)), dtype=np.float32).tobytes()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--batch", type=int, default=1)
    a = ap.parse_args()
    nodes, inits, x, cin, i = [], [], "input", 3, 0
    for v in CFG:
        if v == "M":
            nodes.append(helper.make_node("MaxPool", [x], [f"p{i}"], kernel_shape=[2, 2], strides=[2, 2]))
            x = f"p{i}"
        else:
            inits += [weight(f"conv{i}.weight", [v, cin, 3, 3]), weight(f"conv{i}.bias", [v])]
            nodes.append(helper.make_node("Conv", [x, f"conv{i}.weight", f"conv{i}.bias"], [f"c{i}"], pads=[1, 1, 1, 1]))
            nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
            x, cin = f"r{i}", v
        i += 1
    nodes.append(helper.make_node("Flatten", [x], ["flat"]))
    x, fin = "flat", 512 * 7 * 7
    for j, fout in enumerate([4096, 4096, 1000]):
        inits += [weight(f"fc{j}.weight", [fout, fin]), weight(f"fc{j}.bias", [fout])]
        nodes.append(helper.make_node("Gemm", [x, f"fc{j}.weight", f"fc{j}.bias"], [f"fc{j}"], transB=1))
        x, fin = f"fc{j}", fout
        if j < 2:
            nodes.append(helper.make_node("Relu", [x], [f"fr{j}"]))
            x = f"fr{j}"
    g = helper.make_graph(nodes, "vgg16",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [a.batch, 3, 224, 224])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [a.batch, 1000])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="ridge-bench")
    with open(a.out, "wb") as f:
        f.write(m.SerializeToString())


main()
