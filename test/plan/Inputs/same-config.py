#!/usr/bin/python3
"""same-config.py SEARCH.json FIXED.json: finds the fixed configuration of
FIXED among SEARCH's ranked ones and checks that every number agrees
exactly. Prints 'same: <config>' or what differs; exits 1 if it differs."""
import json, sys
search, fixed = (json.load(open(f)) for f in sys.argv[1:3])
want = fixed["fixed"]
keys = ("tp", "pp", "dp", "micro_batch_size", "interleave", "recompute", "zero",
        "sequence_parallel")
name = " ".join(f"{k}={want[k]}" for k in keys)
match = [e for e in search["top"] if all(e[k] == want[k] for k in keys)]
if not match:
    sys.exit(f"not in the search's list: {name}")
diff = [k for k in want if k != "chosen_by_search" and want[k] != match[0].get(k)]
if diff:
    sys.exit(f"differs in {diff}: {name}")
print(f"same: {name}")
