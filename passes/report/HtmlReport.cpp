//===- HtmlReport.cpp - One self-contained HTML page per run --------------===//
//
// The page is written from the JSON document alone (plus the charts' SVG),
// top to bottom: a section per part, each a few tables. Numbers are shown
// with SI prefixes; each numeric cell keeps its exact value in data-v, which
// the sort reads.
//
//===----------------------------------------------------------------------===//
#include "passes/report/HtmlReport.h"
#include "passes/report/AnalyzeJson.h"
#include "analyzer/Diagnostics.h"
#include "analyzer/Format.h"
#include "passes/report/Markup.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <map>

using namespace ridge;
using llvm::formatv;
using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace {

const Object &objectOf(const Value *V) {
  static const Object Empty;
  const Object *O = V ? V->getAsObject() : nullptr;
  return O ? *O : Empty;
}
const Object &field(const Object &O, llvm::StringRef Key) { return objectOf(O.get(Key)); }
/// A number field (analyze's jsonNumber), short for the page's many cells.
double num(const Object &O, llvm::StringRef Key) { return jsonNumber(O, Key); }
bool has(const Object &O, llvm::StringRef Key) {
  const Value *V = O.get(Key);
  return V && V->getAsNumber();
}
std::string str(const Object &O, llvm::StringRef Key) {
  const Value *V = O.get(Key);
  if (!V)
    return "";
  if (std::optional<llvm::StringRef> S = V->getAsString())
    return S->str();
  if (std::optional<bool> B = V->getAsBoolean())
    return *B ? "yes" : "no";
  if (std::optional<double> X = V->getAsNumber())
    return exactNumber(*X);
  return "";
}
const Array &arrayOf(const Object &O, llvm::StringRef Key) {
  static const Array Empty;
  const Value *V = O.get(Key);
  const Array *A = V ? V->getAsArray() : nullptr;
  return A ? *A : Empty;
}

std::string time(double S) { return S > 0 ? durationText(S) : std::string("0"); }
std::string pct(double F) { return formatv("{0:P1}", F).str(); }

const char *const Style = R"(<style>
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 20px; color: #222;
  max-width: 1400px; }
