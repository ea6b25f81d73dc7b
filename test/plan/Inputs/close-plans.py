#!/usr/bin/python3
"""close-plans.py A.json B.json: the two plans rank the same configurations
(matched by their knobs) with every number within a relative 1e-12 of the
other's, and recommend configurations whose step times agree as closely.
Prints 'close: N configurations' or what differs; exits 1 if any does."""
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
keys = ("tp", "pp", "dp", "micro_batch_size", "interleave", "recompute", "zero",
        "sequence_parallel")


def close(x, y):
    if isinstance(x, float) or isinstance(y, float):
        return abs(x - y) <= 1e-12 * max(abs(x), abs(y))
    return x == y


def by_knobs(plan):
    return {tuple(e[k] for k in keys): e for e in plan["top"]}


A, B = by_knobs(a), by_knobs(b)
if set(A) != set(B):
    sys.exit(f"different configurations: {sorted(set(A) ^ set(B))[:3]}")
for knobs, e in A.items():
    bad = [k for k in e if not close(e[k], B[knobs][k])]
    if bad:
        sys.exit(f"{dict(zip(keys, knobs))} differs in {bad}")
if not close(a["top"][0]["step_seconds"], b["top"][0]["step_seconds"]):
    sys.exit("the recommended configurations' step times differ")
for k in ("evaluated", "params", "speedup"):
    if not close(a[k], b[k]):
        sys.exit(f"{k} differs: {a[k]} vs {b[k]}")
print(f"close: {len(A)} configurations")
