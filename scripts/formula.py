#!/usr/bin/env python3
"""Evaluate ridge's cost formulas exactly, or check a symbolic report against a bound one.

A formula is what `ridge analyze --format json` prints for a count whose
dims are symbolic (README, "Formulas"): integers or a/b coefficients, symbol
names (double-quoted with \\" and \\\\ escapes when not identifiers), + - *,
^ for integer powers, parentheses, floor(a/b), mod(a,b), min(a,b), max(a,b).
Evaluation is exact (fractions.Fraction), never Python's eval.

  scripts/formula.py '24*batch*seq + 1/2*h' batch=8 seq=2048 h=4096
  scripts/formula.py --compare SYMBOLIC.json BOUND.json batch=8 [seq=2048 ...]

--compare evaluates every count of the symbolic document (totals, each op
type, each node by name, memory) at the binding and compares it with the
bound document's number; it prints one line per checked group and exits 1 on
any difference.
"""
import argparse
import json
import math
import re
import sys
from fractions import Fraction

TOKEN = re.compile(r'\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|("(?:[^"\\]|\\.)*")|(.))')


def tokens(text):
    pos, out = 0, []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"bad formula at {pos}: {text!r}")
        pos = m.end()
        num, name, quoted, op = m.groups()
        if num is not None:
            out.append(("num", int(num)))
        elif name is not None:
            out.append(("name", name))
        elif quoted is not None:
            out.append(("name", re.sub(r'\\(.)', r'\1', quoted[1:-1])))
        elif op is not None and op.strip():
            out.append(("op", op))
    return out


class Parser:
    """Recursive descent over sum := term (('+'|'-') term)*, term := factor
    (('*'|'/') factor)*, factor := atom ('^' num)?, atom := num | name |
    '-' atom | '(' sum ')' | floor(sum/sum) | mod|min|max(sum, sum)."""

    def __init__(self, text, binding):
        self.t, self.i, self.b = tokens(text), 0, binding

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, kind=None, value=None):
        k, v = self.peek()
        if k is None or (kind and k != kind) or (value is not None and v != value):
            raise ValueError(f"expected {value or kind} at token {self.i}")
        self.i += 1
        return v

    def run(self):
        v = self.sum()
        if self.i != len(self.t):
            raise ValueError(f"trailing tokens at {self.i}")
        return v

    def sum(self):
        v = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            v = v + self.term() if self.take() == "+" else v - self.term()
        return v

    def term(self):
        v = self.factor()
        while self.peek() in (("op", "*"), ("op", "/")):
            op = self.take()
            w = self.factor()
            v = v * w if op == "*" else Fraction(v) / w
        return v

    def factor(self):
        v = self.atom()
        if self.peek() == ("op", "^"):
            self.take()
            v = v ** self.take("num")
        return v

    def atom(self):
        k, v = self.peek()
        if k == "num":
            self.i += 1
            return Fraction(v)
        if (k, v) == ("op", "-"):
            self.i += 1
            return -self.factor()
        if (k, v) == ("op", "("):
            self.i += 1
            r = self.sum()
            self.take("op", ")")
            return r
        if k == "name" and self.i + 1 < len(self.t) and self.t[self.i + 1] == ("op", "(") \
                and v in ("floor", "mod", "min", "max"):
            self.i += 2
            if v == "floor":
                r = math.floor(Fraction(self.sum()))  # floor(a/b): the '/' is in the sum
                self.take("op", ")")
                return Fraction(r)
            a = self.sum()
            self.take("op", ",")
            b = self.sum()
            self.take("op", ")")
            return {"mod": lambda: a - b * math.floor(Fraction(a) / b),
                    "min": lambda: min(a, b), "max": lambda: max(a, b)}[v]()
        if k == "name":
            self.i += 1
            if v not in self.b:
                raise ValueError(f"symbol {v!r} is not bound")
            return Fraction(self.b[v])
        raise ValueError(f"unexpected {v!r}")


