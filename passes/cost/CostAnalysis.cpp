//===- CostAnalysis.cpp - Cost every node, forward and backward -----------===//
//
// 1. Which values need a gradient: trainable initializers (floating-point
//    ones with more than one element fed to a differentiable input; a
//    single-element initializer is a constant such as eps or 1/sqrt(d)) and
//    --trainable-input graph inputs, then forward along differentiable
//    inputs in topological order. An output of unknown element type is
//    taken as possibly floating point, so the chain is not cut.
// 2. Each node's rule from OpCosts.def, with the inputs that need gradients
//    (on two threads for a large graph without control flow, once every
//    node's gradient flags are known; the totals then in graph order).
// 3. Control flow: If counts its costlier branch (by FLOPs), Loop and Scan
//    their body times the trip count; an unknown trip count counts the body
//    once and marks the loop unmodeled. A loop-carried value needs a
//    gradient in the body when its initial value does or when the body's
//    output carried into it does (a fixed point over the body, flags only,
//    before the body is costed). The body is costed once, as a steady-state
//    iteration, times the trip count: a gradient that exists only from the
//    second iteration on (a carried value that starts untrained) is counted
//    in every iteration.
//
//===----------------------------------------------------------------------===//
#include "analyzer/Parallel.h"
#include "passes/cost/CostModel.h"
#include "passes/cost/KVCache.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/GlobPattern.h"
#include <map>
#include <set>
#include "llvm/Support/FormatVariadic.h"

using namespace ridge;
using llvm::formatv;

namespace {

/// An op that computes part of a backward or an optimizer update: ONNX's
/// training domain (Gradient, Adam, Adagrad, Momentum) and the gradient,
/// accumulation and optimizer ops of ONNX Runtime's training graphs
/// (com.microsoft GeluGrad, SoftmaxGrad_13, InPlaceAccumulatorV2,
/// AdamWOptimizer, ...).
bool isTrainingOp(const Node &N) {
  if (N.Domain == "ai.onnx.preview.training")
    return true;
  return N.Domain == "com.microsoft" &&
         (N.OpType.contains("Grad") || N.OpType.contains("Optimizer") ||
          N.OpType.starts_with("InPlaceAccumulator"));
}

/// The free symbols of C's formulas, sorted, each once. A formula in the
/// fast univariate form names its symbol by pointer: a name is made once
/// per symbol, not once per node.
static std::vector<std::string> findFreeSymbols(const CostResult &C) {
  if (!C.Sym)
    return {};
  llvm::SmallPtrSet<sym::ExprRef, 4> Seen;
  std::set<std::string> Names;
  auto Take = [&](const sym::Count &X) {
    if (sym::ExprRef S = X.univariateSymbol()) {
      if (Seen.insert(S).second)
        Names.insert(S->name().str());
      return;
    }
    for (std::string &S : X.symbols())
      Names.insert(std::move(S));
  };
  const CostResult::Formulas &Sym = *C.Sym;
  for (const sym::Count *X : {&Sym.Fwd.Flops, &Sym.Fwd.Bytes, &Sym.Fwd.Transcendentals,
                              &Sym.Bwd.Flops, &Sym.Bwd.Bytes, &Sym.Bwd.Transcendentals,
                              &Sym.SavedActivationBytes})
    Take(*X);
  // A node's formula can cancel in the totals (rare); its symbols still count.
  for (const NodeCost &NC : C.Nodes)
    if (NC.Sym)
      Take(NC.Sym->fwdBytes());
  return {Names.begin(), Names.end()};
}

class CostWalker {
public:
  CostWalker(const Model &M, const Config &Cfg, CostResult &R)
      : M(M), Cfg(Cfg), R(R), NeedsGrad(*M.Main), Trainable(*M.Main) {
    R.Constants = ValueSet(*M.Main);
    FloatBytes = floatBytes(Cfg);
    if (Cfg.Inference && Cfg.KVAppendInPlace)
      for (const KVCacheEntry &E : findKVCache(*M.Main))
        CacheAppends.insert(E.Concat);
  }

  /// Errors: a --freeze pattern that is no glob or freezes nothing, a
  /// --trainable-input that names no floating-point graph input.
  llvm::Error markTrainable(const Graph &G);
  /// Weights the graph keeps in nodes (nodeParameter) are trained too.
  void markNodeParameters(const Graph &G);
  void markConstants(const Graph &G);
  void walk(const Graph &G, double Multiplier);
  void finish();

  /// Nodes that already compute a backward or an optimizer update
  /// (isTrainingOp), and the first of them.
  size_t TrainingOps = 0;
  const Node *FirstTrainingOp = nullptr;

private:
  const Model &M;
  const Config &Cfg;
  CostResult &R;
  std::optional<double> FloatBytes;
  ValueSet NeedsGrad;
  ValueSet Trainable;
  /// --freeze: the patterns, and whether each has matched a parameter.
  std::vector<llvm::GlobPattern> Freeze;
  std::vector<bool> FreezeMatched;
  llvm::DenseSet<const Value *> FrozenSeen;
  /// Adds a parameter to Trainable unless a --freeze pattern matches it.
  void train(const Value *V);
  std::map<std::string, size_t> Unmodeled;
  /// --kv-append in-place: the KV cache's Concats.
  llvm::DenseSet<const Node *> CacheAppends;

