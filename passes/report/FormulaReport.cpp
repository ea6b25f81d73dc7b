//===- FormulaReport.cpp - analyze's report when costs are formulas -------===//
#include "passes/report/FormulaReport.h"
#include "passes/report/AnalyzeJson.h"
#include "passes/report/NodeJson.h"
#include "passes/report/JsonWriter.h"
#include "analyzer/Format.h"
#include "devices/Device.h"
#include "passes/cost/CostModel.h"
#include "passes/cost/TrainingStep.h"
#include "passes/inference/Inference.h"
#include "passes/report/GraphSummary.h"
#include "passes/report/OpTypeTotals.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <map>
#include <set>

using namespace ridge;
using llvm::formatv;
using sym::Count;

llvm::json::Value ridge::countJson(const Count &C) {
  if (C.isUnknown())
    return nullptr;
  if (C.isNumber())
    return countValue(C.number());
  return C.str();
}

/// A count as JSON: a number when constant, its formula (a string) when
/// symbolic, null when unknown.
llvm::json::Value ridge::exprJson(sym::ExprRef E) {
  if (!E)
    return nullptr;
  if (std::optional<int64_t> C = E->constant())
    return *C;
  return E->str();
}

/// Every symbol the model's shapes use: each input's symbolic dims (where
/// it came from: the input and axis), then the data-dependent ones (the node,
/// what it counts, the bound ridge can prove, and a --dim binding).
llvm::json::Array ridge::symbolsJson(const Model &M) {
  llvm::json::Array Out;
  std::set<std::string> Seen;
  for (const Value *V : M.Main->Inputs) {
    if (V->isInitializer() || !V->Shp)
      continue;
    for (size_t I = 0; I < V->Shp->rank(); ++I)
      for (const std::string &S : sym::symbols(V->Shp->Dims[I].expr()))
        if (Seen.insert(S).second)
          Out.push_back(llvm::json::Object{
              {"name", S}, {"source", "input"}, {"input", V->Name.ref()}, {"axis", int64_t(I)}});
  }
  for (const auto &[Name, D] : M.DataSymbols) {
    llvm::json::Object O{{"name", Name}, {"source", "data"}, {"node", D.Node},
                         {"counts", D.What}};
    O["bound"] = exprJson(D.Bound);
    auto It = M.DimBindings.find(Name);
    O["bound_to"] = It == M.DimBindings.end() ? llvm::json::Value(nullptr)
                                              : llvm::json::Value(It->second);
    Out.push_back(std::move(O));
  }
  return Out;
}

/// The data-dependent symbols, one line each.
void ridge::printDataSymbols(const Model &M, llvm::raw_ostream &OS) {
  for (const auto &[Name, D] : M.DataSymbols) {
    auto It = M.DimBindings.find(Name);
    std::string Bound = D.Bound ? ", at most " + D.Bound->str() : "";
    OS << "data-dependent dim: " << sym::symbol(Name)->str() << " (" << D.What << " of '"
       << D.Node << "'" << Bound << "): ";
    if (It != M.DimBindings.end())
      OS << "bound to " << It->second << "\n";
    else
      OS << "bind it with --dim " << Name << "=N\n";
  }
}

