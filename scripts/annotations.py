#!/usr/bin/python3
"""Prints what `ridge analyze --annotate OUT.onnx` wrote into a model: the
model's ridge.* props, and per node its ridge.* props, slowest first.
    scripts/annotations.py OUT.onnx [--top N]
Works with any python3-onnx (Debian 12's 1.12 predates NodeProto's
metadata_props, ONNX 1.16's field 9: node_props() reads it by number)."""
import argparse
import sys

import onnx
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory


def _node_props_type():
    f = descriptor_pb2.FileDescriptorProto(name="ridge_node_props.proto", package="ridgeprops",
                                           dependency=["onnx/onnx-ml.proto"])
    m = f.message_type.add(name="NodeProps")
    m.field.add(name="metadata_props", number=9,
                type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
                type_name=".onnx.StringStringEntryProto")
    pool = descriptor_pool.Default()
    try:
        pool.Add(f)
    except TypeError:  # a protobuf without DescriptorPool.Add(proto)
        pool.AddSerializedFile(f.SerializeToString())
    return message_factory.MessageFactory(pool).GetPrototype(
        pool.FindMessageTypeByName("ridgeprops.NodeProps"))


_NodeProps = None


def node_props(node):
    """A NodeProto's metadata_props as (key, value) pairs, in file order."""
    global _NodeProps
    if _NodeProps is None:
        _NodeProps = _node_props_type()
    p = _NodeProps()
    p.ParseFromString(node.SerializeToString())
    return [(e.key, e.value) for e in p.metadata_props]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--top", type=int, default=10, help="nodes to print (0: all)")
    a = ap.parse_args()
    m = onnx.load(a.model, load_external_data=False)
    for e in m.metadata_props:
        if e.key.startswith("ridge."):
            print("%-20s %s" % (e.key, e.value))
    rows = []
    for i, n in enumerate(m.graph.node):
        p = dict(node_props(n))
        if p:
            rows.append((n.name or "%s_%d" % (n.op_type, i), n.op_type, p))
    rows.sort(key=lambda r: -float(r[2].get("ridge.seconds", 0)))
    print("\n%-16s %-8s %12s %12s %10s %8s %10s %s" %
          ("node", "op", "fwd_flops", "bwd_flops", "bytes", "FLOP/B", "seconds", "bound"))
    for name, op, p in rows[: a.top or None]:
        if "ridge.unmodeled" in p:
            print("%-16s %-8s unmodeled: %s" % (name, op, p["ridge.unmodeled"]))
            continue
        if "ridge.seconds" not in p:  # free dims: the counts are formulas, no times
            print("%-16s %-8s fwd_flops %s; bwd_flops %s; bytes %s" %
                  (name, op, p["ridge.fwd_flops"], p["ridge.bwd_flops"], p["ridge.bytes"]))
            continue
        print("%-16s %-8s %12s %12s %10s %8.4g %10.3g %s" %
              (name, op, p["ridge.fwd_flops"], p["ridge.bwd_flops"], p["ridge.bytes"],
               float(p["ridge.intensity"]), float(p["ridge.seconds"]), p["ridge.bound"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
