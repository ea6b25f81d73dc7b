# Prints the numbers llm-kv.test checks from `ridge analyze --format json`.
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["options"]["mode"] == "inference"
inf = doc["inference"]
for phase in ("prefill", "decode"):
    if phase not in inf:
        continue
    p = inf[phase]
    products = [o for o in p["by_op_type"] if o["op"] in ("MatMul", "com.microsoft.MatMulNBits")]
    cols = " ".join("%s=%d/%d" % (o["op"], o["flops"], o["bytes"]) for o in products)
    print("%s tokens=%d macs=%d %s kv=%d weights=%d unmodeled=%d" % (
        phase, p["tokens"], p["macs"], cols, p["memory"]["kv_cache"], p["memory"]["weights"],
        p["unmodeled_nodes"]))