  /// Input I of a node costed by Rule (null: none) may carry a gradient.
  static bool differentiable(const OpRule *Rule, unsigned I) {
    return !(Rule && I < 32 && (Rule->NonDiffInputs >> I) & 1);
  }
  bool differentiable(const Node &N, unsigned I) const {
    return differentiable(findOpRule(N.Domain, N.OpType), I);
  }
  /// A node's row, in three steps: gradients (in graph order: what its
  /// inputs carry is final once their producers had theirs), model (its
  /// counts from its rule; reads only what the first step of earlier nodes
  /// wrote, so nodes may take it on any thread), account (in graph order:
  /// the totals).
  void costNode(const Node &N, double Multiplier, bool BodyNeedsBackward);
  CostContext context(const Node &N, const OpRule *Rule) const;
  /// (Returns the node's context, which the model step takes.)
  CostContext gradients(const Node &N, const OpRule *Rule, double Multiplier,
                        bool BodyNeedsBackward, NodeCost &NC);
  /// True when the node folds at load and had a cost to fold.
  bool model(const Node &N, const OpRule *Rule, const CostContext &C, NodeCost &NC) const;
  void account(const Node &N, double Multiplier, bool Folded, NodeCost &NC);
  /// walk of a large graph without control flow: the model step of its
  /// nodes on two threads (analyzer/Parallel.h).
  void walkOnTwoThreads(const Graph &G, double Multiplier);
  /// Inference: a product reads a DequantizeLinear'd integer weight as the
  /// integer tensor (and its scale and zero point), dequantizing in the
  /// kernel, as ONNX Runtime's QDQ fusion and MatMulNBits run it; when its
  /// other operand is dequantized from an integer tensor too, it multiplies
  /// in int8.
  void fuseDequantizedWeights(const Node &N, NodeCost &NC) const;
  /// Every output of N is a constant (computed from weights and constants).
  bool foldsAtLoad(const Node &N) const {
    bool Any = false;
    for (const Value *V : N.Outputs)
      if (V) {
        if (!R.Constants.count(V))
          return false;
        Any = true;
      }
    return Any && N.subgraphs().empty();
  }
  /// A value may carry a gradient: floating point, or of unknown type.
  static bool mayCarryGrad(const Value *V) {
    return V && (isFloatingPoint(V->Elem) || V->Elem == DType::Undefined);
  }
  /// Body inputs that stand for node inputs get their gradient flag; for
  /// Loop and Scan, carried values too, to a fixed point over the body. The
  /// bodies' flags are final afterwards.
  void seedBodies(const Node &N);
  /// What costNode would mark as needing a gradient in G, without costing.
  void propagate(const Graph &G);
  std::optional<double> tripCount(const Node &N, bool &Known) const;
  /// A Loop's trip count as a formula when costs may be formulas and shape
  /// inference found one (Model::LoopTrips); 1 otherwise.
  /// V's bytes: a number (0 when its size is unknown, as valueBytes has
  /// it), a formula when its dims hold symbols and costs may be formulas.
  sym::Count sizeCount(const Value *V) const;
  sym::Count symbolicTrips(const Node &N) const {
    auto It = M.LoopTrips.find(&N);
    if (!Cfg.SymbolicCosts || It == M.LoopTrips.end() || !It->second ||
        It->second->isConstant())
      return 1;
    return sym::Count::of(It->second);
  }
  /// Counts of the loop bodies being walked multiply by this formula (1:
  /// none); each body tensor saved for backward once (SymSaved).
  sym::Count SymTrips = 1;
  /// The formula nodes' costs (saved extras too), summed as the walk takes
  /// them.
  SymbolicSum SymTotals;
  llvm::DenseSet<const Value *> SymSaved;
  /// NC's counts (numbers or formulas) times SymTrips, as formulas.
  void multiplyBySymbolicTrips(NodeCost &NC);
  double branchFlops(const Graph &G);
};

/// Inputs of N that hold a layer's weights: Conv/ConvTranspose weight and
/// bias, Gemm B and C, either MatMul operand, a normalization's scale and
/// bias, an embedding Gather's table, RNN/GRU/LSTM W, R and B.
bool isWeightPosition(const Node &N, unsigned I) {
  if (!N.Domain.empty() && N.Domain != "com.microsoft")
    return false;
  llvm::StringRef Op = N.OpType;
  if (Op == "Conv" || Op == "ConvTranspose" || Op == "Gemm")
    return I == 1 || I == 2;
  if (Op == "MatMul")
    return I <= 1;
  if (Op == "BatchNormalization" || Op == "LayerNormalization" ||
      Op == "InstanceNormalization" || Op == "GroupNormalization")
    return I == 1 || I == 2;
  if (Op == "RMSNormalization" || Op == "SimplifiedLayerNormalization")
    return I == 1;
  if (Op == "Gather")
    return I == 0;
  if (Op == "RNN" || Op == "GRU" || Op == "LSTM")
    return I >= 1 && I <= 3;
  return false;
}

/// The tensor a trainer would update for weight input V, when the graph
/// computes V from constants alone: back through Cast, DequantizeLinear,
/// Reshape, Transpose and Identity (data input) to a Constant node, a
/// ConstantOfShape of a constant shape, or an integer initializer; the
/// parameter is the chain's first floating-point tensor. None for a chain
/// that reaches a float initializer (already a parameter), a graph input or
/// any other op.
const Value *nodeParameter(const Value *V) {
  const Value *Float = nullptr;
  for (unsigned Depth = 0; V && Depth < 16; ++Depth) {
    if (V->Kind != ValueKind::Intermediate) {
      bool IntInit = V->isInitializer() && !isFloatingPoint(V->Elem);
      return IntInit ? Float : nullptr;
    }
    const Node *P = V->producer();
    if (!P || !P->Domain.empty())
      return nullptr;
    if (isFloatingPoint(V->Elem))
      Float = V;
    if (P->OpType == "Constant")
      return Float;
    if (P->OpType == "ConstantOfShape") {
      const Value *Shp = P->input(0);
      bool ConstShape = !Shp || Shp->isInitializer() ||
                        (Shp->producer() && Shp->producer()->OpType == "Constant");
      return ConstShape ? Float : nullptr;
    }
    if (P->OpType != "Cast" && P->OpType != "DequantizeLinear" && P->OpType != "Reshape" &&
        P->OpType != "Transpose" && P->OpType != "Identity")
      return nullptr;
    V = P->input(0);
  }
  return nullptr;
}

void CostWalker::train(const Value *V) {
  bool Frozen = false;
  for (size_t I = 0; I < Freeze.size(); ++I)
    if (Freeze[I].match(V->Name)) {
      FreezeMatched[I] = true;
      Frozen = true;
    }
  if (!Frozen)
    Trainable.insert(V);
  else if (FrozenSeen.insert(V).second) {
    R.FreezeParams += V->numElements().value_or(0);
    ++R.FreezeTensors;
    if (!V->isInitializer()) {
      R.FreezeNodeParams += V->numElements().value_or(0);
      R.FrozenWeights.push_back(V);
    }
  }
}

void CostWalker::markNodeParameters(const Graph &G) {
  G.walk([&](const Node &N) {
    for (unsigned I = 0; I < N.Inputs.size(); ++I) {
      if (!N.Inputs[I] || !isWeightPosition(N, I))
        continue;
      const Value *P = nodeParameter(N.Inputs[I]);
      if (!P || P->numElements().value_or(0) <= 1 || Trainable.count(P))
        continue;
      train(P);
      if (!Trainable.count(P))
        continue;
      R.NodeParams += P->numElements().value_or(0);
      ++R.NodeParamTensors;
    }
  });
}

llvm::Error CostWalker::markTrainable(const Graph &G) {
  for (const std::string &Pat : Cfg.Freeze) {
    llvm::Expected<llvm::GlobPattern> GP = llvm::GlobPattern::create(Pat);
    if (!GP)
      return fileError(M.Path, "--freeze '" + Pat +
                                   "': not a glob pattern: " + llvm::toString(GP.takeError()));
    Freeze.push_back(std::move(*GP));
  }
  FreezeMatched.assign(Freeze.size(), false);
  // Single-element initializers (eps, 1/sqrt(d), clip bounds) are constants.
  G.walk([&](const Node &N) {
    for (unsigned I = 0; I < N.Inputs.size(); ++I) {
      const Value *V = N.Inputs[I];
      if (V && V->isInitializer() && isFloatingPoint(V->Elem) &&
          V->numElements().value_or(0) > 1 && differentiable(N, I))
        train(V);
    }
  });
  for (const std::string &Name : Cfg.TrainableInputs) {
    auto It = llvm::find_if(G.Inputs, [&](const Value *V) {
      return V->Name == Name && !V->isInitializer();
    });
    if (It == G.Inputs.end() || !isFloatingPoint((*It)->Elem))
      return fileError(M.Path, "--trainable-input '" + Name + "': " +
                                   (It == G.Inputs.end()
                                        ? "no graph input has this name"
                                        : "the input is not floating-point"));
    Trainable.insert(*It);
  }
  if (!Cfg.FreezeConstants)
    markNodeParameters(G);
  for (size_t I = 0; I < Freeze.size(); ++I)
    if (!FreezeMatched[I])
      return fileError(M.Path, "--freeze '" + Cfg.Freeze[I] +
                                   "' matches no trainable parameter (patterns match "
                                   "initializer names; 'ridge print' lists them)");
  // An inference pass counts the parameters but differentiates nothing.
  Trainable.forEach([&](const Value *V) {
    if (!Cfg.Inference)
      NeedsGrad.insert(V);
    R.TrainableParams += V->numElements().value_or(0);
  });
  // Frozen parameters: floating-point initializers not trained (integer
  // shapes and axes are not parameters).
  auto CountFrozen = [&](const Graph &Gr) {
    for (const Value *V : Gr.Initializers)
      if (isFloatingPoint(V->Elem) && !Trainable.count(V)) {
        R.FrozenInitElements += V->numElements().value_or(0);
        R.FrozenWeights.push_back(V);
      }
  };
  CountFrozen(G);
  G.walk([&](const Node &N) {
    for (const Graph *Sub : N.subgraphs())
      CountFrozen(*Sub);
  });
  return llvm::Error::success();
}

void CostWalker::markConstants(const Graph &G) {
  // A trained tensor is no constant, wherever it is kept: what is computed
  // from it is not either. (A Constant node's trained output stays in
  // Constants, as an initializer would be: a parameter, not an activation.)
  // (In inference no weight changes: what folds from weights alone, a
  // transposed or dequantized weight, is a constant too.)
  auto IsConst = [&](const Value *V) {
    if (Trainable.count(V) && !Cfg.Inference)
      return false;
    return V->isInitializer() || R.Constants.count(V) > 0;
  };
  G.walk([&](const Node &N) {
    if (!N.subgraphs().empty())
      return;
    bool Const = N.Domain.empty() && (N.OpType == "Shape" || N.OpType == "Size");
    if (!Const) {
      Const = true;
      for (const Value *V : N.Inputs)
        if (V && !IsConst(V))
          Const = false;
    }
    if (Const)
      for (const Value *V : N.Outputs)
        if (V)
          R.Constants.insert(V);
  });
}

void CostWalker::seedBodies(const Node &N) {
  bool IsLoop = N.OpType == "Loop", IsScan = N.OpType == "Scan";
  // Scan before opset 9 has sequence_lens first: body input K is input K+1.
  size_t Offset = IsScan && N.OpsetVersion > 0 && N.OpsetVersion < 9 ? 1 : 0;
  for (Graph *Sub : N.subgraphs()) {
    // Loop body inputs (iteration, cond, carried...) match the Loop's inputs
    // (M, cond, initial values...); Scan's (states..., scan elements...) its
    // inputs after the offset.
    for (size_t K = 0; K < Sub->Inputs.size(); ++K) {
      size_t NodeIdx = K + Offset;
      if ((IsLoop && K < 2) || NodeIdx >= N.Inputs.size())
        continue;
      if (N.Inputs[NodeIdx] && NeedsGrad.count(N.Inputs[NodeIdx]) &&
          differentiable(N, NodeIdx))
        NeedsGrad.insert(Sub->Inputs[K]);
    }
    // Carried values: (body input, body output carried into it). Loop: input
    // k >= 2 receives output k - 1; Scan: state k receives output k.
    llvm::SmallVector<std::pair<Value *, Value *>, 4> Carried;
    if (IsLoop)
      for (size_t K = 2; K < Sub->Inputs.size() && K - 1 < Sub->Outputs.size(); ++K)
        Carried.push_back({Sub->Inputs[K], Sub->Outputs[K - 1]});
    if (IsScan) {
      int64_t NumScan = N.attrInt("num_scan_inputs", 0);
      size_t States = Sub->Inputs.size() - std::min<size_t>(std::max<int64_t>(NumScan, 0),
                                                            Sub->Inputs.size());
      for (size_t K = 0; K < States && K < Sub->Outputs.size(); ++K)
        Carried.push_back({Sub->Inputs[K], Sub->Outputs[K]});
    }
    // Monotone: each round that changes anything flags one more carried
    // input, so at most |Carried| + 1 rounds (one without carried values).
    for (size_t Round = 0; Round <= Carried.size(); ++Round) {
      propagate(*Sub);
      bool Changed = false;
      for (auto &[In, Out] : Carried)
        if (NeedsGrad.count(Out) && mayCarryGrad(In) && NeedsGrad.insert(In))
          Changed = true;
      if (!Changed)
        break;
    }
  }
}

void CostWalker::propagate(const Graph &G) {
  for (const auto &NP : G.Nodes) {
    const Node &N = *NP;
    bool Any = false;
    if (!N.subgraphs().empty()) {
      seedBodies(N); // propagates over the bodies
      for (Graph *Sub : N.subgraphs())
        for (const Value *V : Sub->Outputs)
          Any |= NeedsGrad.count(V) > 0;
    }
    for (unsigned I = 0; I < N.Inputs.size(); ++I)
      Any |= N.Inputs[I] && NeedsGrad.count(N.Inputs[I]) && differentiable(N, I);
    if (Any)
      for (const Value *V : N.Outputs)
        if (mayCarryGrad(V))
          NeedsGrad.insert(V);
  }
}

std::optional<double> CostWalker::tripCount(const Node &N, bool &Known) const {
  Known = false;
  if (N.OpType == "Loop" || N.OpType == "SequenceMap") {
    // Shape inference's count first: the maximum, or the iterations bound
    // with --dim <loop>.trips=N of a loop its condition may stop early.
    auto It = M.LoopTrips.find(&N);
    if (It != M.LoopTrips.end() && It->second && It->second->constant()) {
      Known = true;
      return double(*It->second->constant());
    }
    if (const Value *Max = N.OpType == "Loop" ? N.input(0) : nullptr)
      if (Max->IntData && Max->IntData->size() == 1) {
        Known = true;
        return double((*Max->IntData)[0]);
      }
    if (Cfg.TripCount && N.OpType == "Loop") {
      Known = true;
      return double(*Cfg.TripCount);
    }
    // Else a formula (a maximum in the symbols, or the loop's own "trips"
    // symbol) the body's counts are multiplied by when costs may be formulas
    // (symbolicTrips).
    if (symbolicTrips(N).isFormula())
      Known = true;
    return std::nullopt;
  }
  // Scan: the scan axis of the first scan input (opset 8 has batch first).
  int64_t NumScan = N.attrInt("num_scan_inputs", 0);
  size_t First = N.Inputs.size() - std::min<size_t>(NumScan, N.Inputs.size());
  if (NumScan <= 0 || First >= N.Inputs.size() || !N.Inputs[First] ||
      !N.Inputs[First]->Shp)
    return std::nullopt;
  int64_t Axis = N.OpsetVersion < 9 ? 1 : 0;
  if (auto Axes = N.attrInts("scan_input_axes"); Axes && !Axes->empty())
    Axis = (*Axes)[0];
  const Shape &S = *N.Inputs[First]->Shp;
  if (Axis < 0)
    Axis += S.rank();
  if (Axis < 0 || Axis >= int64_t(S.rank()) || !S.Dims[Axis].isKnown())
    return std::nullopt;
  Known = true;
  return double(S.Dims[Axis].extent());
}

/// Forward FLOPs of a branch, to pick the costlier one. Costs it into a
/// scratch result so nothing is recorded twice.
double CostWalker::branchFlops(const Graph &G) {
  CostResult Scratch;
  CostWalker W(M, Cfg, Scratch);
  W.NeedsGrad = NeedsGrad;
  W.walk(G, 1);
  return Scratch.Fwd.Flops;
}

void CostWalker::walk(const Graph &G, double Multiplier) {
  if (G.Nodes.size() >= Cfg.TwoThreadsFrom && !SymTrips.isFormula() &&
      llvm::none_of(G.Nodes, [](const auto &NP) { return !NP->subgraphs().empty(); }))
    return walkOnTwoThreads(G, Multiplier);
  for (const auto &NP : G.Nodes) {
    const Node &N = *NP;
    llvm::SmallVector<Graph *, 2> Subs = N.subgraphList();
    size_t FirstBodyRow = R.Nodes.size();
    if (!Subs.empty()) {
      seedBodies(N);
      const Value *Cond = N.input(0);
      const Attribute *ThenA = N.attr("then_branch");
      if (N.OpType == "If" && Subs.size() == 2 && Cond && Cond->IntData &&
          Cond->IntData->size() == 1 && ThenA && !ThenA->graphs().empty()) {
        // A condition known from constants and shapes: the branch taken.
        const Graph *Then = ThenA->graphs()[0].get();
        bool TakeThen = (*Cond->IntData)[0] != 0;
        for (Graph *Sub : Subs)
          walk(*Sub, (Sub == Then) == TakeThen ? Multiplier : 0);
      } else if (N.OpType == "If" && Subs.size() == 2) {
        double A = branchFlops(*Subs[0]), B = branchFlops(*Subs[1]);
        walk(*Subs[0], A >= B ? Multiplier : 0);
        walk(*Subs[1], A >= B ? 0 : Multiplier);
      } else {
        bool Known = false;
        std::optional<double> Trips = N.OpType == "If" ? std::optional<double>(1.0)
                                                      : tripCount(N, Known);
        sym::Count Outer = SymTrips;
        if (!Trips && (N.OpType == "Loop" || N.OpType == "SequenceMap"))
          SymTrips = SymTrips * symbolicTrips(N);
        for (Graph *Sub : Subs)
          walk(*Sub, Multiplier * Trips.value_or(1));
        SymTrips = Outer;
      }
    }
    // A control-flow node needs backward when a node of its bodies does.
    bool BodyNeedsBackward = false;
    for (size_t I = FirstBodyRow; I < R.Nodes.size(); ++I)
      BodyNeedsBackward |= R.Nodes[I].NeedsBackward;
    costNode(N, Multiplier, BodyNeedsBackward);
  }
}

void CostWalker::walkOnTwoThreads(const Graph &G, double Multiplier) {
  size_t First = R.Nodes.size(), Count = G.Nodes.size();
  std::vector<const OpRule *> Rules(Count);
  for (size_t I = 0; I < Count; ++I) {
    const Node &N = *G.Nodes[I];
    Rules[I] = findOpRule(N.Domain, N.OpType);
    gradients(N, Rules[I], Multiplier, false, R.Nodes.emplace_back());
  }
  // Each node's context is made again where it is modeled (NeedsGrad is
  // final now, so it is the one gradients made), not kept for every node.
  std::vector<uint8_t> Folded(Count);
  onTwoThreads(Count, 0, [&](size_t I, unsigned) {
    const Node &N = *G.Nodes[I];
    Folded[I] = model(N, Rules[I], context(N, Rules[I]), R.Nodes[First + I]);
  });
  for (size_t I = 0; I < Count; ++I)
    account(*G.Nodes[I], Multiplier, Folded[I], R.Nodes[First + I]);
}

/// Ops that multiply integer tensors (their inputs int8/uint8).
bool integerMath(const Node &N) {
  llvm::StringRef Op = N.OpType;
  if (N.Domain.empty())
    return Op == "QLinearConv" || Op == "QLinearMatMul" || Op == "ConvInteger" ||
           Op == "MatMulInteger";
  return N.Domain == "com.microsoft" &&
         (Op == "QLinearConv" || Op == "QLinearMatMul" || Op == "MatMulIntegerToFloat" ||
          Op == "DynamicQuantizeMatMul" || Op == "QAttention" || Op == "QGemm");
}

bool isFloat8(DType T) {
  return T == DType::Float8E4M3FN || T == DType::Float8E4M3FNUZ || T == DType::Float8E5M2 ||
         T == DType::Float8E5M2FNUZ;
}

/// The DequantizeLinear (default domain) of an integer or float8 tensor that
/// produces V, if V is one.
const Node *dequantizedFromQuantized(const Value *V) {
  const Node *P = V ? V->producer() : nullptr;
  if (!P || !P->Domain.empty() || P->OpType != "DequantizeLinear" || !P->input(0))
    return nullptr;
  DType T = P->input(0)->Elem;
  return T == DType::Int8 || T == DType::UInt8 || T == DType::Int4 || T == DType::UInt4 ||
                 T == DType::Int16 || T == DType::UInt16 || isFloat8(T)
             ? P
             : nullptr;
}

sym::Count CostWalker::sizeCount(const Value *V) const {
  return Cfg.SymbolicCosts ? determinedBytes(V, FloatBytes) : valueBytes(V, FloatBytes);
}

void CostWalker::fuseDequantizedWeights(const Node &N, NodeCost &NC) const {
  llvm::StringRef Op = N.OpType;
  if (!N.Domain.empty() ||
      (Op != "Conv" && Op != "ConvTranspose" && Op != "MatMul" && Op != "Gemm"))
    return;
  // The stored types of a dequantized weight and activation (Undefined:
  // not dequantized from a quantized type).
  DType WeightQuantized = DType::Undefined, ActivationQuantized = DType::Undefined;
  for (unsigned I = 0; I < N.Inputs.size() && I < 2; ++I) {
    const Node *DQ = dequantizedFromQuantized(N.Inputs[I]);
    if (!DQ)
      continue;
    if (!R.Constants.count(N.Inputs[I])) {
      // A runtime tensor, quantized then dequantized.
      ActivationQuantized = DQ->input(0)->Elem;
      continue;
    }
    WeightQuantized = DQ->input(0)->Elem;
    sym::Count Stored = 0;
    for (const Value *In : DQ->Inputs)
      Stored += In ? sizeCount(In) : sym::Count(0);
    sym::Count Change = Stored - sizeCount(N.Inputs[I]);
    if (NC.Sym) {
      NC.Sym->setFwdBytes(NC.Sym->fwdBytes() + Change);
    } else if (Change.isNumber()) {
      NC.Fwd.Bytes += Change.number();
    } else { // a weight whose shape holds a symbol: the node's bytes become a formula
      PhaseCount Fwd = countsOf(NC.Fwd);
      Fwd.Bytes += Change;
      NC.Sym.emplace(SymbolicCost{Fwd, countsOf(NC.Bwd), NC.savedBytes()});
      NC.Fwd = NC.Bwd = PhaseCost();
      NC.setSavedBytes(0);
    }
  }
  // Both operands quantized: a runtime multiplies them as stored, integers
  // on the int8 units, float8 on the float8 units (mixed: dequantized).
  if (WeightQuantized == DType::Undefined || ActivationQuantized == DType::Undefined)
    return;
  if (!isFloat8(WeightQuantized) && !isFloat8(ActivationQuantized))
    NC.QuantizedMath = DType::Int8;
  else if (isFloat8(WeightQuantized) && isFloat8(ActivationQuantized))
    NC.QuantizedMath = WeightQuantized;
}

void CostWalker::costNode(const Node &N, double Multiplier, bool BodyNeedsBackward) {
  NodeCost NC;
  const OpRule *Rule = findOpRule(N.Domain, N.OpType);
  bool Folded = model(N, Rule, gradients(N, Rule, Multiplier, BodyNeedsBackward, NC), NC);
  account(N, Multiplier, Folded, NC);
  R.Nodes.push_back(std::move(NC));
}

CostContext CostWalker::context(const Node &N, const OpRule *Rule) const {
  CostContext C{N, {}, FloatBytes, Cfg.Inference, Cfg.SymbolicCosts};
  for (unsigned I = 0; I < N.Inputs.size(); ++I)
    C.InputNeedsGrad.push_back(N.Inputs[I] && NeedsGrad.count(N.Inputs[I]) &&
                               differentiable(Rule, I));
  return C;
}

CostContext CostWalker::gradients(const Node &N, const OpRule *Rule, double Multiplier,
                                  bool BodyNeedsBackward, NodeCost &NC) {
  if (isTrainingOp(N) && !TrainingOps++)
    FirstTrainingOp = &N;
  NC.N = &N;
  NC.setMultiplier(Multiplier);
  CostContext C = context(N, Rule);
  // Gradients flow on: an output needs one if any differentiable input does.
  bool AnyGrad = C.anyGrad();
  if (!AnyGrad)
    for (Graph *Sub : N.subgraphs())
      for (const Value *V : Sub->Outputs)
        AnyGrad |= NeedsGrad.count(V) > 0;
  if (AnyGrad)
    for (const Value *V : N.Outputs)
      if (mayCarryGrad(V))
        NeedsGrad.insert(V);
  NC.NeedsBackward = C.anyGrad() || BodyNeedsBackward;
  for (unsigned I = 0; I < C.InputNeedsGrad.size() && I < 8; ++I)
    NC.GradInputs |= uint8_t(C.InputNeedsGrad[I]) << I;
  return C;
}

bool CostWalker::model(const Node &N, const OpRule *Rule, const CostContext &C,
                       NodeCost &NC) const {
  if (!Rule) {
    NC.setUnmodeled("no cost rule");
    if (const Function *F = M.findFunction(N.Domain, N.OpType))
      NC.setUnmodeled("call of model-local function " + F->Domain + "." + F->Name +
                      " (not inlined)");
  } else {
    applyRule(*Rule, C, NC);
  }
  if (auto It = M.InvalidNodes.find(&N); It != M.InvalidNodes.end())
    NC.setUnmodeled(It->second);
  if ((N.OpType == "Loop" || N.OpType == "Scan" || N.OpType == "SequenceMap") &&
      N.Domain.empty()) {
    bool Known = false;
    tripCount(N, Known);
    if (!Known) {
      auto It = M.LoopTrips.find(&N);
      std::string Bind;
      if (It != M.LoopTrips.end() && It->second)
        for (const std::string &S : sym::symbols(It->second))
          Bind += (Bind.empty() ? "bind --dim " : " --dim ") + S + "=N";
      if (Bind.empty() && N.OpType == "Loop")
        Bind = "pass --trip-count N";
      NC.setUnmodeled(N.OpType == "Loop" ? "trip count unknown: body counted once (" + Bind + ")"
                      : N.OpType == "SequenceMap"
                          ? "sequence length unknown: body counted once (" + Bind + ")"
                          : "scan length unknown: body counted once");
    }
  }
  NC.Modeled = NC.unmodeled().empty();
  if (NC.Modeled)
    NC.QuantizedMath = integerMath(N) ? DType::Int8 : DType::Undefined;
  if (NC.Modeled && Cfg.Inference)
    fuseDequantizedWeights(N, NC);
  // A cache append in place reads the new keys or values and writes them
  // into the cache's next slots; the past is neither read nor copied.
  if (NC.Modeled && CacheAppends.contains(&N)) {
    if (NC.Sym)
      NC.Sym->setFwdBytes(2 * sizeCount(N.input(1)));
    else
      NC.Fwd.Bytes = 2 * valueBytes(N.input(1), FloatBytes);
  }
  // An inference runtime folds what depends on weights and constants alone
  // (a transposed or dequantized weight) once, at load (ONNX Runtime's
  // constant folding): no per-pass cost.
  bool Folded = false;
  if (NC.Modeled && Cfg.Inference && N.Domain.empty() && N.OpType != "Constant" &&
      foldsAtLoad(N)) {
    // (A formula here is one in a weight's own symbolic dim: it counts.)
    Folded = NC.Fwd.Flops + NC.Fwd.Bytes + NC.Fwd.Transcendentals > 0 || NC.Sym;
    NC.Fwd = PhaseCost();
    if (NC.Sym)
      NC.Sym->setFwd(PhaseCount());
  }
  return Folded;
}

void CostWalker::account(const Node &N, double Multiplier, bool Folded, NodeCost &NC) {
  R.FoldedNodes += Folded;
  if (NC.Modeled && SymTrips.isFormula())
    multiplyBySymbolicTrips(NC);
  if (NC.Modeled) {
    ++R.ModeledNodes;
    R.Fwd += NC.Fwd * Multiplier;
    R.Bwd += NC.Bwd * Multiplier;
    if (NC.Sym) {
      if (!R.Sym)
        R.Sym.emplace();
      ++R.Sym->Nodes;
      SymTotals.add(*NC.Sym, Multiplier);
    }
  } else {
    ++R.UnmodeledNodes;
    ++Unmodeled[N.qualifiedOpType() + " (" + NC.unmodeled().str() + ")"];
    for (const Value *V : N.Outputs)
      if (V)
        R.UnmodeledFlopsEstimate += V->numElements().value_or(0) * Multiplier;
    // An op that cannot be costed contributes nothing it could be wrong
    // about: its partial numbers are dropped, not summed.
    NC.Fwd = NC.Bwd = PhaseCost();
    NC.clearSaved();
    NC.setSavedBytes(0);
    NC.Sym.reset();
  }
}

void CostWalker::multiplyBySymbolicTrips(NodeCost &NC) {
  SymbolicCost S = NC.Sym ? *NC.Sym
                          : SymbolicCost{countsOf(NC.Fwd), countsOf(NC.Bwd), NC.savedBytes()};
  auto Scale = [&](PhaseCount &P) {
    P.Flops = P.Flops * SymTrips;
    P.Macs = P.Macs * SymTrips;
    P.Transcendentals = P.Transcendentals * SymTrips;
    P.Bytes = P.Bytes * SymTrips;
  };
  PhaseCount Fwd = S.fwd(), Bwd = S.bwd();
  Scale(Fwd);
  Scale(Bwd);
  S.setFwd(Fwd);
  S.setBwd(Bwd);
  // Tensors saved for backward are per iteration: each body tensor once.
  sym::Count Saved = S.savedBytes();
  for (const Value *V : NC.saved())
    if (R.isActivation(V) && SymSaved.insert(V).second)
      Saved += valueCount(V, FloatBytes);
  S.setSavedBytes(Saved * SymTrips);
  NC.clearSaved();
  NC.Fwd = NC.Bwd = PhaseCost();
  NC.setSavedBytes(0);
  NC.Sym.emplace(std::move(S));
}

namespace {
/// Saved activations: each distinct tensor once (Relu's output is also the
/// next MatMul's input), with the largest multiplier of the nodes that save
/// it; initializers (parameters) and constants (Constant outputs and what
/// folds from them) excluded. By value (a ValueMap, not a hash map of a
/// million pointers), in the order first saved.
struct DistinctSaved {
  std::vector<const Value *> Values;
  ValueMap<double> Mult;
  DistinctSaved(const Model &M, const CostResult &R) : Mult(*M.Main, -1) {
    for (const NodeCost &NC : R.Nodes)
      for (const Value *V : NC.saved())
        if (R.isActivation(V)) {
          double &X = Mult[V];
          if (X < 0) {
            Values.push_back(V);
            X = 0;
          }
          X = std::max(X, NC.multiplier());
        }
  }
};

/// The numeric part of SavedActivationBytes: every node's extras, then each
/// distinct saved tensor of known size.
double savedActivationBytes(const CostResult &R, const DistinctSaved &D,
                            std::optional<double> FloatBytes) {
  double Sum = 0;
  for (const NodeCost &NC : R.Nodes)
    Sum += NC.savedBytes() * NC.multiplier();
  for (const Value *V : D.Values)
    Sum += valueBytes(V, FloatBytes) * D.Mult.lookup(V);
  return Sum;
}
} // namespace

void CostWalker::finish() {
  DistinctSaved Distinct(M, R);
  R.SavedActivationBytes = savedActivationBytes(R, Distinct, FloatBytes);
  if (R.Sym) {
    // The same sums with the formulas: numeric nodes' part, then the formula
    // nodes' extras (their sum the walk took with their costs) and each saved
    // tensor whose bytes are a formula.
    sym::Count &S = R.Sym->SavedActivationBytes;
    S = R.SavedActivationBytes;
    S += SymTotals.savedBytes();
    for (const Value *V : Distinct.Values)
      if (!V->numElements())
        S += valueCount(V, FloatBytes) * Distinct.Mult[V];
    R.Sym->Fwd = SymTotals.fwd();
    R.Sym->Bwd = SymTotals.bwd();
    R.Sym->Fwd += countsOf(R.Fwd);
    R.Sym->Bwd += countsOf(R.Bwd);
  }
  R.FreeSymbols = findFreeSymbols(R);
  for (const auto &[What, Count] : Unmodeled)
    R.UnmodeledOps.emplace_back(What, Count);
  // The walker ends here: its sets move.
  R.NeedsGrad = std::move(NeedsGrad);
  R.Trainable = std::move(Trainable);
  std::sort(R.UnmodeledOps.begin(), R.UnmodeledOps.end(), [](auto &A, auto &B) {
    return A.second != B.second ? A.second > B.second : A.first < B.first;
  });
}

} // namespace

