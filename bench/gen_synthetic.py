#!/usr/bin/python3
"""Write a synthetic ONNX graph (opset 17) of exactly N nodes for scale benchmarks.

Small tensors (input float[B,S,H], H = 64 by default) so that node count, not
tensor size, dominates.  The graph repeats a block

    MatMul(x, W[H,H]) -> Add(bias[H]) -> activation
      activation cycles through Relu, x*Sigmoid(x) (SiLU, 2 nodes), Tanh
    + a residual Add every 2nd block (the graph is a DAG, not a chain)
    + LayerNormalization(scale[H], bias[H]) every 4th block
    + Reshape [B,S,A,H/A] -> Transpose -> Transpose -> Reshape [B,S,H]
      every 8th block

and cuts the stream at exactly N nodes; the graph output is the last node's
output.  Every float weight is an EXTERNAL initializer pointing into
"weights.bin", which is never written.  Int64 shape constants are inline.

Nodes go straight into the GraphProto's repeated fields (graph.node.add()),
which with the C++ protobuf backend costs about 2 us a node.

  bench/gen_synthetic.py --nodes 1000000 --out build/models/synth-1m.onnx
"""

import argparse
import os
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper


class Writer:
    """Appends nodes / EXTERNAL initializers straight into a GraphProto's
    repeated fields (no helper.make_node, no intermediate lists)."""

    def __init__(self, graph, elem=TensorProto.FLOAT, elem_size=4, location="weights.bin"):
        self.g = graph
        self.elem, self.elem_size = elem, elem_size
        self.location = location
        self.offset = 0
        self.params = 0
        self.weights = 0
        self.templates = {}

    def weight(self, name, dims):
        # One template TensorProto per shape (dims, type, location, length);
        # CopyFrom + two field writes is ~2x faster than building each one.
        key = tuple(dims)
        tmpl = self.templates.get(key)
        if tmpl is None:
            n = 1
            for d in dims:
                n *= d
            tmpl = TensorProto()
            tmpl.dims.extend(dims)
            tmpl.data_type = self.elem
            tmpl.data_location = TensorProto.EXTERNAL
            for k, v in (("location", self.location), ("offset", "0"),
                         ("length", str(n * self.elem_size))):
                e = tmpl.external_data.add()
                e.key, e.value = k, v
            self.templates[key] = tmpl = (tmpl, n, (n * self.elem_size + 63) // 64 * 64)
        proto, n, stride = tmpl
        t = self.g.initializer.add()
        t.CopyFrom(proto)
        t.name = name
        t.external_data[1].value = str(self.offset)
        self.offset += stride
        self.params += n
        self.weights += 1
        return name

    def node(self, op_type, inputs, output, attr=None):
        n = self.g.node.add()
        n.op_type = op_type
        n.input.extend(inputs)
        n.output.append(output)
        n.name = output
        if attr is not None:
            n.attribute.append(attr)


def generate(args):
    N, H, A = args.nodes, args.hidden, args.heads
    if H % A:
        sys.exit("hidden must be divisible by heads")
    model = onnx.ModelProto()
    model.ir_version = 8
    model.producer_name = "ridge-bench-gen_synthetic"
    model.opset_import.append(helper.make_opsetid("", 17))
    graph = model.graph          # built in place: no 1M-node copy at the end
    w = Writer(graph)
    graph.initializer.extend([
        helper.make_tensor("shape_heads", TensorProto.INT64, [4], [0, 0, A, H // A]),
        helper.make_tensor("shape_hidden", TensorProto.INT64, [3], [0, 0, H])])
    batch = args.batch if args.batch == "batch" else int(args.batch)
    S = args.seq
    hidden_shape = [batch, S, H]
    heads_shape = [batch, S, A, H // A]
    heads_t_shape = [batch, A, S, H // A]

    perm = helper.make_attribute("perm", [0, 2, 1, 3])
    ln_attrs = helper.make_attribute("axis", -1)
    count = 0
    x = "input"
    shape = hidden_shape
    blk = 0
    while True:
        # One block as (op, inputs(cur), attrs, out_shape); inputs is called
        # only for nodes actually emitted, so a cut block makes no unused
        # weights.  st["act_in"] remembers the Sigmoid's input for SiLU.
        b = blk
        res_in = x
        st = {}
        steps = [("MatMul", lambda c: [c, w.weight("w%d" % b, [H, H])], None, hidden_shape),
                 ("Add", lambda c: [c, w.weight("b%d" % b, [H])], None, hidden_shape)]
        act = b % 3
        if act == 0:
            steps.append(("Relu", lambda c: [c], None, hidden_shape))
        elif act == 1:
            steps.append(("Sigmoid", lambda c: [st.setdefault("act_in", c)], None, hidden_shape))
            steps.append(("Mul", lambda c: [st["act_in"], c], None, hidden_shape))
        else:
            steps.append(("Tanh", lambda c: [c], None, hidden_shape))
        if b % 2 == 1:
            steps.append(("Add", lambda c: [c, res_in], None, hidden_shape))
        if b % 4 == 3:
            steps.append(("LayerNormalization",
                          lambda c: [c, w.weight("g%d" % b, [H]), w.weight("c%d" % b, [H])],
                          ln_attrs, hidden_shape))
        if b % 8 == 7:
            steps.append(("Reshape", lambda c: [c, "shape_heads"], None, heads_shape))
            steps.append(("Transpose", lambda c: [c], perm, heads_t_shape))
            steps.append(("Transpose", lambda c: [c], perm, heads_shape))
            steps.append(("Reshape", lambda c: [c, "shape_hidden"], None, hidden_shape))
        for op, ins, attrs, oshape in steps:
            if count == N:
                break
            out = "t%d" % count
            w.node(op, ins(x), out, attrs)
            x = out
            shape = oshape
            count += 1
        if count == N:
            break
        blk += 1

    graph.name = "synthetic_%d" % N
    graph.input.append(helper.make_tensor_value_info("input", TensorProto.FLOAT, hidden_shape))
    graph.output.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, shape))
    data = model.SerializeToString()
    assert len(data) < 2 ** 31, "protobuf limit (2 GiB) exceeded"
    return data, w, count


def check(data, weights_bytes):
    model = onnx.ModelProto()
    model.ParseFromString(data)
    print("nodes %d, initializers %d" % (len(model.graph.node), len(model.graph.initializer)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        with open(path, "wb") as f:
            f.write(data)
        with open(os.path.join(tmp, "weights.bin"), "wb") as f:
            f.truncate(weights_bytes)
        onnx.checker.check_model(path)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    known = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = v.type.tensor_type
        known[v.name] = ([d.dim_value if d.HasField("dim_value") else
                          (d.dim_param or None) for d in tt.shape.dim]
                         if tt.HasField("shape") else None)
    bad = [(n.op_type, o, known.get(o)) for n in inferred.graph.node for o in n.output
           if known.get(o) is None or None in known[o]]
    for op, o, dims in bad[:20]:
        print("  unresolved: %s %s -> %s" % (op, o, dims))
    ops = {}
    for n in model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print("checker OK; strict shape inference: %d unresolved; ops %s"
          % (len(bad), ", ".join("%s %d" % kv for kv in sorted(ops.items()))))
    return not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4, help="Reshape split of H")
    ap.add_argument("--seq", type=int, default=16)
    ap.add_argument("--batch", default="1", help='an integer, or the symbolic dim "batch"')
    ap.add_argument("--check", action="store_true",
                    help="onnx.checker + strict shape inference (fine up to ~100k nodes)")
    args = ap.parse_args()
    if args.nodes < 1:
        ap.error("--nodes must be >= 1")
    if args.batch != "batch" and not args.batch.isdigit():
        ap.error('--batch must be an integer or "batch"')

    t0 = time.time()
    data, w, count = generate(args)
    t1 = time.time()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(data)
    t2 = time.time()
    print("wrote %s: %d nodes, %d weight initializers, %d params, %d bytes; "
          "build %.2fs, write %.2fs" % (args.out, count, w.weights, w.params,
                                         len(data), t1 - t0, t2 - t1))
    if args.check:
        ok = check(data, w.offset)
        print("check %.2fs" % (time.time() - t2))
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
