//===- AnalyzeReport.cpp - "report": what `ridge analyze` prints ----------===//
//
// Per-node rows, per-op-type totals, the training step (forward, backward,
// recomputation, optimizer), the memory footprint and the coverage, as a
// text table, JSON (schema "ridge.analyze/1", README documents it) or CSV.
//
//===----------------------------------------------------------------------===//
#include "passes/report/AnalyzeReport.h"
#include "passes/report/FormulaReport.h"
#include "passes/report/AnalyzeJson.h"
#include "passes/report/NodeJson.h"
#include "passes/report/JsonWriter.h"
#include "passes/report/Budget.h"
#include "passes/report/ModelAnnotations.h"
#include "passes/report/HtmlReport.h"
#include "passes/report/OpTypeTotals.h"
#include "passes/cost/CostModel.h"
#include "analyzer/Format.h"
#include "passes/roofline/Fusion.h"
#include "passes/report/GraphSummary.h"
#include "passes/roofline/Roofline.h"
#include "passes/report/RooflineChart.h"
#include "passes/cost/TrainingStep.h"
#include "passes/inference/Inference.h"
#include "llvm/Support/FormatAdapters.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include <algorithm>
#include <set>
#include <cmath>
#include <map>

using namespace ridge;
using llvm::formatv;