std::array<double, 4> SymbolicCost::coefficientsOf(unsigned K) const {
  sym::EngineScope InEngine;
  std::array<double, Degrees> Out{};
  unpackCells(K, 1, [&](unsigned, const std::array<double, Degrees> &C) { Out = C; });
  return Out;
}

std::array<double, 9> SymbolicCost::valuesAt(double X) const {
  sym::EngineScope InEngine;
  static_assert(Cells == 9, "valuesAt's array holds every cell");
  assert(!General && "valuesAt: a general cell has no coefficients");
  std::array<double, Cells> Out{};
  // As cellOf's count evaluates: a number is itself, the fast form
  // Horner's rule in X (Count::evaluate).
  unpackCells(0, Cells, [&](unsigned K, const std::array<double, Degrees> &C) {
    Out[K] = isPoly(C) ? C[0] + X * (C[1] + X * (C[2] + X * C[3])) : C[0];
  });
  return Out;
}

sym::Count SymbolicCost::get(unsigned K) const {
  sym::EngineScope InEngine;
  if (General)
    for (const auto &[Cell, C] : *General)
      if (Cell == K)
        return C;
  return cellOf(coefficientsOf(K));
}

PhaseCount SymbolicCost::phase(unsigned K) const {
  sym::EngineScope InEngine;
  if (General)
    return {get(K), get(K + 1), get(K + 2), get(K + 3)};
  std::array<sym::Count, 4> P;
  unpackCells(K, 4, [&](unsigned Cell, const std::array<double, Degrees> &C) {
    P[Cell - K] = cellOf(C);
  });
  return {P[0], P[1], P[2], P[3]};
}

