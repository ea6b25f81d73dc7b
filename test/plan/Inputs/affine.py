#!/usr/bin/python3
"""affine.py A.json B.json C.json a b c: ridge analyze JSON of one model at
batch sizes a, b, c. ridge plan fits each node's costs as affine in the
micro-batch from batch 1 and 2 and extrapolates; this checks, node by node,
that the value at c is exactly where the line through a and b puts it.
Prints 'affine: N nodes x K quantities' or the first that is not."""
import json, sys
docs = [json.load(open(f)) for f in sys.argv[1:4]]
a, b, c = (int(x) for x in sys.argv[4:7])
keys = ("fwd_flops", "macs", "transcendentals", "fwd_bytes", "bwd_flops", "bwd_macs",
        "bwd_transcendentals", "bwd_bytes", "saved_bytes")
rows = [{n["name"]: n for n in d["nodes"]} for d in docs]
count = 0
for name, na in rows[0].items():
    nb, nc = rows[1][name], rows[2][name]
    for k in keys:
        va, vb, vc = na[k], nb[k], nc[k]
        want = va + (vb - va) * (c - a) / (b - a)
        if abs(vc - want) > 1e-9 * max(1.0, abs(want)):
            sys.exit(f"not affine: {name} {k}: {va} at {a}, {vb} at {b}, {vc} at {c} (line: {want})")
        count += 1
print(f"affine: {len(rows[0])} nodes x {len(keys)} quantities")
