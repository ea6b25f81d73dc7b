# Checks an annotated model (ridge analyze --annotate) against the model it
# came from and analyze's JSON for the same options, with python3-onnx:
#   check IN OUT JSON   onnx's checker passes; every value has its shape;
#                       every node its ridge.* props, equal to the JSON's;
#                       the model's props equal the JSON's totals; every
#                       initializer's bytes equal the input's
#   big OUT             writes a model with 64 MiB of embedded weights
#   rss CMD...          runs CMD, prints its peak resident memory in MiB
import json
import os
import resource
import subprocess
import sys

if sys.argv[1] == "rss":
    subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
    print("peak MiB %d" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024))
    sys.exit(0)

import onnx
import onnx.parser
from onnx import TensorProto, helper

if sys.argv[1] == "big":
    import numpy as np
    n = 2048
    ws = [helper.make_tensor("W%d" % i, TensorProto.FLOAT, [n, 2 * n],
                             (np.arange(2 * n * n, dtype=np.uint32) * (i + 7)).astype(np.float32).tobytes(),
                             raw=True) for i in range(2)]
    ws[1].dims[:] = [2 * n, n]
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W0"], ["h"], name="up"),
         helper.make_node("Relu", ["h"], ["r"], name="act"),
         helper.make_node("MatMul", ["r", "W1"], ["y"], name="down")],
        "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], ws)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[2])
    sys.exit(0)

# scripts/annotations.py reads NodeProto.metadata_props with any onnx.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from annotations import node_props  # noqa: E402

_, _, src, out, doc = sys.argv
# Weights in external data are compared as references (where they lie).
a = (onnx.parser.parse_model(open(src).read()) if src.endswith(".onnxtxt")
     else onnx.load(src, load_external_data=False))
b, doc = onnx.load(out, load_external_data=False), json.load(open(doc))
onnx.checker.check_model(out)  # by path: external data is looked up beside it
print("checker: ok")

# Shapes: every node output is in value_info or the graph's outputs, with a
# shape; a symbolic dim is a dim_param.
typed = {v.name: v for v in list(b.graph.value_info) + list(b.graph.output)}
missing = [o for n in b.graph.node for o in n.output
           if o and not (o in typed and typed[o].type.tensor_type.HasField("shape"))]
print("values: %d typed, missing %s" % (len(typed), missing))
for v in b.graph.value_info:
    dims = ["%s" % (d.dim_param if d.HasField("dim_param") else d.dim_value)
            for d in v.type.tensor_type.shape.dim]
    print("value %s [%s]" % (v.name, ",".join(dims)))

# Node props equal the JSON's numbers (the step's: multiplier applied). With
# free dims (options.counts "formulas") the props are the four counts as
# formulas, and each is compared with the JSON's at a binding (every symbol
# 7, evaluated exactly by scripts/formula.py); no times.
from formula import evaluate  # noqa: E402
formulas = doc["options"].get("counts") == "formulas"
binding = {s: 7 for s in doc.get("needs_binding", [])}
keys = ["ridge.fwd_flops", "ridge.bwd_flops", "ridge.macs", "ridge.bytes"]
if not formulas:
    keys += ["ridge.intensity", "ridge.seconds", "ridge.bound", "ridge.share"]
by_name = {n["name"]: n for n in doc["nodes"]}
step = doc["time"]["step_seconds"] if not formulas else None


def value(x):
    """A prop or JSON count: a number (props are strings), or with formulas
    a formula at the binding."""
    return float(evaluate(x, binding)) if formulas and isinstance(x, str) else float(x)


def close(x, y):
    x, y = value(x), value(y)
    return abs(x - y) <= 1e-5 * max(abs(x), abs(y), 1e-30)


for index, node in enumerate(b.graph.node):
    props = node_props(node)
    got = dict(props)
    name = node.name or "%s_%d" % (node.op_type, index)  # as ridge names an unnamed node
    if len(got) != len(props):
        print("node %s: duplicate props" % name)
    j = by_name[name]
    if not j["modeled"]:
        print("node %s: unmodeled %s" % (name, got.get("ridge.unmodeled")))
        continue
    if sorted(got) != sorted(keys):
        print("node %s: props %s" % (name, sorted(got)))
        continue
    k = j.get("multiplier", 1)
    want = {"ridge.fwd_flops": value(j["fwd_flops"]) * k, "ridge.bwd_flops": value(j["bwd_flops"]) * k,
            "ridge.macs": value(j["macs"]) * k,
            "ridge.bytes": (value(j["fwd_bytes"]) + value(j["bwd_bytes"])) * k}
    if not formulas:
        secs = (j["fwd_time"]["seconds"] + (j["bwd_time"]["seconds"] if "bwd_time" in j else 0)) * k
        want.update({"ridge.seconds": secs, "ridge.share": secs / step if step else 0})
    bad = [key for key, x in want.items() if not close(got[key], x)]
    if not formulas and j["fwd_bytes"]:
        bad += [] if close(float(got["ridge.intensity"]), j["fwd_flops"] / j["fwd_bytes"]) else ["ridge.intensity"]
    if not formulas and got["ridge.bound"] != j["fwd_time"]["bound"]:
        bad.append("ridge.bound")
    print("node %s: %d props, %s" % (name, len(got), "equal to the JSON" if not bad else "DIFFER: %s" % bad))
    print("  fwd_flops=%s bwd_flops=%s macs=%s bytes=%s bound=%s" %
          (got["ridge.fwd_flops"], got["ridge.bwd_flops"], got["ridge.macs"], got["ridge.bytes"],
           got.get("ridge.bound", "(needs numbers)")))

meta = dict((e.key, e.value) for e in b.metadata_props)
mine = [e.key for e in b.metadata_props if e.key.startswith("ridge.")]
print("model props: %d, duplicates %d" % (len(mine), len(mine) - len(set(mine))))
totals = [("ridge.step_flops", doc["totals"]["step_flops"]), ("ridge.params", doc["params"]),
          ("ridge.memory_total", doc["memory"]["total"])]
if not formulas:
    totals.insert(1, ("ridge.step_seconds", doc["time"]["step_seconds"]))
elif "ridge.step_seconds" in meta:
    print("ridge.step_seconds present, but the costs are formulas")
for key, want in totals:
    print("%s %s" % (key, "equal to the JSON" if close(meta[key], want) else "DIFFERS: %s vs %s" % (meta[key], want)))
others = [(e.key, e.value) for e in b.metadata_props if not e.key.startswith("ridge.")]
print("other model props kept: %s" % (others == [(e.key, e.value) for e in a.metadata_props if not e.key.startswith("ridge.")]))

# Weights: the same tensors, byte for byte.
same = [x.SerializeToString() == y.SerializeToString() for x, y in zip(a.graph.initializer, b.graph.initializer)]
print("initializers: %d of %d equal, %d payload bytes" %
      (sum(same), len(a.graph.initializer), sum(len(t.raw_data) for t in b.graph.initializer)))