void SymbolicSum::add(const SymbolicCost &C, double K) {
  sym::EngineScope InEngine;
  if (C.General || (C.Symbol && Symbol && C.Symbol != Symbol)) {
    if (!Rest)
      Rest = std::make_unique<std::array<sym::Count, Cells>>();
    for (unsigned Cell = 0; Cell < Cells; ++Cell)
      (*Rest)[Cell] += C.get(Cell) * K;
    return;
  }
  if (C.Symbol)
    Symbol = C.Symbol;
  size_t I = 0;
  for (uint64_t M = C.Mask; M; M &= M - 1)
    Coef[llvm::countr_zero(M)] += C.Coefs[I++] * K;
}

void SymbolicSum::add(const PhaseCost &Fwd, const PhaseCost &Bwd, double K) {
  const double *All[8] = {&Fwd.Flops, &Fwd.Macs, &Fwd.Transcendentals, &Fwd.Bytes,
                          &Bwd.Flops, &Bwd.Macs, &Bwd.Transcendentals, &Bwd.Bytes};
  for (unsigned Cell = 0; Cell < 8; ++Cell)
    Coef[Degrees * Cell] += *All[Cell] * K;
}

void SymbolicSum::add(const SymbolicSum &O) {
  sym::EngineScope InEngine;
  bool Apart = O.Symbol && Symbol && O.Symbol != Symbol;
  if (O.Rest || Apart) {
    if (!Rest)
      Rest = std::make_unique<std::array<sym::Count, Cells>>();
    for (unsigned Cell = 0; Cell < Cells; ++Cell)
      (*Rest)[Cell] += Apart ? O.cell(Cell) : (*O.Rest)[Cell];
    if (Apart)
      return;
  }
  if (O.Symbol)
    Symbol = O.Symbol;
  for (size_t I = 0; I < Coef.size(); ++I)
    Coef[I] += O.Coef[I];
}

