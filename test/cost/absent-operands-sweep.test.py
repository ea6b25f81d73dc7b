"""For each domain of OpCosts.def, writes a .onnxtxt with every op of the
domain (but control flow) as a node with no input and as a node with one
input (A float[2,3]), each output a graph output float[2,3],
runs `ridge analyze` on it for training and for inference on H100, and
fails on any exit but 0 (a crash is a signal)."""
import os, re, subprocess, sys

table, ridge, out = sys.argv[1], sys.argv[2], sys.argv[3]
# Need their body graphs to load at all; test/cost/control-flow.onnxtxt.
CONTROL_FLOW = {"If", "Loop", "Scan", "SequenceMap"}
ops = {}
for domain, op in re.findall(r'^RIDGE_OP\("([^"]*)", "([^"]+)"', open(table).read(), re.M):
    if op not in CONTROL_FLOW:
        ops.setdefault(domain or "ai.onnx", []).append((domain, op))
if sum(map(len, ops.values())) < 100:
    sys.exit("absent-operands-sweep: too few ops read from %s" % table)
for name, entries in ops.items():
    domains = sorted({d for d, _ in entries if d})
    imports = ", ".join(['"" : 17'] + ['"%s" : 1' % d for d in domains])
    nodes = []
    for i, (domain, op) in enumerate(entries):
        qual = domain + "." + op if domain else op
        nodes += ["  z%d = %s()" % (i, qual), "  o%d = %s(A)" % (i, qual)]
    path = os.path.join(out, name + ".onnxtxt")
    with open(path, "w") as f:
        f.write("<ir_version: 8, opset_import: [%s]>\n" % imports)
        # Every node's output a graph output of a declared shape: a rule runs
        # only once its output's shape is known.
        outs = ", ".join("float[2,3] %s" % n.split()[0] for n in nodes)
        f.write("g (float[2,3] A) => (%s) {\n%s\n}\n" % (outs, "\n".join(nodes)))
    unmodeled = 0
    for extra in ([], ["--inference"]):
        run = subprocess.run([ridge, "analyze", path, "--device", "H100-SXM5-80GB"] + extra,
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("%s %s: exit %d\n%s" % (path, " ".join(extra), run.returncode,
                                              run.stderr[-2000:]))
        m = re.search(r"unmodeled: (.*)", run.stdout)
        unmodeled += 1 if m else 0
    print("%s: %d ops, analyzed, unmodeled rows %d" % (name, len(entries), unmodeled))
print("%d domains" % len(ops))