def evaluate(count, binding):
    """A JSON count: a number as it is, a formula evaluated exactly."""
    if isinstance(count, str):
        return Parser(count, binding).run()
    return count


def close(a, b):
    if a is None or b is None:
        return a is b
    a, b = float(a), float(b)
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def compare(sym_doc, bound_doc, binding):
    bad, checked = [], {}

    def check(group, what, s, b):
        checked[group] = checked.get(group, 0) + 1
        v = evaluate(s, binding)
        if not close(v, b):
            bad.append(f"{group} {what}: formula {s!r} = {float(v):.17g}, bound run {b}")

    for phase in ("fwd", "bwd", "optimizer"):
        for k, s in sym_doc["totals"][phase].items():
            check("totals", f"{phase}.{k}", s, bound_doc["totals"][phase][k])
    for k in ("recompute_flops", "step_flops"):
        check("totals", k, sym_doc["totals"][k], bound_doc["totals"][k])
    # Training: weights, gradients, optimizer state, activations; inference
    # (options.mode): weights, the live peak (and its node), the KV cache.
    inference = sym_doc["options"]["mode"] == "inference"
    keys_mem = (("weights", "activations", "kv_cache", "total") if inference else
                ("weights", "gradients", "optimizer_state", "activations", "total"))
    for k in keys_mem:
        check("memory", k, sym_doc["memory"][k], bound_doc["memory"][k])
    if inference:  # the bound run's peak is the node named, or one of the candidates
        checked["memory"] += 1
        node = sym_doc["memory"]["activation_peak_node"]
        cands = [node] if node is not None else sym_doc["memory"]["activation_peak_candidates"]
        if bound_doc["memory"]["activation_peak_node"] not in cands:
            bad.append(f"memory activation_peak_node: {cands} vs bound run "
                       f"{bound_doc['memory']['activation_peak_node']}")
    bound_ops = {o["op"]: o for o in bound_doc["by_op_type"]}
    for o in sym_doc["by_op_type"]:
        for phase in ("fwd", "bwd"):
            for k, s in o[phase].items():
                check("by_op_type", f"{o['op']}.{phase}.{k}", s, bound_ops[o["op"]][phase][k])
    bound_nodes = {(n["graph"], n["name"]): n for n in bound_doc["nodes"]}
    keys = ("fwd_flops", "macs", "transcendentals", "fwd_bytes", "bwd_flops", "bwd_macs",
            "bwd_transcendentals", "bwd_bytes", "saved_bytes")
    for n in sym_doc["nodes"]:
        b = bound_nodes[(n["graph"], n["name"])]
        if n["modeled"] != b["modeled"]:
            bad.append(f"node {n['name']}: modeled {n['modeled']} vs {b['modeled']}")
            continue
        for k in keys if n["modeled"] else ():
            check("nodes", f"{n['name']}.{k}", n[k], b[k])
    for group, n in checked.items():
        print(f"{group}: {n} count(s) checked")
    for line in bad:
        print("MISMATCH", line)
    print("all equal" if not bad else f"{len(bad)} mismatch(es)")
    return not bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", nargs=2, metavar=("SYMBOLIC", "BOUND"))
    ap.add_argument("args", nargs="*", help="FORMULA (without --compare) and NAME=VALUE bindings")
    a = ap.parse_args()
    binds = {}
    rest = []
    for x in a.args:
        name, eq, val = x.rpartition("=")
        if eq and re.fullmatch(r"-?\d+", val):
            binds[name] = int(val)
        else:
            rest.append(x)
    if a.compare:
        with open(a.compare[0]) as f:
            s = json.load(f)
        with open(a.compare[1]) as f:
            b = json.load(f)
        sys.exit(0 if compare(s, b, binds) else 1)
    if len(rest) != 1:
        ap.error("give one FORMULA (or --compare SYMBOLIC BOUND) and NAME=VALUE bindings")
    v = evaluate(rest[0], binds)
    print(v.numerator if v.denominator == 1 else v)


if __name__ == "__main__":
    main()