sym::Count SymbolicSum::cell(unsigned K) const {
  sym::EngineScope InEngine;
  std::array<double, Degrees> C;
  std::copy_n(Coef.begin() + Degrees * K, Degrees, C.begin());
  sym::Count Sum = C[1] != 0 || C[2] != 0 || C[3] != 0 ? sym::Count::univariateOf(Symbol, C)
                                                      : sym::Count(C[0]);
  return Rest ? Sum + (*Rest)[K] : Sum;
}

SymbolicCost::SymbolicCost(const PhaseCount &Fwd, const PhaseCount &Bwd,
                           const sym::Count &SavedBytes) {
  sym::EngineScope InEngine;
  // Every cell's coefficients gathered first, so that the packed list is
  // sized once.
  const sym::Count *All[Cells] = {&Fwd.Flops, &Fwd.Macs, &Fwd.Transcendentals, &Fwd.Bytes,
                                  &Bwd.Flops, &Bwd.Macs, &Bwd.Transcendentals, &Bwd.Bytes,
                                  &SavedBytes};
  std::array<double, Cells * Degrees> Packed;
  size_t N = 0;
  for (unsigned K = 0; K < Cells; ++K) {
    std::array<double, Degrees> C;
    if (!coefficients(*All[K], C)) {
      if (!General)
        General = std::make_unique<GeneralCells>();
      General->emplace_back(uint8_t(K), *All[K]);
      continue;
    }
    for (unsigned D = 0; D < Degrees; ++D)
      if (C[D] != 0) {
        Packed[N++] = C[D];
        Mask |= uint64_t(1) << (Degrees * K + D);
      }
  }
  Coefs.assign(Packed.begin(), Packed.begin() + N);
}