namespace {

/// The batch an inference pass runs at: dim 0 of the first graph input,
/// when known (1 otherwise: samples/s is then per pass).
double boundBatch(const Model &M) {
  for (const Value *V : M.Main->Inputs)
    if (!V->isInitializer())
      return V->Shp && V->Shp->rank() > 0 && V->Shp->Dims[0].isKnown()
                 ? double(V->Shp->Dims[0].extent())
                 : 1.0;
  return 1.0;
}

std::string outputTypes(const Node &N) {
  std::string S;
  for (const Value *V : N.Outputs)
    if (V)
      S += (S.empty() ? "" : " ") + V->typeStr();
  return S;
}

std::vector<OpTypeTotal<double>> byOpType(const CostResult &C) {
  std::vector<OpTypeTotal<double>> V =
      sumByOpType<double>(C, [](const NodeCost &NC, PhaseCost &Fwd, PhaseCost &Bwd) {
        Fwd += NC.Fwd * NC.multiplier();
        Bwd += NC.Bwd * NC.multiplier();
      });
  std::stable_sort(V.begin(), V.end(), [](const auto &A, const auto &B) {
    return A.Fwd.Flops + A.Bwd.Flops > B.Fwd.Flops + B.Bwd.Flops;
  });
  return V;
}

/// Rows in the order --sort asks for, cut to --top.
double nodeSeconds(const CostResult &C, const RooflineResult &RL, const NodeCost *N) {
  return RL.nodeSeconds(C, *N);
}

/// The first Limit (0: all) of the nodes Keep accepts, by Key, largest
/// first, ties in graph order: what a stable sort and a cut give, each key
/// computed once. With a Limit (a text report prints 50 rows) a bounded heap
/// holds only the Limit best seen so far: O(Limit) memory and O(n log Limit)
/// comparisons, not a copy of every node's key (16 MB on a 1M-node graph).
template <typename KeepFn, typename KeyFn>
std::vector<const NodeCost *> topByKey(const std::vector<NodeCost> &Nodes, KeepFn Keep,
                                       KeyFn Key, size_t Limit) {
  using Entry = std::pair<double, uint32_t>;
  // A before B in the report: larger key, then earlier in the graph.
  auto Before = [](const Entry &A, const Entry &B) {
    return A.first > B.first || (A.first == B.first && A.second < B.second);
  };
  std::vector<Entry> K;
  if (Limit)
    K.reserve(std::min(Limit, Nodes.size()) + 1);
  for (size_t I = 0; I < Nodes.size(); ++I) {
    if (!Keep(Nodes[I]))
      continue;
    double X = Key(Nodes[I]);
    Entry E{std::isnan(X) ? -HUGE_VAL : X, uint32_t(I)};
    if (!Limit) {
      K.push_back(E);
      continue;
    }
    // K is a heap whose front is the last of the Limit best so far.
    if (K.size() < Limit) {
      K.push_back(E);
      std::push_heap(K.begin(), K.end(), Before);
    } else if (Before(E, K.front())) {
      std::pop_heap(K.begin(), K.end(), Before);
      K.back() = E;
      std::push_heap(K.begin(), K.end(), Before);
    }
  }
  std::sort(K.begin(), K.end(), Before);
  std::vector<const NodeCost *> Out;
  Out.reserve(K.size());
  for (const Entry &E : K)
    Out.push_back(&Nodes[E.second]);
  return Out;
}

/// Whether Bytes of tensors fit one device with its runtime reserve and
/// fragmentation (Device::withReserve; one device: no collective buffers).
bool fitsDevice(double Bytes, const Device &D) {
  return D.withReserve(Bytes, /*Communicates=*/false) <= D.MemCapacity;
}

std::string fitText(double Bytes, const Device &D) {
  return formatv(" ({0} {1}: {2} less a {3} runtime reserve and {4:P0} fragmentation)",
                 fitsDevice(Bytes, D) ? "fits" : "DOES NOT FIT", D.Name,
                 siNumber(D.MemCapacity, "B"), siNumber(D.MemReserve, "B"), D.MemFragmentation)
      .str();
}

/// A modeled node that moves and computes nothing (a Constant, a view, a
/// Shape): the text table folds these into one line.
bool costsNothing(const NodeCost &NC) {
  return NC.Modeled && NC.Fwd.Flops == 0 && NC.Fwd.Bytes == 0 && NC.Fwd.Transcendentals == 0 &&
         NC.Bwd.Flops == 0 && NC.Bwd.Bytes == 0 && NC.Bwd.Transcendentals == 0;
}

/// The rows in Cfg.Sort's order (the first Cfg.Top in text output), all or
/// (FoldFree) those that cost something.
std::vector<const NodeCost *> sortedRows(const CostResult &C, const RooflineResult &RL,
                                         const Config &Cfg, bool FoldFree = false) {
  auto Keep = [FoldFree](const NodeCost &NC) { return !FoldFree || !costsNothing(NC); };
  size_t Limit = Cfg.Top && Cfg.Format == OutputFormat::Text ? Cfg.Top : 0;
  if (Cfg.Sort == "bytes")
    return topByKey(
        C.Nodes, Keep,
        [](const NodeCost &N) {
          return (N.Fwd.Bytes + N.Bwd.Bytes) * N.multiplier();
        },
        Limit);
  if (Cfg.Sort == "time")
    return topByKey(C.Nodes, Keep, [&](const NodeCost &N) { return nodeSeconds(C, RL, &N); },
                    Limit);
  if (Cfg.Sort != "order" && Cfg.Sort != "name")
    return topByKey(
        C.Nodes, Keep,
        [](const NodeCost &N) {
          return (N.Fwd.Flops + N.Bwd.Flops) * N.multiplier();
        },
        Limit);
  // Graph order stops at the Limit; name order sorts every kept row.
  std::vector<const NodeCost *> Rows;
  for (const NodeCost &NC : C.Nodes) {
    if (Cfg.Sort == "order" && Limit && Rows.size() == Limit)
      break;
    if (Keep(NC))
      Rows.push_back(&NC);
  }
  if (Cfg.Sort == "name") {
    std::stable_sort(Rows.begin(), Rows.end(),
                     [](auto *A, auto *B) { return A->N->Name < B->N->Name; });
    if (Limit && Rows.size() > Limit)
      Rows.resize(Limit);
  }
  return Rows;
}


double flopCoverage(const CostResult &C) {
  double Modeled = C.Fwd.Flops;
  double Denominator = Modeled + C.UnmodeledFlopsEstimate;
  return Denominator > 0 ? Modeled / Denominator : 1.0;
}

llvm::json::Object phaseJson(const PhaseCost &P) {
  return llvm::json::Object{{"flops", countValue(P.Flops)},
                            {"macs", countValue(P.Macs)},
                            {"transcendentals", countValue(P.Transcendentals)},
                            {"bytes", countValue(P.Bytes)}};
}

/// A phase's time into S (a sink of JsonWriter.h); with the kernel model
/// also its limit and its kernels, recomputed here (the analysis keeps only
/// their sum).
template <class Sink>
void phaseTimeMembers(Sink &S, const PhaseTime &P, const NodeCost &NC, bool Bwd, DType T,
                      const Config &Cfg, GemmMemo &Memo) {
  const PhaseCost &Counts = Bwd ? NC.Bwd : NC.Fwd;
  double I = intensity(Counts);
  S.member("attainable_flops", attainable(Counts, P));
  S.member("bound", boundName(P.B));
  S.member("intensity", std::isfinite(I) ? llvm::json::Value(I) : nullptr);
  if (Cfg.Dev && hasKernelModel(*Cfg.Dev, Cfg)) {
    auto Ks = nodeKernels(NC, Bwd, *Cfg.Dev, T, Cfg, &Memo);
    S.array("kernels", [&](auto &E) {
      for (const KernelTime &K : Ks.Kernels)
        E.object([&](auto &KS) {
          KS.member("launches", K.Count);
          KS.member("limit", limitName(K.Why));
          KS.member("name", K.Name);
          KS.member("seconds", K.Seconds);
        });
    });
    S.member("limit", limitName(P.Why));
  }
  S.member("seconds", P.Seconds);
}

llvm::json::Object inferenceMemoryJson(const InferenceMemoryResult &I) {
  return llvm::json::Object{
      {"weights", I.WeightBytes},
      {"weight_tensors", int64_t(I.WeightTensors)},
      {"activations", I.ActivationPeakBytes},
      {"activation_peak_node",
       I.PeakNode ? llvm::json::Value(I.PeakNode->Name) : llvm::json::Value(nullptr)},
      {"activations_of_unknown_size", int64_t(I.UnknownSize)},
      {"kv_cache", I.KVCacheKnown ? llvm::json::Value(I.KVCacheBytes) : nullptr},
      {"kv_cache_tensors", int64_t(I.KV.size())},
      {"total", I.totalBytes()}};
}

/// One entry of the `nodes` array into S (a sink of JsonWriter.h).
template <class Sink>
void nodeMembers(Sink &S, const NodeCost &NC, const CostResult &C, const RooflineResult &RL,
                 const Config &Cfg, GemmMemo &Memo) {
  if (!NC.Modeled)
    return nodeEntry(S, NC, nullptr, [](Sink &, bool) {});
  NodeCountsJson N{countValue(NC.Fwd.Flops),  countValue(NC.Fwd.Macs),
                   countValue(NC.Fwd.Transcendentals),
                   countValue(NC.Fwd.Bytes),  countValue(NC.Bwd.Flops),
                   countValue(NC.Bwd.Macs),   countValue(NC.Bwd.Transcendentals),
                   countValue(NC.Bwd.Bytes),  countValue(nodeSavedBytes(NC, C, floatBytes(Cfg)))};
  DType T = RL.Nodes[&NC - C.Nodes.data()].type();
  nodeEntry(S, NC, &N, [&](Sink &PS, bool Bwd) {
    if (Bwd && !NC.NeedsBackward)
      return;
    PS.object(Bwd ? "bwd_time" : "fwd_time", [&](Sink &TS) {
      phaseTimeMembers(TS, RL.terms(C, NC, Bwd, Cfg), NC, Bwd, T, Cfg, Memo);
    });
  });
}

llvm::json::Object nodeJson(const NodeCost &NC, const CostResult &C, const RooflineResult &RL,
                            const Config &Cfg, GemmMemo &Memo) {
  llvm::json::Object O;
  ObjectSink S(O);
  nodeMembers(S, NC, C, RL, Cfg, Memo);
  return O;
}

/// The document; its `nodes` array only when WithNodes (writeAnalyzeJson streams
/// it instead).
llvm::json::Object jsonDocument(const Model &M, const GraphSummaryResult &S, const CostResult &C,
                                const TrainingStepResult &T, const RooflineResult &RL,
                                const FusionResult &F, const InferenceMemoryResult *Inf,
                                AnalysisManager &AM, bool WithNodes = true) {
  const Config &Cfg = AM.config();
  llvm::json::Array Ops;
  for (const OpTypeTotal<double> &T : byOpType(C))
    Ops.push_back(llvm::json::Object{{"op", T.Op},
                                     {"count", int64_t(T.Nodes)},
                                     {"fwd", phaseJson(T.Fwd)},
                                     {"bwd", phaseJson(T.Bwd)}});
  llvm::json::Object Doc{
      {"schema", "ridge.analyze/1"},
      {"model", M.Path},
      {"options",
       llvm::json::Object{
           {"mode", Inf ? "inference" : "training"},
           {"dtype", Cfg.ComputeDType ? dtypeName(*Cfg.ComputeDType).str() : "as stored"},
           {"optimizer", optimizerName(Cfg.Opt)},
           {"recompute", recomputeName(Cfg.Recomp)},
           {"time_model", hasKernelModel(*RL.Dev, Cfg) ? "kernels" : "roofline"}}},
      {"device",
       llvm::json::Object{{"name", RL.Dev->Name},
                          {"source", RL.Dev->SourcePath},
                          {"step_dtype", dtypeName(RL.StepType)},
                          {"peak_flops", RL.MatrixPeak},
                          {"vector_peak_flops", RL.VectorPeak},
                          {"memory_bandwidth", RL.Bandwidth},
                          {"ridge_point", RL.RidgePoint},
                          {"efficiency_compute", RL.Dev->EffCompute},
                          {"efficiency_memory", RL.Dev->EffMemory},
                          {"launch_overhead", RL.Dev->LaunchOverhead},
                          {"kernel_gap", RL.Dev->KernelGap},
                          {"overlap", !Cfg.SumTerms}}},
      {"time",
       llvm::json::Object{{"fwd_seconds", RL.FwdSeconds},
                          {"bwd_seconds", RL.BwdSeconds},
                          {"recompute_seconds", RL.RecomputeSeconds},
                          {"optimizer_seconds", RL.OptimizerSeconds},
                          {"step_seconds", RL.stepSeconds()},
                          {"launches", RL.launches()},
                          {"host_stall_seconds", RL.hostStallSeconds()},
                          {"memory_bound_share",
                           RL.stepSeconds() > 0 ? RL.MemoryBoundSeconds / RL.stepSeconds() : 0.0},
                          {"mfu", RL.MFU}}},
      {"memory_fits", fitsDevice(Inf ? Inf->totalBytes() : T.totalBytes(), *RL.Dev)},
      {"fusion",
       llvm::json::Object{{"groups", int64_t(F.Groups)},
                          {"fused_ops", int64_t(F.FusedOps)},
                          {"bytes_before", F.BytesBefore},
                          {"bytes_after", F.BytesAfter},
                          {"step_seconds_before", F.StepSecondsBefore},
                          {"step_seconds_after", F.StepSecondsAfter}}},
      {"inputs", graphValuesJson(M, /*Outputs=*/false)},
      {"outputs", graphValuesJson(M, /*Outputs=*/true)},
      {"node_count", int64_t(S.Nodes)},
      {"params", T.Params},
      {"params_from_nodes", C.NodeParams},
      {"params_frozen", C.FreezeParams},
      {"totals",
       llvm::json::Object{{"fwd", phaseJson(C.Fwd)},
                          {"bwd", phaseJson(C.Bwd)},
                          {"optimizer", phaseJson(T.Optimizer)},
                          {"recompute_flops", T.RecomputeFlops},
                          {"step_flops", T.stepFlops(C)}}},
      {"memory", Inf ? inferenceMemoryJson(*Inf)
                     : llvm::json::Object{{"weights", T.WeightBytes},
                                          {"frozen_weights", T.FrozenWeightBytes},
                                          {"master_weights", T.MasterWeightBytes},
                                          {"gradients", T.GradientBytes},
                                          {"optimizer_state", T.OptimizerStateBytes},
                                          {"activations", T.ActivationBytes},
                                          {"total", T.totalBytes()}}},
      {"coverage",
       llvm::json::Object{{"nodes", int64_t(C.ModeledNodes + C.UnmodeledNodes)},
                          {"modeled", int64_t(C.ModeledNodes)},
                          {"flops_share", flopCoverage(C)},
                          {"unmodeled", unmodeledJson(C)}}},
      {"by_op_type", std::move(Ops)},
      {"symbols", symbolsJson(M)},
      {"inference", Inf ? llvm::json::Value(llvm::json::Object{
                              {"batch", boundBatch(M)},
                              {"latency_seconds", RL.stepSeconds()},
                              {"samples_per_second",
                               RL.stepSeconds() > 0 ? boundBatch(M) / RL.stepSeconds() : 0.0},
                              {"folded_nodes", int64_t(C.FoldedNodes)}})
                        : llvm::json::Value(nullptr)},
      {"warnings", llvm::json::Array(AM.diags().warnings())}};
  if (WithNodes) {
    llvm::json::Array Nodes;
    GemmMemo Memo;
    for (const NodeCost &NC : C.Nodes)
      Nodes.push_back(nodeJson(NC, C, RL, Cfg, Memo));
    Doc["nodes"] = std::move(Nodes);
  }
  return Doc;
}

/// --format json: the document with its nodes streamed.
void writeAnalyzeJson(const Model &M, const GraphSummaryResult &S, const CostResult &C,
               const TrainingStepResult &T, const RooflineResult &RL, const FusionResult &F,
               const InferenceMemoryResult *Inf, AnalysisManager &AM) {
  const Config &Cfg = AM.config();
  llvm::json::Object Doc = jsonDocument(M, S, C, T, RL, F, Inf, AM, /*WithNodes=*/false);
  GemmMemo Memo;
  writeJsonWithStreamedArray(*Cfg.Out, Doc, "nodes", [&](llvm::json::OStream &J) {
    for (const NodeCost &NC : C.Nodes)
      J.object([&] {
        StreamSink S(J);
        nodeMembers(S, NC, C, RL, Cfg, Memo);
      });
  });
}

void printCsv(const CostResult &C, const RooflineResult &RL, const Config &Cfg) {
  llvm::raw_ostream &OS = *Cfg.Out;
  OS << "name,op,domain,outputs,modeled,multiplier,fwd_flops,macs,transcendentals,"
        "fwd_bytes,bwd_flops,bwd_macs,bwd_transcendentals,bwd_bytes,saved_bytes,"
        "fwd_seconds,bwd_seconds,fwd_bound,bwd_bound,unmodeled_reason\n";
  // Every string from the model is quoted, and one a spreadsheet would
  // read as a formula (=, +, -, @, tab, carriage return first: OWASP's CSV
  // injection list) gets a leading apostrophe, so it stays text.
  auto Quote = [](llvm::StringRef S) {
    std::string Q = "\"";
    if (!S.empty() && llvm::StringRef("=+-@\t\r").contains(S.front()))
      Q += '\'';
    for (char Ch : S)
      Q += Ch == '"' ? std::string("\"\"") : std::string(1, Ch);
    return Q + "\"";
  };
  for (const NodeCost *NC : sortedRows(C, RL, Cfg)) {
    OS << Quote(NC->N->Name) << ',' << Quote(NC->N->OpType) << ','
       << Quote(NC->N->domainName()) << ',' << Quote(outputTypes(*NC->N)) << ','
       << (NC->Modeled ? 1 : 0) << ',' << exactNumber(NC->multiplier());
    for (double X : {NC->Fwd.Flops, NC->Fwd.Macs, NC->Fwd.Transcendentals,
                     NC->Fwd.Bytes, NC->Bwd.Flops, NC->Bwd.Macs,
                     NC->Bwd.Transcendentals, NC->Bwd.Bytes, nodeSavedBytes(*NC, C, floatBytes(Cfg))})
      OS << ',' << exactNumber(X);
    const NodeRoofline &R = RL.Nodes[NC - C.Nodes.data()];
    OS << ',' << llvm::formatv("{0:e}", R.Fwd.Seconds) << ','
       << llvm::formatv("{0:e}", R.Bwd.Seconds) << ',' << boundName(R.Fwd.B) << ','
       << boundName(R.Bwd.B) << ',' << Quote(NC->unmodeled()) << '\n';
  }
}

std::string seconds(double S) { return S == 0 ? "0" : durationText(S); }

/// What the table left out: rows past --top, and the nodes that cost
/// nothing, by op type (most first), in one line each.
void printFolded(const CostResult &C, size_t Shown, llvm::raw_ostream &OS) {
  std::map<std::string, size_t> Free;
  size_t NumFree = 0;
  for (const NodeCost &NC : C.Nodes)
    if (costsNothing(NC)) {
      ++Free[NC.N->qualifiedOpType()];
      ++NumFree;
    }
  if (Shown + NumFree < C.Nodes.size())
    OS << formatv("({0} more rows; --top 0 shows all)\n", C.Nodes.size() - NumFree - Shown);
  if (!NumFree)
    return;
  std::vector<std::pair<std::string, size_t>> ByCount(Free.begin(), Free.end());
  std::stable_sort(ByCount.begin(), ByCount.end(),
                   [](const auto &A, const auto &B) { return A.second > B.second; });
  OS << formatv("({0} node(s) that cost nothing, not listed:", NumFree);
  for (size_t I = 0; I < ByCount.size(); ++I)
    OS << (I ? ", " : " ") << ByCount[I].first << " x" << ByCount[I].second;
  OS << ")\n";
}

void printTrainingMemory(const TrainingStepResult &T, const Device &D, llvm::raw_ostream &OS) {
  OS << "memory: weights " << siNumber(T.WeightBytes, "B");
  if (T.FrozenWeightBytes > 0)
    OS << " (" << siNumber(T.FrozenWeightBytes, "B") << " of them frozen)";
  if (T.MasterWeightBytes > 0)
    OS << " + fp32 master " << siNumber(T.MasterWeightBytes, "B");
  OS << " + gradients " << siNumber(T.GradientBytes, "B") << " + optimizer state "
     << siNumber(T.OptimizerStateBytes, "B") << " + activations "
     << siNumber(T.ActivationBytes, "B") << " = " << siNumber(T.totalBytes(), "B")
     << fitText(T.totalBytes(), D) << "\n";
}

/// Under --recompute full: which tensors are kept, so that a user can check
/// the cuts against the layers they expect (Megatron keeps each layer's
/// input), or learn that the graph has none.
void printCheckpoints(const TrainingStepResult &T, llvm::raw_ostream &OS) {
  const std::vector<const Value *> &V = T.CheckpointValues;
  if (V.empty()) {
    OS << "  full recomputation: no checkpoint found (no position between two matrix "
          "products where one activation carries the gradient); every activation kept\n";
    return;
  }
  OS << formatv("  full recomputation: {0} checkpoint(s), '{1}'", V.size(), V.front()->Name);
  if (V.size() > 1)
    OS << (V.size() > 2 ? " ... '" : ", '") << V.back()->Name << "'";
  if (!T.SideValues.empty()) {
    OS << formatv(" and {0} tensor(s) every segment reads, held once (", T.SideValues.size());
    for (size_t I = 0; I < T.SideValues.size(); ++I)
      OS << (I ? ", '" : "'") << T.SideValues[I]->Name << "'";
    OS << ")";
  }
  OS << "; activations = these + the largest segment's saved tensors\n";
}

/// Weights, the live peak and its node, the KV cache; what fits.
void printInferenceMemory(const InferenceMemoryResult &I, const Device &D,
                          llvm::raw_ostream &OS) {
  OS << formatv("memory: weights {0} ({1} tensor(s) at their stored width) + activations "
                "{2} (the live peak",
                siNumber(I.WeightBytes, "B"), I.WeightTensors,
                siNumber(I.ActivationPeakBytes, "B"));
  if (I.PeakNode)
    OS << ", while '" << I.PeakNode->Name << "' (" << I.PeakNode->qualifiedOpType()
       << ") runs";
  OS << ")";
  if (!I.KV.empty())
    OS << " + KV cache "
       << (I.KVCacheKnown ? siNumber(I.KVCacheBytes, "B") : std::string("unknown"))
       << formatv(" ({0} tensor(s))", I.KV.size());
  OS << " = " << siNumber(I.totalBytes(), "B")
     << fitText(I.totalBytes(), D) << "\n";
  if (I.UnknownSize)
    OS << formatv("  ({0} activation(s) of unknown size not counted)\n", I.UnknownSize);
}

void printText(const Model &M, const GraphSummaryResult &S, const CostResult &C,
               const TrainingStepResult &T, const RooflineResult &RL, const FusionResult &F,
               const InferenceMemoryResult *Inf, const Config &Cfg) {
  llvm::raw_ostream &OS = *Cfg.Out;
  printModelLine(M, S.Nodes, T.Params, C, Inf != nullptr, OS);
  for (const Value *V : M.Main->Inputs)
    if (!V->isInitializer())
      OS << "input:  " << V->Name << ' ' << V->typeStr() << '\n';
  for (const Value *V : M.Main->Outputs)
    OS << "output: " << V->Name << ' ' << V->typeStr() << '\n';
  std::string DTypeStr =
      Cfg.ComputeDType ? dtypeName(*Cfg.ComputeDType).str() : std::string("dtype as stored");
  if (Inf)
    OS << "inference: forward only, " << DTypeStr << ", batch " << exactNumber(boundBatch(M))
       << "\n";
  else
    OS << "training step: " << DTypeStr << ", " << optimizerName(Cfg.Opt) << ", recompute "
       << recomputeName(Cfg.Recomp) << "\n";
  OS << formatv("device: {0} ({1} peak {2}, {3}, ridge point {4:F1} FLOP/B; "
                "efficiency compute {5}, memory {6}; {7})\n\n",
                RL.Dev->Name, dtypeName(RL.StepType), siNumber(RL.MatrixPeak, "FLOP/s"),
                siNumber(RL.Bandwidth, "B/s"), RL.RidgePoint, RL.Dev->EffCompute,
                RL.Dev->EffMemory,
                hasKernelModel(*RL.Dev, Cfg)
                    ? formatv("time = its kernels on {0} SMs", RL.Dev->ComputeUnits).str()
                : Cfg.SumTerms ? "time = compute + memory"
                               : "time = max(compute, memory)");

  auto Rows = sortedRows(C, RL, Cfg, /*FoldFree=*/true);
  size_t NameW = 4, OpW = 2, OutW = 6;
  for (const NodeCost *NC : Rows) {
    NameW = std::min<size_t>(40, std::max(NameW, NC->N->Name.size()));
    OpW = std::max(OpW, NC->N->qualifiedOpType().size());
    OutW = std::min<size_t>(32, std::max(OutW, outputTypes(*NC->N).size()));
  }
  auto Clip = [](std::string S, size_t W) {
    return S.size() <= W ? S : S.substr(0, W - 1) + "~";
  };
  // With the kernel model: what costs each row most, forward/backward.
  bool Limits = hasKernelModel(*RL.Dev, Cfg);
  OS << formatv("{0} {1} {2} {3,10} {4,10} {5,10} {6,10} {7,8} {8,10} {9,-8} {10,10}{11}\n",
                llvm::fmt_align("node", llvm::AlignStyle::Left, NameW),
                llvm::fmt_align("op", llvm::AlignStyle::Left, OpW),
                llvm::fmt_align("output", llvm::AlignStyle::Left, OutW), "fwd FLOP",
                "bwd FLOP", "MACs", "bytes", "FLOP/B", "time", "bound", "saved",
                Limits ? "  limit" : "");
  for (const NodeCost *NC : Rows) {
    OS << formatv("{0} {1} {2} ",
                  llvm::fmt_align(Clip(NC->N->Name.str(), NameW), llvm::AlignStyle::Left, NameW),
                  llvm::fmt_align(NC->N->qualifiedOpType(), llvm::AlignStyle::Left, OpW),
                  llvm::fmt_align(Clip(outputTypes(*NC->N), OutW), llvm::AlignStyle::Left, OutW));
    if (!NC->Modeled) {
      OS << "unmodeled: " << NC->unmodeled() << '\n';
      continue;
    }
    double K = NC->multiplier();
    const NodeRoofline &R = RL.Nodes[NC - C.Nodes.data()];
    double FwdIntensity = intensity(NC->Fwd);
    std::string Intensity = std::isfinite(FwdIntensity)
                                ? formatv("{0:F1}", FwdIntensity).str()
                                : std::string("-");
    // Memory-bound rows stand out: upper case, and yellow on a terminal.
    bool Memory = R.Fwd.B == Bound::Memory;
    OS << formatv("{0,10} {1,10} {2,10} {3,10} {4,8} {5,10} ", siNumber(NC->Fwd.Flops * K),
                  NC->NeedsBackward ? siNumber(NC->Bwd.Flops * K) : std::string("-"),
                  siNumber(NC->Fwd.Macs * K), siNumber((NC->Fwd.Bytes + NC->Bwd.Bytes) * K, "B"),
                  Intensity, seconds(nodeSeconds(C, RL, NC)));
    if (Memory && Cfg.Color)
      OS.changeColor(llvm::raw_ostream::YELLOW);
    OS << formatv("{0,-8}", Memory ? "MEMORY" : boundName(R.Fwd.B));
    if (Memory && Cfg.Color)
      OS.resetColor();
    OS << formatv(" {0,10}", siNumber(nodeSavedBytes(*NC, C, floatBytes(Cfg)) * K, "B"));
    if (Limits) {
      OS << "  " << limitName(R.Fwd.Why);
      if (NC->NeedsBackward && R.Bwd.Why != R.Fwd.Why)
        OS << "/" << limitName(R.Bwd.Why);
    }
    if (K != 1)
      OS << "  x" << exactNumber(K);
    OS << '\n';
  }
  printFolded(C, Rows.size(), OS);

  OS << "\nper op type:\n";
  size_t TypeW = 8;
  std::vector<OpTypeTotal<double>> Types = byOpType(C);
  for (const OpTypeTotal<double> &T : Types)
    TypeW = std::max(TypeW, T.Op.size());
  OS << formatv("  {0} {1,6} {2,10} {3,10} {4,10}  {5,5}\n",
                llvm::fmt_align("op", llvm::AlignStyle::Left, TypeW), "nodes",
                "fwd", "bwd", "bytes", "share");
  double StepFlops = C.Fwd.Flops + C.Bwd.Flops;
  for (const OpTypeTotal<double> &T : Types)
    OS << formatv("  {0} {1,6} {2,10} {3,10} {4,10}  {5,5:P1}\n",
                  llvm::fmt_align(T.Op, llvm::AlignStyle::Left, TypeW),
                  T.Nodes, siNumber(T.Fwd.Flops, "FLOP"), siNumber(T.Bwd.Flops, "FLOP"),
                  siNumber(T.Fwd.Bytes + T.Bwd.Bytes, "B"),
                  StepFlops > 0 ? (T.Fwd.Flops + T.Bwd.Flops) / StepFlops : 0.0);

  OS << "\ntotals:\n";
  auto Phase = [&](const char *Name, const PhaseCost &P) {
    OS << formatv("  {0,-10} {1,12} {2,12} {3,14} {4,10}\n", Name, siNumber(P.Flops, "FLOP"),
                  siNumber(P.Macs, "MAC"), siNumber(P.Transcendentals, "transc"),
                  siNumber(P.Bytes, "B"));
  };
  Phase("forward", C.Fwd);
  double Step = RL.stepSeconds();
  if (Inf) {
    double Batch = boundBatch(M);
    OS << formatv("forward latency on {0}: {1} at batch {2} ({3} samples/s); {4:P1} of it "
                  "in memory-bound ops; MFU {5:P1}\n",
                  RL.Dev->Name, seconds(Step), exactNumber(Batch),
                  Step > 0 ? siNumber(Batch / Step) : std::string("-"),
                  Step > 0 ? RL.MemoryBoundSeconds / Step : 0.0, RL.MFU);
    if (C.FoldedNodes)
      OS << formatv("({0} node(s) compute from weights and constants alone: folded once "
                    "at load, as ONNX Runtime does, and not costed per pass)\n",
                    C.FoldedNodes);
  } else {
    Phase("backward", C.Bwd);
    if (T.RecomputeFlops > 0)
      Phase("recompute", PhaseCost{T.RecomputeFlops, T.RecomputeMacs, 0, T.RecomputeBytes});
    Phase("optimizer", T.Optimizer);
    OS << formatv("  {0,-10} {1,12}\n", "step", siNumber(T.stepFlops(C), "FLOP"));
    OS << formatv("step time on {0}: {1} (forward {2}, backward {3}", RL.Dev->Name,
                  seconds(Step), seconds(RL.FwdSeconds), seconds(RL.BwdSeconds));
    if (RL.RecomputeSeconds > 0)
      OS << ", recompute " << seconds(RL.RecomputeSeconds);
    OS << formatv(", optimizer {0}); {1:P1} of it in memory-bound ops; MFU {2:P1}\n",
                  seconds(RL.OptimizerSeconds), Step > 0 ? RL.MemoryBoundSeconds / Step : 0.0,
                  RL.MFU);
  }
  if (RL.hostStallSeconds() > 0)
    OS << formatv("  host-bound: {0} kernel launches x {1} = {2}, longer than the device's "
                  "{3}; the device waits {4} for the host to issue kernels\n",
                  exactNumber(RL.launches()), seconds(RL.Dev->LaunchOverhead), seconds(Step),
                  seconds(RL.deviceSeconds()), seconds(RL.hostStallSeconds()));
  // Top ops by time, and the op types a higher-intensity implementation
  // (fusion, another partitioning) would speed up most: the time a
  // memory-bound phase spends above its compute time.
  std::vector<const NodeCost *> ByTime =
      topByKey(C.Nodes, [](const NodeCost &) { return true; },
               [&](const NodeCost &N) { return nodeSeconds(C, RL, &N); }, 5);
  OS << "top ops by time:";
  for (size_t I = 0; I < std::min<size_t>(5, ByTime.size()); ++I) {
    const NodeCost *NC = ByTime[I];
    if (nodeSeconds(C, RL, NC) <= 0)
      break;
    OS << formatv(" {0} ({1}, {2}, {3:P0})", NC->N->Name, NC->N->qualifiedOpType(),
                  boundName(RL.Nodes[NC - C.Nodes.data()].Fwd.B),
                  Step > 0 ? nodeSeconds(C, RL, NC) / Step : 0.0);
    OS << (I + 1 < std::min<size_t>(5, ByTime.size()) ? "," : "");
  }
  OS << '\n';
  std::map<std::string, double> Gain;
  for (const NodeCost &NC : C.Nodes) {
    const NodeRoofline &R = RL.Nodes[&NC - C.Nodes.data()];
    for (bool Bwd : {false, true})
      if ((Bwd ? R.Bwd : R.Fwd).B == Bound::Memory) {
        PhaseTime P = RL.terms(C, NC, Bwd, Cfg);
        Gain[NC.N->qualifiedOpType()] +=
            (P.MemoryS - std::max(P.ComputeS, P.TranscS)) * NC.multiplier();
      }
  }
  std::vector<std::pair<std::string, double>> Gains(Gain.begin(), Gain.end());
  std::stable_sort(Gains.begin(), Gains.end(),
                   [](auto &A, auto &B) { return A.second > B.second; });
  if (!Gains.empty()) {
    OS << "memory-bound time above compute time, by op type (what fusion or a "
          "higher-intensity kernel could save):";
    for (size_t I = 0; I < std::min<size_t>(5, Gains.size()); ++I)
      OS << formatv(" {0} {1}{2}", Gains[I].first, seconds(Gains[I].second),
                    I + 1 < std::min<size_t>(5, Gains.size()) ? "," : "");
    OS << '\n';
  }
  if (F.FusedOps)
    OS << formatv("fusion what-if: {0} element-wise/normalization ops fused into {1} "
                  "producers: bytes {2} -> {3}, step time {4} -> {5} ({6:P1})\n",
                  F.FusedOps, F.Groups, siNumber(F.BytesBefore, "B"),
                  siNumber(F.BytesAfter, "B"), seconds(F.StepSecondsBefore),
                  seconds(F.StepSecondsAfter),
                  F.StepSecondsBefore > 0 ? F.StepSecondsAfter / F.StepSecondsBefore - 1 : 0.0);
  if (Inf)
    printInferenceMemory(*Inf, *RL.Dev, OS);
  else
    printTrainingMemory(T, *RL.Dev, OS);
  if (!Inf && Cfg.Recomp == Config::Recompute::Full)
    printCheckpoints(T, OS);
  size_t Total = C.ModeledNodes + C.UnmodeledNodes;
  OS << formatv("coverage: {0} of {1} nodes modeled ({2:P1}); {3:P1} of estimated "
                "forward FLOPs\n",
                C.ModeledNodes, Total, Total ? double(C.ModeledNodes) / Total : 1.0,
                flopCoverage(C));
  for (const auto &[What, Count] : C.UnmodeledOps)
    OS << "  unmodeled: " << What << " x" << Count << '\n';
  printDataSymbols(M, OS);
}

/// --inference's memory (weights, the live peak, the KV cache); null for a
/// training step.
llvm::Expected<const InferenceMemoryResult *> inferenceMemoryIf(AnalysisManager &AM) {
  if (!AM.config().Inference)
    return nullptr;
  auto I = AM.getResult<InferenceMemoryAnalysis>();
  if (!I)
    return I.takeError();
  return &*I;
}

/// The analyses the report reads, computed (or taken from the cache).
struct ReportInputs {
  GraphSummaryResult *S;
  CostResult *C;
  TrainingStepResult *T;
  RooflineResult *RL;
  FusionResult *F;
  const InferenceMemoryResult *Inf = nullptr;
};

llvm::Expected<ReportInputs> reportInputs(AnalysisManager &AM) {
  auto S = AM.getResult<GraphSummaryAnalysis>();
  if (!S)
    return S.takeError();
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  auto T = AM.getResult<TrainingStepAnalysis>();
  if (!T)
    return T.takeError();
  auto RL = AM.getResult<RooflineAnalysis>();
  if (!RL)
    return RL.takeError();
  auto F = AM.getResult<FusionAnalysis>();
  if (!F)
    return F.takeError();
  auto Inf = inferenceMemoryIf(AM);
  if (!Inf)
    return Inf.takeError();
  return ReportInputs{&*S, &*C, &*T, &*RL, &*F, *Inf};
}

/// The analyses the formula report reads besides the costs.
struct FormulaInputs {
  GraphSummaryResult *S;
  TrainingStepResult *T;
  const InferenceMemoryResult *Inf = nullptr;
};

llvm::Expected<FormulaInputs> formulaInputs(AnalysisManager &AM) {
  auto S = AM.getResult<GraphSummaryAnalysis>();
  if (!S)
    return S.takeError();
  auto T = AM.getResult<TrainingStepAnalysis>();
  if (!T)
    return T.takeError();
  auto Inf = inferenceMemoryIf(AM);
  if (!Inf)
    return Inf.takeError();
  return FormulaInputs{&*S, &*T, *Inf};
}

/// The formula document of M (C holds formulas).
llvm::Expected<llvm::json::Value> formulaDocumentOf(Model &M, AnalysisManager &AM,
                                                    const CostResult &C) {
  auto In = formulaInputs(AM);
  if (!In)
    return In.takeError();
  return formulaDocument(M, *In->S, C, *In->T, In->Inf, AM);
}

/// analyze when the costs are formulas (CostResult::Sym): what needs numbers
/// (CSV's times, the chart, the page, the annotated model, budgets) is an
/// error that names the symbols to bind.
llvm::Error formulaReport(Model &M, AnalysisManager &AM, const CostResult &C) {
  const Config &Cfg = AM.config();
  if (Cfg.Format == OutputFormat::Csv)
    return needsNumbers(M, C, "--format csv (its times)");
  if (!Cfg.RooflinePath.empty())
    return needsNumbers(M, C, "--roofline");
  if (!Cfg.ReportPath.empty())
    return needsNumbers(M, C, "--report");
  if (!Cfg.Budgets.empty())
    return needsNumbers(M, C, "--fail-if");
  auto In = formulaInputs(AM);
  if (!In)
    return In.takeError();
  if (Cfg.Format == OutputFormat::Json)
    writeFormulaDocument(*Cfg.Out, M, *In->S, C, *In->T, In->Inf, AM);
  else
    printFormulaText(M, *In->S, C, *In->T, In->Inf, Cfg);
  return writeAnalyzeFiles(M, AM, nullptr); // --annotate: the formulas, no times
}

} // namespace

