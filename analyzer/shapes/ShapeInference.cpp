//===- ShapeInference.cpp - Driving ridge's shape rules over a graph ------===//
//
// One rule per op type (RuleTable.cpp), applied to each node in topological
// order; loop bodies are inferred again where their state changes shape, and
// calls of model-local functions through the function's body. Rules follow the
// ONNX operator specs per opset; where ONNX 1.12's own inference differs from
// the spec or the runtimes, the rule follows the spec.
//
//===----------------------------------------------------------------------===//
#include "analyzer/shapes/Rules.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

namespace ridge::shapes {

void Inferencer::inferGraph(Graph &G) {
  for (const auto &N : G.Nodes)
    inferNode(*N);
}

void Inferencer::inferNode(Node &N) {
  if (RuleFn Fn = findRule(N.Domain, N.OpType)) {
    Ctx C(*this, N, N.OpsetVersion ? N.OpsetVersion : DefaultOpset);
    DimOverflow = false;
    AssumedBroadcasts.clear();
    Fn(C);
    if (DimOverflow && !N.Outputs.empty() && N.Outputs[0])
      Conflicts.push_back({N.Name.str(), N.Outputs[0]->Name.str(), "", "a dim that overflows int64"});
    DimOverflow = false;
    for (const auto &[E, K] : AssumedBroadcasts)
      if (Assumptions.empty() || Assumptions.back().Node != N.Name ||
          Assumptions.back().Dim != E)
        Assumptions.push_back({N.Name.str(), E, K});
    AssumedBroadcasts.clear();
    // Subgraphs of ops other than the control flow ones (which infer theirs).
    if (Fn != ruleIf && Fn != ruleLoop && Fn != ruleScan && Fn != ruleSequenceMap)
      for (const Attribute &A : N.Attrs)
        for (const auto &Sub : A.graphs())
          inferGraph(*Sub);
    return;
  }
  if (const Function *F = M.findFunction(N.Domain, N.OpType)) {
    inferCall(N, *F);
    return;
  }
  UnknownOps.insert(N.Domain.empty() ? N.OpType.str()
                                     : (llvm::Twine(N.Domain.ref()) + ":" + N.OpType.ref()).str());
  for (Graph *Sub : N.subgraphs())
    inferGraph(*Sub);
}

/// What inferBody restores before a second pass.
struct ValueState {
  Value *V;
  DType Elem;
  std::optional<Shape> Shp;
  Boxed<SmallVector<int64_t, 4>> IntData;
};

static void snapshot(Graph &G, std::vector<ValueState> &Out) {
  for (Value &V : G.Values)
    Out.push_back({&V, V.Elem, V.Shp, V.IntData});
  for (const auto &N : G.Nodes)
    for (Graph *Sub : N->subgraphs())
      snapshot(*Sub, Out);
}

void Inferencer::inferBody(Graph &Body, ArrayRef<std::pair<Value *, Value *>> Carried,
                           GeneralizeFn Generalize) {
  std::vector<ValueState> Saved;
  if (!Carried.empty())
    snapshot(Body, Saved);
  inferGraph(Body);
  // A state whose shape the body changes: generalize and infer again.
  SmallVector<std::optional<Shape>, 4> General;
  bool Again = false;
  for (size_t K = 0; K < Carried.size(); ++K) {
    const auto &[In, Out] = Carried[K];
    std::optional<Shape> G = In->Shp;
    if (In->Shp) {
      if (!Out->Shp || Out->Shp->rank() != In->Shp->rank()) {
        G.reset();
        Again = true;
      } else {
        for (size_t I = 0; I < G->rank(); ++I)
          if (!(G->Dims[I] == Out->Shp->Dims[I])) {
            G->Dims[I] = Generalize ? Generalize(K, I, G->Dims[I], Out->Shp->Dims[I]) : Dim{};
            Again = true;
          }
      }
    }
    General.push_back(std::move(G));
  }
  if (!Again)
    return;
  LostShapes.clear();
  // What the first pass found invalid is judged again on the generalized
  // shapes.
  if (!Invalid.empty())
    Body.walk([&](const Node &N) { Invalid.erase(&N); });
  for (ValueState &S : Saved) {
    S.V->Elem = S.Elem;
    S.V->Shp = std::move(S.Shp);
    S.V->IntData = std::move(S.IntData);
    Vals.erase(S.V);
    FVals.erase(S.V);
    if (S.V->Kind != ValueKind::GraphInput)
      Elems.erase(S.V);
  }
  for (size_t K = 0; K < Carried.size(); ++K) {
    Value *In = Carried[K].first;
    // The generalized type, unless the declared one has another rank (it
    // then stays).
    if (General[K] && (!In->Shp || In->Shp->rank() == General[K]->rank()))
      In->Shp = General[K];
  }
  inferGraph(Body);
}

void Inferencer::inferCall(Node &N, const Function &F) {
  Graph &B = *F.Body;
  if (CallDepth > 8)
    return;
  ++CallDepth;
  LostShapes.clear(); // (the body's values are inferred anew for this call)
  for (Value &V : B.Values) {
    V.Elem = DType::Undefined;
    V.Shp.reset();
    V.IntData.reset();
    Vals.erase(&V);
    FVals.erase(&V);
  }
  for (size_t I = 0; I < B.Inputs.size() && I < N.Inputs.size(); ++I) {
    Value *Formal = B.Inputs[I], *Actual = N.Inputs[I];
    if (!Actual)
      continue;
    Formal->Elem = Actual->Elem;
    Formal->Shp = Actual->Shp;
    Formal->IntData = Actual->IntData;
    auto It = Vals.find(Actual);
    if (It != Vals.end()) {
      IVec Copy = It->second;
      Vals[Formal] = std::move(Copy);
    }
    auto FIt = FVals.find(Actual);
    if (FIt != FVals.end()) {
      FVec Copy = FIt->second;
      FVals[Formal] = std::move(Copy);
    }
  }
  inferGraph(B);
  for (size_t I = 0; I < B.Outputs.size() && I < N.Outputs.size(); ++I) {
    Value *Formal = B.Outputs[I], *Actual = N.Outputs[I];
    if (!Actual)
      continue;
    typeLike(*Actual, *Formal);
    auto It = Vals.find(Formal);
    if (It != Vals.end() && !Vals.count(Actual)) {
      IVec Copy = It->second;
      Vals[Actual] = std::move(Copy);
      bool AllKnown = llvm::all_of(Vals[Actual], [](const IV &X) { return X.Known; });
      if (AllKnown && !Actual->IntData &&
          (Actual->Elem == DType::Int64 || Actual->Elem == DType::Int32)) {
        Actual->IntData.emplace();
        for (const IV &X : Vals[Actual])
          Actual->IntData->push_back(X.V);
      }
    }
  }
  --CallDepth;
}

/// A node is inferred when each output has a shape (or, for a sequence or
/// optional, an element type).
static void countStats(const Graph &G, const Inferencer &I, ShapeInferenceStats &S) {
  for (const auto &N : G.Nodes) {
    ++S.Nodes;
    bool All = true;
    for (Value *V : N->Outputs)
      if (V && !V->Shp && !I.Elems.count(V))
        All = false;
    ++(All ? S.Inferred : S.Unknown);
    for (const Attribute &A : N->Attrs)
      for (const auto &Sub : A.graphs())
        countStats(*Sub, I, S);
  }
}

} // namespace ridge::shapes

using namespace ridge;
using namespace ridge::shapes;

ShapeInferenceStats ridge::inferShapes(Graph &G, const Model &M) {
  Inferencer I(M);
  I.inferGraph(G);
  ShapeInferenceStats S;
  countStats(G, I, S);
  for (const auto &E : I.UnknownOps)
    S.UnknownOps.push_back(E.getKey().str());
  S.DataSymbols = std::move(I.DataSymbols);
  S.Conflicts = std::move(I.Conflicts);
  S.Assumptions = std::move(I.Assumptions);
  S.LoopTrips = std::move(I.LoopTrips);
  S.Invalid = std::move(I.Invalid);
  llvm::sort(S.UnknownOps);
  return S;
}

bool ridge::hasShapeRule(StringRef Domain, StringRef OpType) {
  return findRule(Domain, OpType) != nullptr;
}