bool SymbolicCost::coefficients(const sym::Count &C, std::array<double, Degrees> &Out) {
  sym::EngineScope InEngine;
  Out = {};
  if (C.isNumber()) {
    Out[0] = C.number();
    return true;
  }
  auto U = C.univariate();
  if (!U || (Symbol && Symbol != C.univariateSymbol()))
    return false;
  Out = *U;
  Symbol = C.univariateSymbol();
  return true;
}

void SymbolicCost::set(unsigned K, const sym::Count &C) {
  sym::EngineScope InEngine;
  if (General) {
    llvm::erase_if(*General, [&](const auto &E) { return E.first == K; });
    if (General->empty())
      General.reset();
  }
  // Cell K's old coefficients out, then its new nonzero ones in, in place.
  unsigned First = Degrees * K;
  uint64_t CellBits = uint64_t(0xF) << First;
  size_t At = llvm::popcount(Mask & ((uint64_t(1) << First) - 1));
  Coefs.erase(Coefs.begin() + At, Coefs.begin() + At + llvm::popcount(Mask & CellBits));
  Mask &= ~CellBits;
  std::array<double, Degrees> New;
  if (!coefficients(C, New)) {
    if (!General)
      General = std::make_unique<GeneralCells>();
    General->emplace_back(uint8_t(K), C);
    return;
  }
  for (unsigned D = 0; D < Degrees; ++D)
    if (New[D] != 0) {
      Coefs.insert(Coefs.begin() + At++, New[D]);
      Mask |= uint64_t(1) << (First + D);
    }
}