namespace {


/// A count in text: a number with its SI prefix, a formula as it is.
std::string countText(const Count &C, const char *Unit) {
  if (C.isNumber()) {
    double X = C.number();
    return X == std::floor(X) && std::fabs(X) < 1e6 ? exactNumber(X) + " " + Unit
                                                     : siNumber(X, Unit);
  }
  return C.str() + " " + Unit;
}

/// The value with every symbol at 1024: the order of rows "as the symbols
/// grow" (the formulas' leading terms decide it). Order only, never printed.
double growthKey(const Count &C) {
  if (C.isNumber())
    return C.number();
  llvm::Expected<double> V = C.evaluate([](llvm::StringRef) { return int64_t(1024); });
  if (!V) {
    llvm::consumeError(V.takeError());
    return 0;
  }
  return *V;
}

std::vector<OpTypeTotal<Count>> byOpType(const CostResult &C) {
  // Each row summed as coefficients (SymbolicSum), made Counts once.
  struct Row {
    std::string Op;
    size_t Nodes = 0;
    SymbolicSum Sum;
    void merge(const Row &O) { Sum.add(O.Sum); }
  };
  std::vector<Row> Rows = groupByOpType<Row>(C, [](const NodeCost &NC, Row &R) {
    if (NC.Sym)
      R.Sum.add(*NC.Sym, NC.multiplier());
    else
      R.Sum.add(NC.Fwd, NC.Bwd, NC.multiplier());
  });
  std::vector<OpTypeTotal<Count>> V;
  V.reserve(Rows.size());
  for (Row &R : Rows)
    V.push_back({std::move(R.Op), R.Nodes, R.Sum.fwd(), R.Sum.bwd()});
  std::stable_sort(V.begin(), V.end(), [](const auto &A, const auto &B) {
    return growthKey(A.Fwd.Flops + A.Bwd.Flops) > growthKey(B.Fwd.Flops + B.Bwd.Flops);
  });
  return V;
}

/// The activations held (after the recomputation policy) and the whole
/// footprint; the step's FLOPs with the forwards replayed.
Count activations(const CostResult &C, const TrainingStepResult &T) {
  return T.Sym ? T.Sym->ActivationBytes : C.Sym->SavedActivationBytes;
}
Count recomputeFlops(const TrainingStepResult &T) {
  return T.Sym ? T.Sym->RecomputeFlops : Count(T.RecomputeFlops);
}
Count totalMemory(const CostResult &C, const TrainingStepResult &T) {
  return activations(C, T) + T.WeightBytes + T.MasterWeightBytes + T.GradientBytes +
         T.OptimizerStateBytes;
}
Count stepFlops(const CostResult &C, const TrainingStepResult &T) {
  return C.Sym->Fwd.Flops + C.Sym->Bwd.Flops + recomputeFlops(T) + T.Optimizer.Flops;
}

/// --inference's memory: the weights (numbers: initializers and constants)
/// and the live peak and cache (formulas when their sizes hold symbols).
Count inferenceActivations(const InferenceMemoryResult &I) {
  return I.Sym ? I.Sym->ActivationPeakBytes : Count(I.ActivationPeakBytes);
}
Count inferenceKVCache(const InferenceMemoryResult &I) {
  if (I.Sym)
    return I.Sym->KVCacheBytes;
  return I.KVCacheKnown ? Count(I.KVCacheBytes) : Count::of(nullptr);
}
Count inferenceTotal(const InferenceMemoryResult &I) {
  return inferenceActivations(I) + (I.KV.empty() ? Count(0) : inferenceKVCache(I)) +
         I.WeightBytes;
}

/// The peak's node, or the candidates whose order the binding decides.
std::string peakText(const InferenceMemoryResult &I) {
  if (I.PeakNode)
    return "while '" + I.PeakNode->Name.str() + "' (" + I.PeakNode->qualifiedOpType() + ") runs";
  if (!I.Sym || I.Sym->PeakCandidates.empty())
    return "its position needs numbers";
  std::string S = "the largest of the live bytes at";
  for (const Node *N : I.Sym->PeakCandidates)
    S += " '" + N->Name.str() + "'";
  return S + ", which the binding decides";
}

void printInferenceMemory(const InferenceMemoryResult &I, llvm::raw_ostream &OS) {
  OS << formatv("memory: weights {0} ({1} tensor(s) at their stored width) + activations "
                "({2}, the live peak, {3})",
                siNumber(I.WeightBytes, "B"), I.WeightTensors,
                countText(inferenceActivations(I), "B"), peakText(I));
  if (!I.KV.empty())
    OS << " + KV cache (" << countText(inferenceKVCache(I), "B") << ", " << I.KV.size()
       << " tensor(s))";
  OS << " = " << countText(inferenceTotal(I), "B") << "\n";
  if (I.UnknownSize)
    OS << formatv("  ({0} activation(s) of unknown size not counted)\n", I.UnknownSize);
}

void printTrainingMemory(const CostResult &C, const TrainingStepResult &T,
                         llvm::raw_ostream &OS) {
  OS << "memory: weights " << siNumber(T.WeightBytes, "B");
  if (T.FrozenWeightBytes > 0)
    OS << " (" << siNumber(T.FrozenWeightBytes, "B") << " of them frozen)";
  if (T.MasterWeightBytes > 0)
    OS << " + fp32 master " << siNumber(T.MasterWeightBytes, "B");
  OS << " + gradients " << siNumber(T.GradientBytes, "B") << " + optimizer state "
     << siNumber(T.OptimizerStateBytes, "B") << " + activations ("
     << countText(activations(C, T), "B") << ") = " << countText(totalMemory(C, T), "B") << "\n";
}

std::string symbolList(const CostResult &C) {
  std::string S;
  for (const std::string &Name : C.freeSymbols())
    S += (S.empty() ? "" : ", ") + sym::symbol(Name)->str();
  return S;
}

std::string bindHint(const CostResult &C) {
  std::string S;
  for (const std::string &Name : C.freeSymbols())
    S += (S.empty() ? "--dim " : " --dim ") + Name + "=VALUE";
  return S;
}

llvm::json::Object phaseJson(const PhaseCount &P) {
  return llvm::json::Object{{"flops", countJson(P.Flops)},
                            {"macs", countJson(P.Macs)},
                            {"transcendentals", countJson(P.Transcendentals)},
                            {"bytes", countJson(P.Bytes)}};
}

} // namespace