llvm::Expected<llvm::json::Value> ridge::analyzeDocument(Model &M, AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  if (C->Sym)
    return formulaDocumentOf(M, AM, *C);
  auto In = reportInputs(AM);
  if (!In)
    return In.takeError();
  return llvm::json::Value(jsonDocument(M, *In->S, *In->C, *In->T, *In->RL, *In->F, In->Inf, AM));
}

llvm::Error ReportPass::run(Model &M, AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  if (C->Sym)
    return formulaReport(M, AM, *C);
  auto In = reportInputs(AM);
  if (!In)
    return In.takeError();
  const Config &Cfg = AM.config();
  std::optional<llvm::json::Value> Doc;
  switch (Cfg.Format) {
  case OutputFormat::Json:
    writeAnalyzeJson(M, *In->S, *In->C, *In->T, *In->RL, *In->F, In->Inf, AM);
    break;
  case OutputFormat::Csv:
    printCsv(*In->C, *In->RL, Cfg);
    break;
  case OutputFormat::Text:
    printText(M, *In->S, *In->C, *In->T, *In->RL, *In->F, In->Inf, Cfg);
    break;
  }
  if (!Doc && (!Cfg.Budgets.empty() || !Cfg.AnnotatePath.empty() || !Cfg.ReportPath.empty()))
    Doc = jsonDocument(M, *In->S, *In->C, *In->T, *In->RL, *In->F, In->Inf, AM);
  if (llvm::Error E = writeAnalyzeFiles(M, AM, Doc ? &*Doc : nullptr))
    return E;
  if (Cfg.Budgets.empty())
    return llvm::Error::success();
  return checkBudgets(Cfg.Budgets, *Doc, nullptr, M.Path);
}