llvm::Error ridge::bindCosts(CostResult &C, const Model &M, const sym::Binding &Bind,
                            std::optional<double> FloatBytes) {
  auto At = [&](const NodeCost &NC, const sym::Count &X, double &Out) -> llvm::Error {
    llvm::Expected<double> V = X.evaluate(Bind);
    if (!V)
      return fileError(M.Path, formatv("node '{0}' ({1}): {2} does not evaluate: {3}",
                                       NC.N->Name, NC.N->qualifiedOpType(), X.str(),
                                       llvm::toString(V.takeError())));
    Out = *V;
    return llvm::Error::success();
  };
  auto Phase = [&](const NodeCost &NC, const PhaseCount &P, PhaseCost &Out) -> llvm::Error {
    for (auto [X, O] : {std::pair{&P.Flops, &Out.Flops}, {&P.Macs, &Out.Macs},
                        {&P.Transcendentals, &Out.Transcendentals}, {&P.Bytes, &Out.Bytes}})
      if (llvm::Error E = At(NC, *X, *O))
        return E;
    return llvm::Error::success();
  };
  // Per node, then the totals as the walk sums them (in the same order).
  C.Fwd = C.Bwd = PhaseCost();
  C.UnmodeledFlopsEstimate = 0;
  for (NodeCost &NC : C.Nodes) {
    // The packed form in one bound symbol (nearly every node of a plan,
    // bound to micro-batch 1): its cells evaluated in place.
    std::optional<int64_t> X;
    if (NC.Sym && !NC.Sym->hasGeneralCells() &&
        (!NC.Sym->symbol() || (X = Bind(NC.Sym->symbol()->name())))) {
      std::array<double, 9> V = NC.Sym->valuesAt(X ? double(*X) : 0);
      NC.Fwd = {V[0], V[1], V[2], V[3]};
      NC.Bwd = {V[4], V[5], V[6], V[7]};
      NC.setSavedBytes(V[8]);
      NC.Sym.reset();
    } else if (NC.Sym) {
      if (llvm::Error E = Phase(NC, NC.Sym->fwd(), NC.Fwd))
        return E;
      if (llvm::Error E = Phase(NC, NC.Sym->bwd(), NC.Bwd))
        return E;
      double Saved = 0;
      if (llvm::Error E = At(NC, NC.Sym->savedBytes(), Saved))
        return E;
      NC.setSavedBytes(Saved);
      NC.Sym.reset();
    }
    if (NC.Modeled) {
      C.Fwd += NC.Fwd * NC.multiplier();
      C.Bwd += NC.Bwd * NC.multiplier();
    } else {
      for (const Value *V : NC.N->Outputs)
        if (V)
          C.UnmodeledFlopsEstimate += V->numElements().value_or(0) * NC.multiplier();
    }
  }
  C.SavedActivationBytes = savedActivationBytes(C, DistinctSaved(M, C), FloatBytes);
  // A trainable graph input's size may have held a symbol.
  C.TrainableParams = 0;
  C.Trainable.forEach(
      [&](const Value *V) { C.TrainableParams += V->numElements().value_or(0); });
  C.Sym.reset();
  C.FreeSymbols.clear();
  return llvm::Error::success();
}