void ridge::printModelLine(const Model &M, size_t Nodes, double Params, const CostResult &C,
                           bool Inference, llvm::raw_ostream &OS) {
  OS << "model: " << M.Path << " (" << Nodes << " nodes, " << withCommas(Params)
     << (Inference ? " parameters" : " trainable parameters");
  if (C.NodeParamTensors)
    OS << ", " << withCommas(C.NodeParams) << " of them in " << C.NodeParamTensors
       << " tensor(s) the graph computes from constants";
  if (C.FreezeTensors)
    OS << "; " << withCommas(C.FreezeParams) << " in " << C.FreezeTensors
       << " tensor(s) frozen by --freeze";
  OS << ")\n";
}

void ridge::printFormulaText(const Model &M, const GraphSummaryResult &S, const CostResult &C,
                             const TrainingStepResult &T, const InferenceMemoryResult *Inf,
                             const Config &Cfg) {
  llvm::raw_ostream &OS = *Cfg.Out;
  printModelLine(M, S.Nodes, T.Params, C, Inf != nullptr, OS);
  for (const Value *V : M.Main->Inputs)
    if (!V->isInitializer())
      OS << "input:  " << V->Name << ' ' << V->typeStr() << '\n';
  for (const Value *V : M.Main->Outputs)
    OS << "output: " << V->Name << ' ' << V->typeStr() << '\n';
  std::string DType =
      Cfg.ComputeDType ? dtypeName(*Cfg.ComputeDType).str() : std::string("dtype as stored");
  if (Inf)
    OS << "inference: forward only, " << DType << "\n";
  else
    OS << "training step: " << DType << ", " << optimizerName(Cfg.Opt) << ", recompute "
       << recomputeName(Cfg.Recomp) << "\n";
  OS << formatv("costs: formulas in {0} ({1} of {2} nodes); times, roofline bounds and {3} "
                "need numbers: bind {4}\n\n",
                symbolList(C), C.Sym->Nodes, C.Nodes.size(), Inf ? "latency" : "MFU",
                bindHint(C));

  OS << "per op type (largest as the symbols grow first):\n";
  for (const OpTypeTotal<Count> &Op : byOpType(C)) {
    if (Op.Fwd.Flops == 0 && Op.Bwd.Flops == 0 && Op.Fwd.Bytes == 0 && Op.Bwd.Bytes == 0)
      continue;
    OS << formatv("  {0} x{1}\n", Op.Op, Op.Nodes);
    OS << formatv("    forward   {0}, {1}\n", countText(Op.Fwd.Flops, "FLOP"),
                  countText(Op.Fwd.Bytes, "B"));
    if (!(Op.Bwd.Flops == 0 && Op.Bwd.Bytes == 0))
      OS << formatv("    backward  {0}, {1}\n", countText(Op.Bwd.Flops, "FLOP"),
                    countText(Op.Bwd.Bytes, "B"));
  }
  OS << "\ntotals:\n";
  auto Phase = [&](const char *Name, const PhaseCount &P) {
    OS << formatv("  {0,-10} {1}, {2}, {3}, {4}\n", Name, countText(P.Flops, "FLOP"),
                  countText(P.Macs, "MAC"), countText(P.Transcendentals, "transc"),
                  countText(P.Bytes, "B"));
  };
  Phase("forward", C.Sym->Fwd);
  if (Inf) {
    printInferenceMemory(*Inf, OS);
  } else {
    Phase("backward", C.Sym->Bwd);
    if (Cfg.Recomp != Config::Recompute::None && T.Sym)
      Phase("recompute", PhaseCount{T.Sym->RecomputeFlops, T.Sym->RecomputeMacs, 0,
                                    T.Sym->RecomputeBytes});
    Phase("optimizer", countsOf(T.Optimizer));
    OS << "  step       " << countText(stepFlops(C, T), "FLOP") << "\n";
    printTrainingMemory(C, T, OS);
  }
  size_t Total = C.ModeledNodes + C.UnmodeledNodes;
  OS << formatv("coverage: {0} of {1} nodes modeled ({2:P1}), {3} of them as formulas\n",
                C.ModeledNodes, Total, Total ? double(C.ModeledNodes) / Total : 1.0,
                C.Sym->Nodes);
  for (const auto &[What, N] : C.UnmodeledOps)
    OS << "  unmodeled: " << What << " x" << N << '\n';
  OS << "(per-node formulas: --format json, or ridge run --passes 'print<cost>')\n";
  printDataSymbols(M, OS);
}

