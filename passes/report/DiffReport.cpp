//===- DiffReport.cpp - `ridge diff OLD NEW` ------------------------------===//
//
// Reads two analyze documents, never the models: every number is the one
// `ridge analyze --format json` prints for each, so a diff is exactly the
// difference of the two reports.
//
//===----------------------------------------------------------------------===//
#include "passes/report/DiffReport.h"
#include "passes/report/JsonWriter.h"
#include "analyzer/Format.h"
#include "passes/report/AnalyzeJson.h"
#include "passes/report/Budget.h"
#include "llvm/Support/FormatAdapters.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <cmath>
#include <map>

using namespace ridge;
using llvm::formatv;
namespace json = llvm::json;

namespace {

/// The totals a diff reports: (label, path in the analyze document, unit).
struct TotalKey {
  const char *Label, *Path, *Unit;
};
const TotalKey Totals[] = {
    {"parameters", "params", ""},
    {"forward FLOPs", "totals.fwd.flops", "FLOP"},
    {"backward FLOPs", "totals.bwd.flops", "FLOP"},
    {"step FLOPs", "totals.step_flops", "FLOP"},
    {"forward bytes", "totals.fwd.bytes", "B"},
    {"backward bytes", "totals.bwd.bytes", "B"},
    {"step time", "time.step_seconds", "s"},
    {"memory", "memory.total", "B"},
    {"weights", "memory.weights", "B"},
    {"activations", "memory.activations", "B"},
};

/// Per node or op type: what the diff compares.
struct Amounts {
  double Flops = 0, Bytes = 0, Seconds = 0;
  size_t Count = 0;
  std::string Op;
  bool operator==(const Amounts &O) const {
    return Flops == O.Flops && Bytes == O.Bytes && Seconds == O.Seconds && Op == O.Op;
  }
};

/// Node name -> amounts (multiplier applied), and op type -> amounts.
void collect(const json::Value &Doc, std::map<std::string, Amounts> &Nodes,
             std::map<std::string, Amounts> &Ops, std::vector<std::string> &Order) {
  const json::Object *D = Doc.getAsObject();
  const json::Array *Arr = D ? D->getArray("nodes") : nullptr;
  if (!Arr)
    return;
  for (const json::Value &V : *Arr) {
    const json::Object *N = V.getAsObject();
    if (!N)
      continue;
    std::string Name = N->getString("name").value_or("").str();
    std::string Domain = N->getString("domain").value_or("").str();
    std::string Op = N->getString("op").value_or("").str();
    if (!Domain.empty() && Domain != "ai.onnx")
      Op = Domain + "." + Op;
    double K = N->getNumber("multiplier").value_or(1);
    Amounts A;
    A.Op = Op;
    A.Count = 1;
    A.Flops = (jsonNumber(*N, "fwd_flops") + jsonNumber(*N, "bwd_flops")) * K;
    A.Bytes = (jsonNumber(*N, "fwd_bytes") + jsonNumber(*N, "bwd_bytes")) * K;
    A.Seconds = jsonNodeSeconds(*N);
    if (Nodes.emplace(Name, A).second)
      Order.push_back(Name);
    Amounts &T = Ops[Op];
    T.Op = Op;
    ++T.Count;
    T.Flops += A.Flops;
    T.Bytes += A.Bytes;
    T.Seconds += A.Seconds;
  }
}

std::string pct(double Old, double New) {
  if (Old == New)
    return "0%";
  if (Old == 0)
    return "new";
  return signedPercent((New - Old) / std::fabs(Old) * 100);
}

json::Value pctJson(double Old, double New) {
  if (Old == 0)
    return Old == New ? json::Value(0.0) : json::Value(nullptr);
  return (New - Old) / std::fabs(Old) * 100;
}

std::string amount(double X, const char *Unit) {
  if (llvm::StringRef(Unit) == "s") {
    double A = std::fabs(X);
    return A >= 1 ? formatv("{0:F3} s", X).str()
           : A >= 1e-3 ? formatv("{0:F3} ms", X * 1e3).str()
                       : formatv("{0:F1} us", X * 1e6).str();
  }
  return siNumber(X, Unit);
}

std::string signedAmount(double X, const char *Unit) {
  return (X > 0 ? "+" : "") + amount(X, Unit);
}

json::Object amountsJson(const Amounts &A) {
  return json::Object{{"op", A.Op}, {"flops", A.Flops}, {"bytes", A.Bytes},
                      {"seconds", A.Seconds}};
}

} // namespace

