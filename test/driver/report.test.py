# --report OUT.html in a real browser (Debian's chromium, headless):
#   model OUT            writes a model whose every string is an injection attempt
#   dom PAGE[#FRAGMENT]  loads the page, runs its script, and prints the
#                        structure of the DOM chromium dumps: sections, the
#                        elements a page must not have, each table's rows
#   raw PAGE             what the file itself holds (no browser)
import html.parser
import os
import re
import subprocess
import sys
import tempfile

EVIL = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(2)>", "=cmd|' /C calc'!A0",
        "</title><b>bold</b>", "plain"]

if sys.argv[1] == "model":
    import onnx
    from onnx import TensorProto, helper
    nodes, prev = [], "x"
    for i, n in enumerate(EVIL):
        out = "v%d<i>" % i
        nodes.append(helper.make_node("Relu", [prev], [out], name=n, doc_string="<script>doc</script>"))
        prev = out
    g = helper.make_graph(nodes, "</title><script>graph</script>",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4, 8])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="<script>producer</script>", doc_string="<img src=y>")
    e = m.metadata_props.add()
    e.key, e.value = "<script>k</script>", "<img src=z onerror=alert(3)>"
    onnx.save(m, sys.argv[2])
    sys.exit(0)


class Dom(html.parser.HTMLParser):
    """Counts elements, ids, and each table's body rows (hidden ones apart)."""

    def __init__(self):
        super().__init__()
        self.tags, self.ids, self.rows, self.hidden, self.order = {}, [], {}, {}, {}
        self.table, self.in_body, self.cell, self.text = None, False, 0, {}
        self.current = None
        self.last, self.bold, self.legend = None, 0, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.last = tag
        self.legend += tag == "i" and "style" in a  # a legend's color swatch
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in a:
            self.ids.append(a["id"])
            if tag in ("table",):
                self.table = a["id"]
                self.rows[self.table], self.hidden[self.table], self.order[self.table] = 0, 0, []
        if tag == "tbody":
            self.in_body = True
        if tag == "tr" and self.in_body and self.table:
            self.rows[self.table] += 1
            self.hidden[self.table] += "hidden" in a
            self.cell = 0
        if tag == "td" and self.in_body and self.table:
            self.cell += 1
        if tag == "span" and a.get("id") == "shown":
            self.current = "shown"

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_body = False
        if tag == "table":
            self.table = None
        if tag == "span":
            self.current = None

    def handle_data(self, data):
        self.bold += self.last == "b" and data == "bold"
        if self.current:
            self.text[self.current] = self.text.get(self.current, "") + data
        if self.in_body and self.table and self.cell == 2:  # the second cell: a node's name
            self.order[self.table].append(data)


if sys.argv[1] == "raw":
    page = open(sys.argv[2], encoding="utf-8").read()
    for bad in ["<script>alert", "<img", "<b>bold", "<i>", "</title><b>", "</title><script"]:
        print("raw %-16s %d" % (bad, page.count(bad)))
    print("raw <script elements %d" % len(re.findall(r"<script\b", page)))
    print("raw fetches %d" % len(re.findall(r"(?:src|href)=\"(?:https?:)?//", page)))
    sys.exit(0)

page = sys.argv[2]
with tempfile.TemporaryDirectory() as profile:
    dom = subprocess.run(
        [os.environ.get("CHROMIUM", "chromium"), "--headless", "--no-sandbox", "--disable-gpu",
         "--user-data-dir=" + profile, "--dump-dom", "file://" + os.path.abspath(page.split("#")[0])
         + ("#" + page.split("#", 1)[1] if "#" in page else "")],
        capture_output=True, text=True, timeout=120, check=True).stdout
d = Dom()
d.feed(dom)
print("sections: %s" % " ".join(i for i in d.ids if i in (
    "summary", "memory", "fusion", "roofline", "ops", "nodes", "warnings", "recommended",
    "breakdown", "ranking", "scaling", "rejected")))
print("elements: script %d, img %d, i %d, b holding 'bold' %d, svg %d" %
      (d.tags.get("script", 0), d.tags.get("img", 0), d.tags.get("i", 0) - d.legend,
       d.bold, d.tags.get("svg", 0)))
for t in sorted(d.rows):
    print("table %s: %d rows, %d hidden" % (t, d.rows[t], d.hidden[t]))
if "shown" in d.text:
    print("shown: %s" % d.text["shown"])
if "node-table" in d.order:
    print("first rows: %s" % " | ".join(d.order["node-table"][:3]))