namespace {

/// One entry of the formula document's `nodes` array into S (a sink of
/// JsonWriter.h).
template <class Sink>
void formulaNodeMembers(Sink &S, const NodeCost &NC, const CostResult &C,
                        std::optional<double> FloatBytes) {
  auto NoTimes = [](Sink &, bool) {};
  if (!NC.Modeled)
    return nodeEntry(S, NC, nullptr, NoTimes);
  PhaseCount F = NC.fwdCounts(), B = NC.bwdCounts();
  NodeCountsJson N{countJson(F.Flops),           countJson(F.Macs),
                   countJson(F.Transcendentals), countJson(F.Bytes),
                   countJson(B.Flops),           countJson(B.Macs),
                   countJson(B.Transcendentals), countJson(B.Bytes),
                   countJson(nodeSavedCount(NC, C, FloatBytes))};
  nodeEntry(S, NC, &N, NoTimes);
}

llvm::json::Object formulaNodeJson(const NodeCost &NC, const CostResult &C,
                                   std::optional<double> FloatBytes) {
  llvm::json::Object O;
  ObjectSink S(O);
  formulaNodeMembers(S, NC, C, FloatBytes);
  return O;
}

/// --inference's memory object, counts as numbers or formulas (the keys of
/// the numeric document's).
llvm::json::Object inferenceMemoryJson(const InferenceMemoryResult &I) {
  llvm::json::Array Candidates;
  if (I.Sym)
    for (const Node *N : I.Sym->PeakCandidates)
      Candidates.push_back(N->Name.ref());
  return llvm::json::Object{
      {"weights", I.WeightBytes},
      {"weight_tensors", int64_t(I.WeightTensors)},
      {"activations", countJson(inferenceActivations(I))},
      {"activation_peak_node",
       I.PeakNode ? llvm::json::Value(I.PeakNode->Name) : llvm::json::Value(nullptr)},
      {"activation_peak_candidates", std::move(Candidates)},
      {"activations_of_unknown_size", int64_t(I.UnknownSize)},
      {"kv_cache", I.KV.empty() ? llvm::json::Value(0) : countJson(inferenceKVCache(I))},
      {"kv_cache_tensors", int64_t(I.KV.size())},
      {"total", countJson(inferenceTotal(I))}};
}

/// The batch: the first graph input's leading dim (a formula when free).
llvm::json::Value batchJson(const Model &M) {
  for (const Value *V : M.Main->Inputs)
    if (!V->isInitializer())
      return V->Shp && V->Shp->rank() > 0 ? exprJson(V->Shp->Dims[0].expr())
                                          : llvm::json::Value(1);
  return 1;
}

/// The document without its `nodes`.
llvm::json::Object formulaDocumentHead(const Model &M, const GraphSummaryResult &S,
                                       const CostResult &C, const TrainingStepResult &T,
                                       const InferenceMemoryResult *Inf,
                                       AnalysisManager &AM) {
  const Config &Cfg = AM.config();
  llvm::json::Array Ops, Needs;
  for (const OpTypeTotal<Count> &Op : byOpType(C))
    Ops.push_back(llvm::json::Object{{"op", Op.Op},
                                     {"count", int64_t(Op.Nodes)},
                                     {"fwd", phaseJson(Op.Fwd)},
                                     {"bwd", phaseJson(Op.Bwd)}});
  for (const std::string &Name : C.freeSymbols())
    Needs.push_back(Name);
  llvm::json::Object Doc{
      {"schema", "ridge.analyze/1"},
      {"model", M.Path},
      {"options",
       llvm::json::Object{
           {"mode", Inf ? "inference" : "training"},
           {"dtype", Cfg.ComputeDType ? dtypeName(*Cfg.ComputeDType).str() : "as stored"},
           {"optimizer", optimizerName(Cfg.Opt)},
           {"recompute", recomputeName(Cfg.Recomp)},
           {"counts", "formulas"}}},
      {"device", Cfg.Dev ? llvm::json::Value(llvm::json::Object{{"name", Cfg.Dev->Name}})
                         : llvm::json::Value(nullptr)},
      {"needs_binding", std::move(Needs)},
      {"time", nullptr},
      {"memory_fits", nullptr},
      {"fusion", nullptr},
      {"inputs", graphValuesJson(M, /*Outputs=*/false)},
      {"outputs", graphValuesJson(M, /*Outputs=*/true)},
      {"node_count", int64_t(S.Nodes)},
      {"params", T.Params},
      {"params_from_nodes", C.NodeParams},
      {"params_frozen", C.FreezeParams},
      {"totals",
       llvm::json::Object{{"fwd", phaseJson(C.Sym->Fwd)},
                          {"bwd", phaseJson(C.Sym->Bwd)},
                          {"optimizer", phaseJson(countsOf(T.Optimizer))},
                          {"recompute_flops", countJson(recomputeFlops(T))},
                          {"step_flops", countJson(stepFlops(C, T))}}},
      {"memory", Inf ? inferenceMemoryJson(*Inf)
                     : llvm::json::Object{{"weights", T.WeightBytes},
                                          {"frozen_weights", T.FrozenWeightBytes},
                                          {"master_weights", T.MasterWeightBytes},
                                          {"gradients", T.GradientBytes},
                                          {"optimizer_state", T.OptimizerStateBytes},
                                          {"activations", countJson(activations(C, T))},
                                          {"total", countJson(totalMemory(C, T))}}},
      {"coverage",
       llvm::json::Object{{"nodes", int64_t(C.ModeledNodes + C.UnmodeledNodes)},
                          {"modeled", int64_t(C.ModeledNodes)},
                          {"formulas", int64_t(C.Sym->Nodes)},
                          {"flops_share", C.UnmodeledNodes ? llvm::json::Value(nullptr)
                                                           : llvm::json::Value(1.0)},
                          {"unmodeled", unmodeledJson(C)}}},
      {"by_op_type", std::move(Ops)},
      {"symbols", symbolsJson(M)},
      {"inference", Inf ? llvm::json::Value(llvm::json::Object{
                              {"batch", batchJson(M)},
                              {"latency_seconds", nullptr},
                              {"samples_per_second", nullptr},
                              {"folded_nodes", int64_t(C.FoldedNodes)}})
                        : llvm::json::Value(nullptr)},
      {"warnings", llvm::json::Array(AM.diags().warnings())}};
  return Doc;
}

} // namespace