h1 { font-size: 20px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #ccc; padding-bottom: 3px; }
.sub { color: #555; font-size: 13px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin-top: 12px; }
.card { border: 1px solid #ddd; border-radius: 4px; padding: 8px 12px; min-width: 130px; }
.card b { display: block; font-size: 18px; }
.card span { color: #666; font-size: 12px; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; position: sticky; top: 0; }
th.k { cursor: pointer; user-select: none; }
th[aria-sort="descending"]::after { content: " \25BC"; }
th[aria-sort="ascending"]::after { content: " \25B2"; }
td.t, th.t { text-align: left; }
td.t { max-width: 420px; overflow: hidden; text-overflow: ellipsis; }
tr.memory td.b { color: #b8860b; font-weight: bold; }
tr.free td { color: #999; }
.bar { display: flex; height: 22px; border: 1px solid #bbb; margin: 6px 0; max-width: 900px; }
.bar div { height: 100%; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.controls { margin: 6px 0; font-size: 13px; }
.controls input[type=search] { width: 260px; }
svg { max-width: 100%; height: auto; }
.warn { color: #8a4b00; font-size: 12px; }
.scroll { max-height: 640px; overflow: auto; border: 1px solid #eee; }
</style>
)";

/// Sorting (every table.sortable: click a th.k) and the node table's filter;
/// the address's fragment presets them (sort, order, filter, hidefree).
const char *const Script = R"(<script>
(function () {
  function value(row, i) {
    var c = row.cells[i], v = c.getAttribute("data-v");
    if (v === null) return c.textContent.toLowerCase();
    var x = parseFloat(v);
    return isNaN(x) ? -Infinity : x;
  }
  function sortTable(t, i, desc) {
    var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = value(a, i), y = value(b, i);
      return (x < y ? -1 : x > y ? 1 : 0) * (desc ? -1 : 1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, j) {
      if (j === i) th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    });
  }
  function column(t, key) {
    var cells = t.tHead.rows[0].cells;
    for (var i = 0; i < cells.length; ++i)
      if (cells[i].getAttribute("data-key") === key) return i;
    return -1;
  }
  document.querySelectorAll("table.sortable").forEach(function (t) {
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, i) {
      if (!th.classList.contains("k")) return;
      th.addEventListener("click", function () {
        sortTable(t, i, th.getAttribute("aria-sort") !== "descending");
      });
    });
  });
  var nodes = document.getElementById("node-table");
  if (!nodes) return;
  var filter = document.getElementById("filter"), hideFree = document.getElementById("hidefree");
  var shown = document.getElementById("shown");
  function apply() {
    var q = filter.value.toLowerCase(), n = 0, rows = nodes.tBodies[0].rows;
    for (var i = 0; i < rows.length; ++i) {
      var r = rows[i];
      var hide = (q && r.getAttribute("data-text").indexOf(q) < 0) ||
                 (hideFree.checked && r.classList.contains("free"));
      r.hidden = hide;
      if (!hide) ++n;
    }
    shown.textContent = n + " of " + rows.length + " nodes shown";
  }
  filter.addEventListener("input", apply);
  hideFree.addEventListener("change", apply);
  var p = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
    var i = kv.indexOf("=");
    if (i > 0) p[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
  });
  if (p.filter) filter.value = p.filter;
  if (p.hidefree === "1") hideFree.checked = true;
  if (p.sort && column(nodes, p.sort) >= 0)
    sortTable(nodes, column(nodes, p.sort), p.order !== "asc");
  apply();
})();
</script>
)";

/// Writes the page's parts; every model string through xmlText.
class Page {
public:
  explicit Page(llvm::raw_ostream &OS) : OS(OS) {}

  void begin(llvm::StringRef Title) {
    OS << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n<title>"
       << xmlText(Title, 200) << "</title>\n"
       << Style << "</head>\n<body>\n";
  }
  void end() { OS << Script << "</body>\n</html>\n"; }

  void heading(llvm::StringRef Title, llvm::StringRef Sub) {
    OS << "<h1>" << xmlText(Title, 300) << "</h1>\n<div class=\"sub\">" << xmlText(Sub, 400)
       << "</div>\n";
  }
  void section(llvm::StringRef Id, llvm::StringRef Title) {
    OS << "<h2 id=\"" << Id << "\">" << xmlText(Title) << "</h2>\n";
  }
  void cards(std::initializer_list<std::pair<std::string, std::string>> Items) {
    OS << "<div class=\"cards\">\n";
    for (const auto &[Value, Label] : Items)
      OS << "<div class=\"card\"><b>" << xmlText(Value) << "</b><span>" << xmlText(Label)
         << "</span></div>\n";
    OS << "</div>\n";
  }
  void para(llvm::StringRef Text, const char *Class = nullptr) {
    OS << "<p" << (Class ? formatv(" class=\"{0}\"", Class).str() : "") << ">"
       << xmlText(Text, 2000) << "</p>\n";
  }
  /// A stacked bar of Parts (label, bytes), each a share of Whole.
  void bar(llvm::ArrayRef<std::pair<std::string, double>> Parts, double Whole) {
    static const char *Colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    OS << "<div class=\"bar\">";
    for (size_t I = 0; I < Parts.size(); ++I)
      if (Whole > 0 && Parts[I].second > 0)
        OS << formatv("<div style=\"width:{0:F2}%;background:{1}\" title=\"{2}\"></div>",
                      std::min(100.0, 100 * Parts[I].second / Whole), Colors[I % 10],
                      xmlText(Parts[I].first));
    OS << "</div>\n<div class=\"legend\">";
    for (size_t I = 0; I < Parts.size(); ++I)
      OS << "<span><i style=\"background:" << Colors[I % 10] << "\"></i>"
         << xmlText(Parts[I].first) << "</span>";
    OS << "</div>\n";
  }

  /// A table: Keys (with a leading '#', a text column) name the sortable
  /// columns; empty keys are not sortable.
  struct Column {
    const char *Title;
    const char *Key;
    bool Text = false;
  };
  void tableBegin(const char *Id, llvm::ArrayRef<Column> Cols, bool Sortable = true) {
    OS << "<table" << (Id ? formatv(" id=\"{0}\"", Id).str() : "")
       << (Sortable ? " class=\"sortable\"" : "") << ">\n<thead><tr>";
    for (const Column &C : Cols) {
      std::string Class = std::string(C.Text ? "t" : "") + (Sortable && *C.Key ? " k" : "");
      OS << "<th";
      if (!Class.empty())
        OS << " class=\"" << llvm::StringRef(Class).trim() << "\"";
      if (*C.Key)
        OS << " data-key=\"" << C.Key << "\"";
      OS << ">" << C.Title << "</th>";
    }
    OS << "</tr></thead>\n<tbody>\n";
  }
  void tableEnd() { OS << "</tbody>\n</table>\n"; }
  void rowBegin(llvm::StringRef Class = "", llvm::StringRef Text = "") {
    OS << "<tr";
    if (!Class.empty())
      OS << " class=\"" << Class << "\"";
    if (!Text.empty())
      OS << " data-text=\"" << xmlText(Text, 400) << "\"";
    OS << ">";
  }
  void rowEnd() { OS << "</tr>\n"; }
  void text(llvm::StringRef S, const char *Class = "t") {
    OS << "<td class=\"" << Class << "\" title=\"" << xmlText(S, 400) << "\">" << xmlText(S)
       << "</td>";
  }
  /// A number shown as Shown, sorted by X.
  void number(double X, llvm::StringRef Shown, const char *Class = nullptr) {
    OS << "<td" << (Class ? formatv(" class=\"{0}\"", Class).str() : "") << " data-v=\""
       << (std::isfinite(X) ? exactNumber(X) : std::string("Infinity")) << "\">"
       << xmlText(Shown) << "</td>";
  }
  void raw(llvm::StringRef Markup) { OS << Markup; }
  void warnings(const Array &W) {
    if (W.empty())
      return;
    section("warnings", formatv("Warnings ({0})", W.size()).str());
    OS << "<ul class=\"warn\">\n";
    for (const Value &V : W)
      if (std::optional<llvm::StringRef> S = V.getAsString())
        OS << "<li>" << xmlText(*S, 2000) << "</li>\n";
    OS << "</ul>\n";
  }

private:
  llvm::raw_ostream &OS;
};

// analyze's page, part by part.

void summary(Page &P, const Object &D) {
  const Object &Dev = field(D, "device"), &Time = field(D, "time"), &Tot = field(D, "totals"),
               &Mem = field(D, "memory"), &Cov = field(D, "coverage"), &Opt = field(D, "options");
  bool Inference = str(Opt, "mode") == "inference";
  P.heading("ridge analyze: " + str(D, "model"),
            formatv("{0} on {1} ({2}; peak {3}, {4}/s, ridge point {5:F1} FLOP/B); dtype {6}, "
                    "{7}{8}; time model {9}",
                    Inference ? "inference (forward only)" : "training step", str(Dev, "name"),
                    str(Dev, "step_dtype"), siNumber(num(Dev, "peak_flops"), "FLOP/s"),
                    siNumber(num(Dev, "memory_bandwidth"), "B"), num(Dev, "ridge_point"),
                    str(Opt, "dtype"), Inference ? "" : str(Opt, "optimizer"),
                    Inference ? "" : ", recompute " + str(Opt, "recompute"),
                    str(Opt, "time_model"))
                .str());
  P.section("summary", "Summary");
  double Step = num(Time, "step_seconds");
  const Object &Cover = Cov;
  P.cards({{time(Step), Inference ? "forward latency" : "step time"},
           {siNumber(num(Tot, "step_flops"), "FLOP"), Inference ? "forward FLOPs" : "step FLOPs"},
           {pct(num(Time, "mfu")), "MFU"},
           {pct(num(Time, "memory_bound_share")), "of the time memory-bound"},
           {siNumber(num(D, "params")), "parameters"},
           {siNumber(num(Mem, "total"), "B"),
            std::string("memory") + (D.getBoolean("memory_fits").value_or(false)
                                         ? " (fits)"
                                         : " (DOES NOT FIT)")},
           {formatv("{0} of {1}", str(Cover, "modeled"), str(Cover, "nodes")).str(),
            "nodes modeled (" + pct(num(Cover, "flops_share")) + " of FLOPs)"}});
  if (!Inference)
    P.para(formatv("step {0} = forward {1} + backward {2} + recompute {3} + optimizer {4}",
                   time(Step), time(num(Time, "fwd_seconds")), time(num(Time, "bwd_seconds")),
                   time(num(Time, "recompute_seconds")), time(num(Time, "optimizer_seconds")))
               .str());
  for (const Value &U : arrayOf(Cov, "unmodeled")) {
    const Object &O = objectOf(&U);
    P.para("unmodeled: " + str(O, "op") + " x" + str(O, "count"), "warn");
  }
}

void memory(Page &P, const Object &D, double Capacity) {
  const Object &Mem = field(D, "memory");
  bool Inference = str(field(D, "options"), "mode") == "inference";
  std::vector<std::pair<std::string, double>> Parts;
  if (Inference)
    Parts = {{"weights", num(Mem, "weights")},
             {"activations (live peak)", num(Mem, "activations")},
             {"KV cache", num(Mem, "kv_cache")}};
  else
    Parts = {{"weights", num(Mem, "weights")},
             {"master weights", num(Mem, "master_weights")},
             {"gradients", num(Mem, "gradients")},
             {"optimizer state", num(Mem, "optimizer_state")},
             {"activations", num(Mem, "activations")}};
  double Total = num(Mem, "total");
  P.section("memory", "Memory");
  P.para(formatv("{0} in all, {1} of the device's {2}", siNumber(Total, "B"),
                 pct(Capacity > 0 ? Total / Capacity : 0), siNumber(Capacity, "B"))
             .str());
  P.bar(Parts, std::max(Total, 1.0));
  P.tableBegin("memory-table", {{"part", "", true}, {"bytes", ""}, {"share", ""}}, false);
  for (const auto &[Name, Bytes] : Parts) {
    P.rowBegin();
    P.text(Name);
    P.number(Bytes, siNumber(Bytes, "B"));
    P.number(Total > 0 ? Bytes / Total : 0, pct(Total > 0 ? Bytes / Total : 0));
    P.rowEnd();
  }
  P.tableEnd();
}

void fusion(Page &P, const Object &D) {
  const Object &F = field(D, "fusion");
  P.section("fusion", "Fusion what-if");
  if (num(F, "fused_ops") == 0) {
    P.para("no element-wise or normalization op has a producer to fuse into");
    return;
  }
  double Before = num(F, "step_seconds_before"), After = num(F, "step_seconds_after");
  P.para(formatv("{0} element-wise/normalization ops fused into {1} producers, as compilers "
                 "do: bytes {2} -> {3}, step time {4} -> {5} ({6})",
                 str(F, "fused_ops"), str(F, "groups"), siNumber(num(F, "bytes_before"), "B"),
                 siNumber(num(F, "bytes_after"), "B"), time(Before), time(After),
                 Before > 0 ? signedPercent(100 * (After / Before - 1)) : std::string("-"))
             .str());
}

void opTypes(Page &P, const Object &D) {
  std::map<std::string, double> Seconds;
  double Step = num(field(D, "time"), "step_seconds");
  for (const Value &V : arrayOf(D, "nodes")) {
    const Object &N = objectOf(&V);
    Seconds[str(N, "op")] += jsonNodeSeconds(N);
  }
  P.section("ops", "By op type");
  P.tableBegin("op-table", {{"op", "op", true},
                            {"nodes", "count"},
                            {"fwd FLOP", "fwd"},
                            {"bwd FLOP", "bwd"},
                            {"bytes", "bytes"},
                            {"time", "seconds"},
                            {"share", "share"}});
  // Slowest first.
  std::vector<const Object *> Rows;
  for (const Value &V : arrayOf(D, "by_op_type"))
    Rows.push_back(&objectOf(&V));
  std::stable_sort(Rows.begin(), Rows.end(), [&](const Object *A, const Object *B) {
    return Seconds[str(*A, "op")] > Seconds[str(*B, "op")];
  });
  for (const Object *Row : Rows) {
    const Object &O = *Row;
    double S = Seconds[str(O, "op")];
    double Bytes = num(field(O, "fwd"), "bytes") + num(field(O, "bwd"), "bytes");
    P.rowBegin();
    P.text(str(O, "op"));
    P.number(num(O, "count"), str(O, "count"));
    P.number(num(field(O, "fwd"), "flops"), siNumber(num(field(O, "fwd"), "flops")));
    P.number(num(field(O, "bwd"), "flops"), siNumber(num(field(O, "bwd"), "flops")));
    P.number(Bytes, siNumber(Bytes, "B"));
    P.number(S, time(S));
    P.number(Step > 0 ? S / Step : 0, pct(Step > 0 ? S / Step : 0));
    P.rowEnd();
  }
  P.tableEnd();
}

void nodes(Page &P, const Object &D) {
  const Array &Nodes = arrayOf(D, "nodes");
  double Step = num(field(D, "time"), "step_seconds");
  P.section("nodes", formatv("Nodes ({0})", Nodes.size()).str());
  P.raw("<div class=\"controls\"><input type=\"search\" id=\"filter\" placeholder=\"filter by "
        "name, op or bound\"> <label><input type=\"checkbox\" id=\"hidefree\"> hide nodes "
        "that cost nothing</label> <span id=\"shown\"></span></div>\n<div class=\"scroll\">\n");
  P.tableBegin("node-table", {{"#", "order"},
                              {"node", "name", true},
                              {"op", "op", true},
                              {"output", "", true},
                              {"fwd FLOP", "fwd_flops"},
                              {"bwd FLOP", "bwd_flops"},
                              {"MACs", "macs"},
                              {"bytes", "bytes"},
                              {"FLOP/B", "intensity"},
                              {"time", "seconds"},
                              {"share", "share"},
                              {"bound", "bound", true},
                              {"limit", "limit", true},
                              {"note", "", true}});
  // Slowest first, as the text report; ties in graph order.
  std::vector<std::pair<double, size_t>> Order;
  for (size_t I = 0; I < Nodes.size(); ++I) {
    const Object &N = objectOf(&Nodes[I]);
    Order.push_back({jsonNodeSeconds(N), I});
  }
  std::stable_sort(Order.begin(), Order.end(),
                   [](const auto &A, const auto &B) { return A.first > B.first; });
  for (const auto &[Seconds, I] : Order) {
    const Object &N = objectOf(&Nodes[I]);
    const Object &Fwd = field(N, "fwd_time");
    bool Modeled = N.getBoolean("modeled").value_or(false);
    double K = num(N, "multiplier");
    double FwdFlops = num(N, "fwd_flops") * K, BwdFlops = num(N, "bwd_flops") * K;
    double Bytes = (num(N, "fwd_bytes") + num(N, "bwd_bytes")) * K;
    bool Free = Modeled && FwdFlops == 0 && BwdFlops == 0 && Bytes == 0;
    std::string Bound = Modeled ? str(Fwd, "bound") : "unmodeled";
    std::string Outputs;
    for (const Value &O : arrayOf(N, "outputs"))
      if (std::optional<llvm::StringRef> S = O.getAsString())
        Outputs += (Outputs.empty() ? "" : " ") + S->str();
    std::string Filter =
        llvm::StringRef(str(N, "name") + " " + str(N, "op") + " " + Bound).lower();
    P.rowBegin(Free ? "free" : Bound == "memory" ? "memory" : "", Filter);
    P.number(double(I), std::to_string(I));
    P.text(str(N, "name"));
    P.text(str(N, "op"));
    P.text(Outputs);
    if (Modeled) {
      double Intensity = num(N, "fwd_bytes") > 0 ? num(N, "fwd_flops") / num(N, "fwd_bytes")
                                                 : INFINITY;
      P.number(FwdFlops, siNumber(FwdFlops));
      P.number(BwdFlops, N.getBoolean("needs_backward").value_or(false) ? siNumber(BwdFlops)
                                                                        : "-");
      P.number(num(N, "macs") * K, siNumber(num(N, "macs") * K));
      P.number(Bytes, siNumber(Bytes, "B"));
      P.number(Intensity, std::isfinite(Intensity) ? formatv("{0:F1}", Intensity).str() : "-");
      P.number(Seconds, time(Seconds));
      P.number(Step > 0 ? Seconds / Step : 0, pct(Step > 0 ? Seconds / Step : 0));
      P.text(Bound, "t b");
      P.text(str(Fwd, "limit"));
      P.text(K != 1 ? "x" + exactNumber(K) + " (loop)" : "");
    } else {
      for (int C = 0; C < 7; ++C)
        P.number(0, "-");
      P.text(Bound, "t b");
      P.text("");
      P.text(str(N, "unmodeled_reason"));
    }
    P.rowEnd();
  }
  P.tableEnd();
  P.raw("</div>\n");
}

// plan's page.

std::string configText(const Object &C) {
  std::string S = formatv("DP={0} TP={1} PP={2}", str(C, "dp"), str(C, "tp"), str(C, "pp")).str();
  if (num(C, "interleave") > 1)
    S += " v=" + str(C, "interleave");
  S += formatv(", micro-batch {0} x {1}", str(C, "micro_batch_size"), str(C, "micro_batches"))
           .str();
  if (str(C, "recompute") != "none")
    S += ", recompute " + str(C, "recompute");
  if (num(C, "zero") > 0)
    S += ", ZeRO-" + str(C, "zero");
  if (C.getBoolean("sequence_parallel").value_or(false))
    S += ", sequence parallel";
  return S;
}

void breakdown(Page &P, const Object &W, double Capacity) {
  std::vector<std::pair<std::string, double>> Parts = {
      {"compute", num(W, "compute_seconds")},
      {"recompute", num(W, "recompute_seconds")},
      {"tensor-parallel collectives", num(W, "tp_seconds")},
      {"pipeline bubble", num(W, "bubble_seconds")},
      {"pipeline sends", num(W, "p2p_seconds")},
      {"data-parallel reduce (exposed)", num(W, "dp_exposed_seconds")},
      {"overlap slowdown", num(W, "overlap_slowdown_seconds")},
      {"tied-weight sync", num(W, "tied_sync_seconds")},
      {"optimizer", num(W, "optimizer_seconds")},
      {"input feed (exposed)", num(W, "feed_exposed_seconds")}};
  double Step = num(W, "step_seconds");
  P.para("step " + time(Step) + " per device; the parts as the planner adds them:");
  P.bar(Parts, Step);
  P.tableBegin("breakdown-table", {{"part", "", true}, {"time", ""}, {"share", ""}}, false);
  for (const auto &[Name, S] : Parts) {
    P.rowBegin();
    P.text(Name);
    P.number(S, time(S));
    P.number(Step > 0 ? S / Step : 0, pct(Step > 0 ? S / Step : 0));
    P.rowEnd();
  }
  P.tableEnd();
  double Mem = num(W, "memory_bytes");
  P.para(formatv("memory per device {0} of {1} ({2}): parameters, gradients and optimizer "
                 "state {3}, activations {4}, reserve (runtime, collective buffers, "
                 "fragmentation) {5}",
                 siNumber(Mem, "B"), siNumber(Capacity, "B"),
                 pct(Capacity > 0 ? Mem / Capacity : 0), siNumber(num(W, "param_bytes"), "B"),
                 siNumber(num(W, "activation_bytes"), "B"),
                 siNumber(num(W, "reserve_bytes"), "B"))
             .str());
}

void configTable(Page &P, const char *Id, const Array &Rows, bool Scaling) {
  std::vector<Page::Column> Cols;
  if (Scaling)
    Cols.push_back({"devices", "devices"});
  else
    Cols.push_back({"rank", "rank"});
  for (Page::Column C : std::initializer_list<Page::Column>{
           {"step", "step"}, {"TFLOP/s/dev", "tflops"}, {"MFU", "mfu"}, {"memory", "memory"},
           {"DP", "dp"}, {"TP", "tp"}, {"PP", "pp"}, {"micro-batch", "mb"}, {"micro-batches", "m"},
           {"recompute", "recompute", true}, {"ZeRO", "zero"}, {"bubble", "bubble"},
           {"configuration", "", true}})
    Cols.push_back(C);
  if (Scaling)
    Cols.insert(Cols.begin() + 2, Page::Column{"speedup", "speedup"});
  P.tableBegin(Id, Cols);
  size_t Rank = 0;
  for (const Value &V : Rows) {
    const Object &C = objectOf(&V);
    P.rowBegin();
    if (Scaling)
      P.number(num(C, "devices"), str(C, "devices"));
    else {
      ++Rank;
      P.number(double(Rank), std::to_string(Rank));
    }
    P.number(num(C, "step_seconds"), time(num(C, "step_seconds")));
    if (Scaling)
      P.number(num(C, "speedup"), formatv("{0:F2}x", num(C, "speedup")).str());
    P.number(num(C, "tflops_per_device"), formatv("{0:F1}", num(C, "tflops_per_device")).str());
    P.number(num(C, "mfu"), pct(num(C, "mfu")));
    P.number(num(C, "memory_bytes"), siNumber(num(C, "memory_bytes"), "B"));
    for (const char *K : {"dp", "tp", "pp", "micro_batch_size", "micro_batches"})
      P.number(num(C, K), str(C, K));
    P.text(str(C, "recompute"));
    P.number(num(C, "zero"), str(C, "zero"));
    P.number(num(C, "bubble_fraction"), pct(num(C, "bubble_fraction")));
    P.text(configText(C));
    P.rowEnd();
  }
  P.tableEnd();
}

} // namespace

llvm::Error ridge::checkReportPath(llvm::StringRef Path) {
  if (Path.ends_with_insensitive(".html"))
    return llvm::Error::success();
  return usageError("--report '" + Path + "': expected an .html file");
}

void ridge::renderAnalyzeHtml(llvm::raw_ostream &OS, const Value &Doc,
                              llvm::StringRef RooflineSvg, double Capacity) {
  const Object &D = objectOf(&Doc);
  Page P(OS);
  P.begin("ridge analyze: " + str(D, "model"));
  summary(P, D);
  memory(P, D, Capacity);
  fusion(P, D);
  P.section("roofline", "Roofline");
  P.raw(RooflineSvg);
  opTypes(P, D);
  nodes(P, D);
  P.warnings(arrayOf(D, "warnings"));
  P.end();
}

void ridge::renderPlanHtml(llvm::raw_ostream &OS, const Value &Doc, llvm::StringRef Model,
                           llvm::StringRef ScalingSvg, double Capacity) {
  const Object &D = objectOf(&Doc);
  Page P(OS);
  P.begin("ridge plan: " + Model.str());
  P.heading("ridge plan: " + Model.str(),
            formatv("{0} x {1}, global batch {2}, {3}, {4} parameters; {5} configurations "
                    "searched",
                    str(D, "devices"), str(D, "device"), str(D, "global_batch"), str(D, "dtype"),
                    withCommas(num(D, "params")), str(D, "evaluated"))
                .str());
  const Array &Top = arrayOf(D, "top");
  const Value *Fixed = D.get("fixed");
  const Object &Shown = objectOf(Fixed ? Fixed : Top.empty() ? nullptr : &Top[0]);
  P.section("recommended", Fixed ? "The configuration asked for" : "Recommended");
  if (Shown.empty()) {
    P.para("no configuration fits device memory", "warn");
  } else {
    const Object &One = field(D, "single_device");
    P.cards({{configText(Shown), "configuration"},
             {time(num(Shown, "step_seconds")), "step time"},
             {has(D, "speedup") ? formatv("{0:F2}x", num(D, "speedup")).str() : "-",
              "speedup vs one device (" + time(num(One, "step_seconds")) + ")"},
             {pct(num(D, "efficiency")), "efficiency"},
             {pct(num(Shown, "mfu")), "MFU"},
             {has(D, "amdahl_bound") ? formatv("{0:F1}x", num(D, "amdahl_bound")).str() : "-",
              "Amdahl bound (serial fraction " +
                  (has(D, "serial_fraction") ? formatv("{0:F4}", num(D, "serial_fraction")).str()
                                             : std::string("-")) +
                  ")"}});
    P.section("breakdown", "Its step and memory");
    breakdown(P, Shown, Capacity);
  }
  P.section("ranking", formatv("Ranked configurations (top {0})", Top.size()).str());
  configTable(P, "config-table", Top, false);
  const Array &Scaling = arrayOf(D, "scaling");
  if (!Scaling.empty()) {
    P.section("scaling", "Scaling (same global batch)");
    P.raw(ScalingSvg);
    configTable(P, "scaling-table", Scaling, true);
  }
  const Array &Rejected = arrayOf(D, "rejected");
  if (!Rejected.empty()) {
    P.section("rejected", "Rejected configurations");
    P.tableBegin("rejected-table", {{"reason", "", true}, {"count", ""}}, false);
    for (const Value &V : Rejected) {
      const Object &O = objectOf(&V);
      P.rowBegin();
      P.text(str(O, "reason"));
      P.number(num(O, "count"), str(O, "count"));
      P.rowEnd();
    }
    P.tableEnd();
  }
  P.warnings(arrayOf(D, "warnings"));
  P.end();
}

llvm::Error ridge::writeTextFile(llvm::StringRef Path, llvm::StringRef Text) {
  std::error_code EC;
  llvm::raw_fd_ostream Out(Path, EC, llvm::sys::fs::OF_None);
  if (EC)
    return fileError(Path, EC.message());
  Out << Text;
  Out.close();
  if (Out.has_error()) {
    std::string Msg = Out.error().message();
    Out.clear_error();
    return fileError(Path, Msg);
  }
  return llvm::Error::success();
}