void ridge::printDiff(const json::Value &Old, const json::Value &New, const Config &Cfg,
                      llvm::raw_ostream &OS) {
  std::map<std::string, Amounts> OldNodes, NewNodes, OldOps, NewOps;
  std::vector<std::string> OldOrder, NewOrder;
  collect(Old, OldNodes, OldOps, OldOrder);
  collect(New, NewNodes, NewOps, NewOrder);
  std::vector<std::string> Added, Removed, Changed;
  for (const std::string &N : NewOrder) {
    auto It = OldNodes.find(N);
    if (It == OldNodes.end())
      Added.push_back(N);
    else if (!(It->second == NewNodes[N]))
      Changed.push_back(N);
  }
  for (const std::string &N : OldOrder)
    if (!NewNodes.count(N))
      Removed.push_back(N);
  // Changed nodes, largest change in time first.
  std::stable_sort(Changed.begin(), Changed.end(), [&](const auto &A, const auto &B) {
    return std::fabs(NewNodes[A].Seconds - OldNodes[A].Seconds) >
           std::fabs(NewNodes[B].Seconds - OldNodes[B].Seconds);
  });
  std::map<std::string, bool> OpNames;
  for (const auto &[K, V] : OldOps)
    OpNames[K] = true;
  for (const auto &[K, V] : NewOps)
    OpNames[K] = true;
  auto Path = [](const json::Value &D) {
    const json::Object *O = D.getAsObject();
    return O ? O->getString("model").value_or("").str() : std::string();
  };

  if (Cfg.Format == OutputFormat::Json) {
    json::Array TotalsOut, OpsOut, ChangedOut;
    for (const TotalKey &T : Totals) {
      std::optional<double> A = budgetValue(Old, T.Path), B = budgetValue(New, T.Path);
      if (!A || !B)
        continue;
      TotalsOut.push_back(json::Object{{"total", T.Path},
                                       {"old", *A},
                                       {"new", *B},
                                       {"delta", *B - *A},
                                       {"percent", pctJson(*A, *B)}});
    }
    for (const auto &[Op, Unused] : OpNames) {
      Amounts A = OldOps.count(Op) ? OldOps[Op] : Amounts(),
              B = NewOps.count(Op) ? NewOps[Op] : Amounts();
      OpsOut.push_back(json::Object{{"op", Op},
                                    {"old_count", int64_t(A.Count)},
                                    {"new_count", int64_t(B.Count)},
                                    {"flops_delta", B.Flops - A.Flops},
                                    {"bytes_delta", B.Bytes - A.Bytes},
                                    {"seconds_delta", B.Seconds - A.Seconds}});
    }
    for (const std::string &N : Changed)
      ChangedOut.push_back(json::Object{{"name", N},
                                        {"old", amountsJson(OldNodes[N])},
                                        {"new", amountsJson(NewNodes[N])}});
    json::Array AddedOut, RemovedOut;
    for (const std::string &N : Added)
      AddedOut.push_back(json::Object{{"name", N}, {"new", amountsJson(NewNodes[N])}});
    for (const std::string &N : Removed)
      RemovedOut.push_back(json::Object{{"name", N}, {"old", amountsJson(OldNodes[N])}});
    json::Object Doc{{"schema", "ridge.diff/1"},
                     {"old", Path(Old)},
                     {"new", Path(New)},
                     {"totals", std::move(TotalsOut)},
                     {"by_op_type", std::move(OpsOut)},
                     {"nodes", json::Object{{"changed", std::move(ChangedOut)},
                                            {"added", std::move(AddedOut)},
                                            {"removed", std::move(RemovedOut)}}}};
    ridge::printJson(OS, llvm::json::Value(std::move(Doc)));
    return;
  }

  OS << "old: " << Path(Old) << "\nnew: " << Path(New) << "\n\ntotals:\n";
  OS << formatv("  {0,-15} {1,12} {2,12} {3,12} {4,8}\n", "", "old", "new", "change", "");
  for (const TotalKey &T : Totals) {
    std::optional<double> A = budgetValue(Old, T.Path), B = budgetValue(New, T.Path);
    if (!A || !B)
      continue;
    OS << formatv("  {0,-15} {1,12} {2,12} {3,12} {4,8}\n", T.Label, amount(*A, T.Unit),
                  amount(*B, T.Unit), *A == *B ? std::string("0") : signedAmount(*B - *A, T.Unit),
                  pct(*A, *B));
  }
  OS << "\nper op type (forward + backward):\n";
  size_t W = 8;
  for (const auto &[Op, Unused] : OpNames)
    W = std::max(W, Op.size());
  OS << formatv("  {0} {1,9} {2,12} {3,12} {4,12}\n",
                llvm::fmt_align("op", llvm::AlignStyle::Left, W), "nodes", "FLOPs", "bytes",
                "time");
  for (const auto &[Op, Unused] : OpNames) {
    Amounts A = OldOps.count(Op) ? OldOps[Op] : Amounts(),
            B = NewOps.count(Op) ? NewOps[Op] : Amounts();
    if (A.Count == B.Count && A.Flops == B.Flops && A.Bytes == B.Bytes &&
        A.Seconds == B.Seconds)
      continue;
    OS << formatv("  {0} {1,9} {2,12} {3,12} {4,12}\n",
                  llvm::fmt_align(Op, llvm::AlignStyle::Left, W),
                  formatv("{0}->{1}", A.Count, B.Count).str(),
                  signedAmount(B.Flops - A.Flops, "FLOP"), signedAmount(B.Bytes - A.Bytes, "B"),
                  signedAmount(B.Seconds - A.Seconds, "s"));
  }
  OS << formatv("\nnodes: {0} changed, {1} added, {2} removed\n", Changed.size(), Added.size(),
                Removed.size());
  size_t Limit = Cfg.Top ? Cfg.Top : SIZE_MAX, Shown = 0;
  for (const std::string &N : Changed) {
    if (Shown++ >= Limit)
      break;
    const Amounts &A = OldNodes[N], &B = NewNodes[N];
    OS << formatv("  changed {0} ({1}): FLOPs {2} -> {3}, bytes {4} -> {5}, time {6} -> {7}\n",
                  N, B.Op, siNumber(A.Flops), siNumber(B.Flops), siNumber(A.Bytes, "B"),
                  siNumber(B.Bytes, "B"), amount(A.Seconds, "s"), amount(B.Seconds, "s"));
  }
  // Nodes only one model has: what they cost there.
  auto OneSide = [&](const char *Verb, const std::vector<std::string> &Names,
                     std::map<std::string, Amounts> &In) {
    for (const std::string &N : Names) {
      if (Shown++ >= Limit)
        return;
      const Amounts &A = In[N];
      OS << formatv("  {0} {1} ({2}): {3}, {4}, {5}\n", Verb, N, A.Op,
                    siNumber(A.Flops, "FLOP"), siNumber(A.Bytes, "B"), amount(A.Seconds, "s"));
    }
  };
  OneSide("added", Added, NewNodes);
  OneSide("removed", Removed, OldNodes);
  if (Shown > Limit)
    OS << formatv("  ({0} more; --top 0 shows all)\n",
                  Changed.size() + Added.size() + Removed.size() - Limit);
}
