"""Checks recompute-rotary.test's formulas on the four JSON reports in argv[1]."""
import json
import sys

act = {k: json.load(open(f"{sys.argv[1]}/{k}.json"))["memory"]["activations"]
       for k in ("f3", "f4", "n3", "n4")}
b, s, h, d, L = 2, 128, 256, 64, 4
print("per-layer checkpoint", act["f4"] - act["f3"], "==", 2 * b * s * h)
formula = L * 2 * b * s * h + 2 * (2 * b * s * d) + (act["n4"] - act["n3"])
print("full within 10% of formula:", abs(act["f4"] / formula - 1) < 0.10)