llvm::Error ridge::writeAnalyzeFiles(Model &M, AnalysisManager &AM, const llvm::json::Value *Doc) {
  const Config &Cfg = AM.config();
  if (Cfg.RooflinePath.empty() && Cfg.AnnotatePath.empty() && Cfg.ReportPath.empty())
    return llvm::Error::success();
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  if (C->Sym) {
    // Formulas: the chart and the page need times; the annotated model
    // carries the formulas.
    if (!Cfg.RooflinePath.empty())
      return needsNumbers(M, *C, "--roofline");
    if (!Cfg.ReportPath.empty())
      return needsNumbers(M, *C, "--report");
    std::optional<llvm::json::Value> Own;
    if (!Doc) {
      auto D = formulaDocumentOf(M, AM, *C);
      if (!D)
        return D.takeError();
      Doc = &Own.emplace(std::move(*D));
    }
    return writeModelAnnotations(Cfg.AnnotatePath, M, *C, nullptr, *Doc, AM.diags());
  }
  auto In = reportInputs(AM);
  if (!In)
    return In.takeError();
  if (!Cfg.RooflinePath.empty())
    if (llvm::Error E = writeRooflineChart(Cfg.RooflinePath, M, *In->C, *In->RL, Cfg))
      return E;
  if (Cfg.AnnotatePath.empty() && Cfg.ReportPath.empty())
    return llvm::Error::success();
  std::optional<llvm::json::Value> Own;
  if (!Doc)
    Doc = &Own.emplace(jsonDocument(M, *In->S, *In->C, *In->T, *In->RL, *In->F, In->Inf, AM));
  if (!Cfg.ReportPath.empty()) {
    std::string Svg, Page;
    llvm::raw_string_ostream SOS(Svg), POS(Page);
    renderRooflineSvgElement(SOS, M, *In->C, *In->RL, Cfg);
    renderAnalyzeHtml(POS, *Doc, Svg, In->RL->Dev->MemCapacity);
    if (llvm::Error E = writeTextFile(Cfg.ReportPath, Page))
      return E;
  }
  if (!Cfg.AnnotatePath.empty())
    if (llvm::Error E =
            writeModelAnnotations(Cfg.AnnotatePath, M, *In->C, In->RL, *Doc, AM.diags()))
      return E;
  return llvm::Error::success();
}