llvm::json::Value ridge::formulaDocument(const Model &M, const GraphSummaryResult &S,
                                         const CostResult &C, const TrainingStepResult &T,
                                         const InferenceMemoryResult *Inf,
                                         AnalysisManager &AM) {
  llvm::json::Object Doc = formulaDocumentHead(M, S, C, T, Inf, AM);
  llvm::json::Array Nodes;
  std::optional<double> FloatBytes = floatBytes(AM.config());
  for (const NodeCost &NC : C.Nodes)
    Nodes.push_back(formulaNodeJson(NC, C, FloatBytes));
  Doc["nodes"] = std::move(Nodes);
  return llvm::json::Value(std::move(Doc));
}

void ridge::writeFormulaDocument(llvm::raw_ostream &OS, const Model &M,
                                 const GraphSummaryResult &S, const CostResult &C,
                                 const TrainingStepResult &T,
                                 const InferenceMemoryResult *Inf, AnalysisManager &AM) {
  llvm::json::Object Doc = formulaDocumentHead(M, S, C, T, Inf, AM);
  std::optional<double> FloatBytes = floatBytes(AM.config());
  writeJsonWithStreamedArray(OS, Doc, "nodes", [&](llvm::json::OStream &J) {
    for (const NodeCost &NC : C.Nodes)
      J.object([&] {
        StreamSink S(J);
        formulaNodeMembers(S, NC, C, FloatBytes);
      });
  });
}
