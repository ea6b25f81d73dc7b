"""For each domain of OpCosts.def, writes a .onnxtxt with every op of the
domain (but control flow) as a node with no input, as a node with one input
(A float[2,3]) and as a node given exactly the operands its row requires
(each input A, each output a float[2,3]; its rule runs, so it must cope
with the optional operands absent and with shapes that do not fit the op),
each output a graph output float[2,3]; runs `ridge analyze` on it for
training and for inference on H100 and `ridge plan` over 8 devices, and
fails on any exit but 0 (a crash is a signal)."""
import os, re, subprocess, sys

table, ridge, out = sys.argv[1], sys.argv[2], sys.argv[3]
# Need their body graphs to load at all; test/cost/control-flow.onnxtxt.
CONTROL_FLOW = {"If", "Loop", "Scan", "SequenceMap"}
ops = {}
ROW = r'^RIDGE_OP\("([^"]*)", "([^"]+)", \w+, [~0-9a-fx]+u, (0x[0-9a-f]+)u, (0x[0-9a-f]+)u\)'
for domain, op, ins, outs in re.findall(ROW, open(table).read(), re.M):
    if op not in CONTROL_FLOW:
        ops.setdefault(domain or "ai.onnx", []).append((domain, op, int(ins, 16),
                                                        int(outs, 16)))
if sum(map(len, ops.values())) < 100:
    sys.exit("absent-operands-sweep: too few ops read from %s" % table)
for name, entries in ops.items():
    domains = sorted({e[0] for e in entries if e[0]})
    imports = ", ".join(['"" : 17'] + ['"%s" : 1' % d for d in domains])
    nodes = []
    for i, (domain, op, ins, outs) in enumerate(entries):
        qual = domain + "." + op if domain else op
        nodes += ["  z%d = %s()" % (i, qual), "  o%d = %s(A)" % (i, qual)]
        # The required operands, the absent ones between them as "".
        args = ", ".join("A" if ins >> j & 1 else '""' for j in range(ins.bit_length()))
        res = ", ".join("r%d_%d" % (i, j) if outs >> j & 1 or j == 0 else '""'
                        for j in range(max(1, outs.bit_length())))
        nodes += ["  %s = %s(%s)" % (res, qual, args)]
    path = os.path.join(out, name + ".onnxtxt")
    with open(path, "w") as f:
        f.write("<ir_version: 8, opset_import: [%s]>\n" % imports)
        # Every node's output a graph output of a declared shape: a rule runs
        # only once its output's shape is known.
        sig = ", ".join("float[2,3] %s" % o for n in nodes
                        for o in n.split(" = ")[0].strip().split(", ") if o != '""')
        f.write("g (float[2,3] A) => (%s) {\n%s\n}\n" % (sig, "\n".join(nodes)))
    unmodeled = 0
    for cmd in (["analyze"], ["analyze", "--inference"],
                ["plan", "--devices", "8", "--global-batch", "8"]):
        run = subprocess.run([ridge, cmd[0], path, "--device", "H100-SXM5-80GB"] + cmd[1:],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("%s %s: exit %d\n%s" % (path, " ".join(cmd), run.returncode,
                                              run.stderr[-2000:]))
        m = re.search(r"unmodeled: (.*)", run.stdout)
        unmodeled += 1 if m else 0
    print("%s: %d ops, analyzed, unmodeled rows %d" % (name, len(entries), unmodeled))
print("%d domains" % len(ops))