llvm::Error ridge::needsNumbers(const Model &M, const CostResult &C, llvm::StringRef What) {
  std::string Names, Bind;
  for (const std::string &S : C.freeSymbols()) {
    Names += (Names.empty() ? "" : ", ") + sym::symbol(S)->str();
    Bind += (Bind.empty() ? "" : " ") + ("--dim " + S + "=VALUE");
  }
  return fileError(M.Path, What + " need(s) numbers, and " + std::to_string(C.Sym->Nodes) +
                               " node(s) cost formulas in " + Names + ": bind them (" + Bind +
                               ")");
}

llvm::Expected<CostResult> CostAnalysis::run(Model &M, AnalysisManager &AM) {
  CostResult R;
  R.Nodes.reserve(M.Main->numNodesRecursive());
  CostWalker W(M, AM.config(), R);
  if (llvm::Error E = W.markTrainable(*M.Main))
    return std::move(E);
  W.markConstants(*M.Main);
  W.walk(*M.Main, 1);
  W.finish();
  // ridge costs every node as forward work and adds a training step's
  // backward and optimizer: a graph that holds its own has them counted
  // twice.
  if (W.TrainingOps)
    AM.diags().warn(M.Path,
                    formatv("{0} node(s) already compute a backward or an optimizer update, "
                            "the first '{1}' ({2}): ridge costs every node as forward work "
                            "and adds a training step's backward and optimizer on top, so "
                            "this graph's own are counted twice; give ridge the forward "
                            "graph (the model as exported for inference)",
                            W.TrainingOps, W.FirstTrainingOp->Name,
                            W.FirstTrainingOp->qualifiedOpType()));
  if (AM.config().Strict && R.UnmodeledNodes) {
    std::string List;
    for (const auto &[What, Count] : R.UnmodeledOps)
      List += formatv("\n  {0} x{1}", What, Count).str();
    return fileError(M.Path, formatv("--strict: {0} node(s) cannot be costed:{1}",
                                     R.UnmodeledNodes, List));
  }
  return R;
}
