#!/usr/bin/python3
"""Reads a ridge JSON document on stdin and checks each expression given on
the command line (Python syntax over the document's top-level keys, e.g.
'speedup < 8'). Prints each check with its values; exits 1 if one fails."""
import json, sys
doc = json.load(sys.stdin)
ok = True
for expr in sys.argv[1:]:
    value = eval(expr, {"__builtins__": {"len": len, "any": any, "all": all, "min": min, "max": max, "abs": abs}}, doc)
    print(f"{'ok' if value else 'FAILED'}: {expr}")
    ok &= bool(value)
sys.exit(0 if ok else 1)
