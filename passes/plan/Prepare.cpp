//===- Prepare.cpp - The planner: per-position costs from the model -------===//
#include "passes/plan/PlannerImpl.h"

using namespace ridge;

namespace ridge::plan {

namespace {

/// C as a polynomial in the symbol Batch alone (degree <= 3); none when it
/// is unknown or holds another symbol or atom.
std::optional<BatchPoly> batchPoly(const sym::Count &C, llvm::StringRef Batch) {
  if (C.isNumber())
    return BatchPoly::constant(C.number());
  if (!C.isFormula())
    return std::nullopt;
  if (std::optional<std::array<double, 4>> U = C.univariate()) {
    BatchPoly P;
    P.C = *U;
    return P;
  }
  BatchPoly P;
  for (const sym::CountTerm &T : C.terms()) {
    unsigned Exp = 0;
    if (!T.Mono.empty()) {
      const sym::Factor &F = T.Mono[0];
      if (T.Mono.size() != 1 || F.Atom->kind() != sym::Expr::Kind::Symbol ||
          F.Atom->name() != Batch || F.Exp > BatchPoly::MaxDegree)
        return std::nullopt;
      Exp = F.Exp;
    }
    P.C[Exp] += double(T.Coef) / double(C.denominator());
  }
  return P;
}

/// Item's index in Items, added when its bits Key are new.
template <size_t K, typename T>
uint32_t internBits(std::map<std::array<uint64_t, K>, uint32_t> &Ids, std::vector<T> &Items,
                    const std::array<uint64_t, K> &Key, const T &Item) {
  auto [It, New] = Ids.try_emplace(Key, uint32_t(Items.size()));
  if (New)
    Items.push_back(Item);
  return It->second;
}

/// A geometry's bits: its batch polynomial's, then Vs'.
template <size_t K>
std::array<uint64_t, K> geometryBits(const BatchPoly &Batch, std::initializer_list<double> Vs) {
  std::array<uint64_t, K> W{};
  assert(Batch.C.size() + Vs.size() <= K && "geometryBits: too few words");
  std::memcpy(W.data(), Batch.C.data(), sizeof(Batch.C));
  std::memcpy(W.data() + Batch.C.size(), Vs.begin(), Vs.size() * sizeof(double));
  return W;
}

/// Whether a phase of these counts runs a kernel (a view, metadata op or
/// control-flow node runs none).
bool runsKernel(const PhaseCount &C) {
  return C.Flops != 0 || C.Bytes != 0 || C.Transcendentals != 0;
}
bool runsKernel(const PolyPhase &P) {
  auto Zero = [](const BatchPoly &B) { return llvm::all_of(B.C, [](double X) { return X == 0; }); };
  return !Zero(P.Flops) || !Zero(P.Bytes) || !Zero(P.Transc);
}

/// The main-graph position that holds N (N itself, or the control-flow
/// node whose body holds it); none for a node outside the main graph's tree.
std::optional<size_t> positionOf(const Graph &G, const Node *N) {
  const Node *Top = G.holderOf(N);
  if (Top->Parent != &G)
    return std::nullopt;
  return Top->Index;
}

} // namespace

BatchPoly Planner::bytesOf(const Value *V) const {
  // Values whose size does not grow with the batch are not listed: their
  // bytes at micro-batch 1 are every micro-batch's.
  if (ValueBytes)
    if (uint32_t I = ValueBytes->lookup(V); I != NoBytePoly)
      return BytePolys[I];
  return BatchPoly::constant(valueBytes(V, FloatBytes));
}

namespace {
/// A dim as a formula in the micro-batch, if it has one.
std::optional<BatchPoly> batchDim(const Dim &D, llvm::StringRef BatchSymbol) {
  if (D.isKnown())
    return batchPoly(sym::Count(double(D.extent())), BatchSymbol);
  if (!D.isDetermined())
    return std::nullopt;
  sym::CountScope Scope;
  std::optional<BatchPoly> P = batchPoly(sym::Count::of(D.expr()), BatchSymbol);
  if (Scope.failed())
    return std::nullopt;
  return P;
}
} // namespace

void Planner::takeKernelGeometry(const NodeCost &NC, Position &X) {
  const Node &N = *NC.N;
  if (auto Geo = convGeometry(N, /*BatchKnown=*/false)) {
    if (auto Batch = batchDim(N.input(0)->Shp->Dims[0], BatchSymbol)) {
      X.Conv = true;
      X.ShapeIdx = internBits(ConvIds, Convs,
                              geometryBits<12>(*Batch, {Geo->Cin, Geo->Cout, Geo->Groups,
                                                        Geo->InPix, Geo->OutPix, Geo->Taps,
                                                        Geo->Strides, double(Geo->Winograd)}),
                              ConvDims{*Batch, *Geo});
    }
  } else if (auto Geo = recurrentGeometry(N, /*BatchKnown=*/false)) {
    unsigned BatchAxis = N.attrInt("layout", 0) == 1 ? 0 : 1;
    if (auto Batch = batchDim(N.input(0)->Shp->Dims[BatchAxis], BatchSymbol)) {
      X.Recurrent = true;
      X.ShapeIdx = internBits(
          RecurrentIds, Recurrents,
          geometryBits<9>(*Batch, {Geo->Steps, Geo->Input, Geo->Dirs, Geo->Hidden, Geo->Gates}),
          RecurrentDims{*Batch, *Geo});
    }
  }
  if (X.Conv || X.Recurrent) {
    X.GradA = NC.inputNeedsGrad(0);
    X.GradB = NC.inputNeedsGrad(1);
    X.GradC = NC.inputNeedsGrad(2);
  }
}

llvm::Error Planner::takePolynomials(const CostResult &Sym) {
  const Graph &G = *M1->Main;
  size_t N = G.Nodes.size();
  Pos.resize(N);
  Phases.clear();
  PhaseIndex.clear();
  internPhase(PolyPhase()); // index 0, every position's until costed
  auto NotPolynomial = [&](const Node &Nd, const sym::Count &C) {
    return fileError(M1->Path,
                     formatv("cannot plan: a count of node '{0}' ({1}) is {2}, not a polynomial "
                             "of degree at most {3} in the micro-batch '{4}'",
                             Nd.Name, Nd.qualifiedOpType(), C.str(), BatchPoly::MaxDegree,
                             BatchSymbol));
  };
  auto Poly = [&](const Node &Nd, const sym::Count &C, BatchPoly &Out) -> llvm::Error {
    std::optional<BatchPoly> P = batchPoly(C, BatchSymbol);
    if (!P)
      return NotPolynomial(Nd, C);
    Out = *P;
    return llvm::Error::success();
  };
  // A phase's polynomials: its numbers, or the coefficients its formulas
  // keep in the batch's fast form (no Count made), else from its counts.
  auto PhasePoly = [&](const NodeCost &NC, bool Bwd, PolyPhase &X) -> llvm::Error {
    BatchPoly *Out[4] = {&X.Flops, &X.Macs, &X.Transc, &X.Bytes};
    if (!NC.Sym) {
      const PhaseCost &C = Bwd ? NC.Bwd : NC.Fwd;
      const double Num[4] = {C.Flops, C.Macs, C.Transcendentals, C.Bytes};
      for (unsigned K = 0; K < 4; ++K)
        *Out[K] = BatchPoly::constant(Num[K]);
      return llvm::Error::success();
    }
    if (!NC.Sym->hasGeneralCells()) {
      for (unsigned K = 0; K < 4; ++K)
        Out[K]->C = NC.Sym->coefficientsOf((Bwd ? 4 : 0) + K);
      return llvm::Error::success();
    }
    PhaseCount C = Bwd ? NC.Sym->bwd() : NC.Sym->fwd();
    const sym::Count *In[4] = {&C.Flops, &C.Macs, &C.Transcendentals, &C.Bytes};
    for (unsigned K = 0; K < 4; ++K)
      if (llvm::Error E = Poly(*NC.N, *In[K], *Out[K]))
        return E;
    return llvm::Error::success();
  };
  // A count in another free symbol (an input dim the plan does not set) is
  // what the graph at micro-batch 1 cannot cost either: the node is left
  // out of the plan there, with the loader's warning naming the dim.
  auto OtherSymbol = [&](const NodeCost &NC) {
    if (!NC.Sym || !NC.Sym->hasGeneralCells()) // numbers and the batch's fast form
      return false;
    PhaseCount Fwd = NC.Sym->fwd(), Bwd = NC.Sym->bwd();
    for (const PhaseCount *P : {&Fwd, &Bwd})
      for (const sym::Count *C : {&P->Flops, &P->Macs, &P->Transcendentals, &P->Bytes})
        if (C->isFormula() && !C->univariate()) // (the fast form is the batch's alone)
          for (const std::string &S : C->symbols())
            if (S != BatchSymbol)
              return true;
    return false;
  };
  SymModeled.resize(Sym.Nodes.size());
  UnboundMacNodes = 0;
  for (size_t I = 0; I < Sym.Nodes.size(); ++I) {
    const NodeCost &NC = Sym.Nodes[I];
    bool Other = NC.Modeled && OtherSymbol(NC);
    SymModeled[I] = NC.Modeled && !Other;
    // A matrix product or convolution (multiply-accumulates) left out for
    // an unbound dim: the plan would rank configurations without the work
    // that sets them apart (loadSymbolic refuses).
    if (Other && NC.Sym->fwd().Macs != 0 && UnboundMacNodes++ == 0)
      FirstUnboundMac = NC.N;
    if (!NC.Modeled)
      SymUnmodeled[I] = NC.unmodeled().str();
    std::optional<size_t> P = positionOf(G, NC.N);
    if (!P || !SymModeled[I])
      continue;
    PolyPhase Own[2];
    bool OwnKernel[2] = {false, false};
    for (bool Bwd : {false, true}) {
      PolyPhase X;
      if (llvm::Error E = PhasePoly(NC, Bwd, X))
        return E;
      OwnKernel[Bwd] = NC.N->Parent != &G && runsKernel(X);
      if (OwnKernel[Bwd])
        NestedKernels[uint32_t(*P)][Bwd] += NC.multiplier();
      X.Flops = X.Flops * NC.multiplier();
      X.Macs = X.Macs * NC.multiplier();
      X.Transc = X.Transc * NC.multiplier();
      X.Bytes = X.Bytes * NC.multiplier();
      uint32_t &Idx = Bwd ? Pos[*P].Bwd : Pos[*P].Fwd;
      PolyPhase Sum = Phases[Idx];
      Sum += X;
      Idx = internPhase(Sum);
      Own[Bwd] = X;
    }
    sym::Count Extra = NC.savedCounts();
    if (Extra != 0) {
      BatchPoly X;
      if (llvm::Error E = Poly(*NC.N, Extra, X))
        return E;
      SavedExtra[I] = X * NC.multiplier();
    }
    // A product's GEMM dims, as formulas in the batch (one in a body is
    // its position's nested product).
    if (auto Dims = productDims(*NC.N)) {
      GemmDims Gemm;
      bool Ok = true;
      for (unsigned K = 0; K < 4 && Ok; ++K) {
        std::optional<BatchPoly> D = batchPoly((*Dims)[K], BatchSymbol);
        Ok = D.has_value();
        if (Ok)
          Gemm[K] = *D;
      }
      if (NC.N->Parent == &G) {
        Position &X = Pos[*P];
        X.Product = Ok;
        if (Ok) {
          std::array<uint64_t, 4 * (BatchPoly::MaxDegree + 1)> W;
          for (unsigned K = 0; K < 4; ++K)
            std::memcpy(W.data() + K * Gemm[K].C.size(), Gemm[K].C.data(), sizeof(Gemm[K].C));
          X.GemmIdx = internBits(GemmIds, Gemms, W, Gemm);
        }
        X.GradA = NC.inputNeedsGrad(0);
        X.GradB = NC.inputNeedsGrad(1);
      } else if (Ok) {
        NestedProduct NP{Gemm, Own[0], Own[1], NC.multiplier(), NC.inputNeedsGrad(0),
                         NC.inputNeedsGrad(1), OwnKernel[1], {OwnKernel[0], OwnKernel[1]}};
        NestedProducts[uint32_t(*P)].push_back(NP);
      }
    }
    // A convolution's or a recurrent layer's geometry, its batch a formula
    // in the micro-batch.
    if (NC.N->Parent == &G)
      takeKernelGeometry(NC, Pos[*P]);
  }
  // A position with body nodes launches its own node's kernels too (a
  // Loop or If itself costs nothing).
  // (Sym.Nodes lists a body's nodes before their parent.)
  if (!NestedKernels.empty())
    for (size_t I = 0; I < Sym.Nodes.size(); ++I) {
      const NodeCost &Own = Sym.Nodes[I];
      if (Own.N->Parent != &G || !SymModeled[I])
        continue;
      auto It = NestedKernels.find(uint32_t(Own.N->Index));
      if (It != NestedKernels.end())
        for (bool Bwd : {false, true})
          It->second[Bwd] += runsKernel(Bwd ? Own.bwdCounts() : Own.fwdCounts());
    }
  // Each value whose bytes grow with the batch (the others are taken from
  // the bound graph).
  // (A value's bytes follow from its interned shape and element size: each
  // pair is taken once.)
  ValueBytes = std::make_unique<ValueMap<uint32_t>>(G, NoBytePoly);
  llvm::DenseMap<std::pair<const Shape *, uint64_t>, uint32_t> ByShape;
  auto Take = [&](const Graph &Gr) {
    for (const Value &V : Gr.Values) {
      if (V.numElements() || !V.Shp)
        continue;
      double Each = elementBytes(&V, FloatBytes);
      auto [It, New] =
          ByShape.try_emplace({V.Shp.operator->(), llvm::bit_cast<uint64_t>(Each)}, NoBytePoly);
      if (New) {
        sym::CountScope Scope;
        if (std::optional<BatchPoly> P = batchPoly(valueCount(&V, FloatBytes), BatchSymbol)) {
          It->second = uint32_t(BytePolys.size());
          BytePolys.push_back(*P);
        }
      }
      if (It->second != NoBytePoly)
        (*ValueBytes)[&V] = It->second;
    }
  };
  Take(G);
  // The graph inputs a micro-batch feeds, at their stored element type.
  InputBytes = {};
  for (const Value *V : G.Inputs)
    if (!V->isInitializer()) {
      sym::CountScope Scope;
      if (std::optional<BatchPoly> P = batchPoly(valueCount(V, std::nullopt), BatchSymbol))
        InputBytes += *P;
    }
  G.walk([&](const Node &Nd) {
    for (const Graph *Sub : Nd.subgraphs())
      Take(*Sub);
  });
  return llvm::Error::success();
}

sym::Binding Planner::microBatchOne() const {
  return [Name = BatchSymbol](llvm::StringRef S) -> std::optional<int64_t> {
    return S == Name ? std::optional<int64_t>(1) : std::nullopt;
  };
}

void Planner::bindMicroBatchOne() {
  // The batch bound to 1 in every shape (and in the data-dependent
  // symbols' bounds): the graph the search's structure is taken from, as
  // loading it at micro-batch 1 gives.
  sym::Binding One = microBatchOne();
  llvm::DenseMap<sym::ExprRef, Dim> Bound; // each distinct dim once
  auto Bind = [&](Graph &Gr) {
    for (Value &V : Gr.Values)
      V.Shp = mapSymbolicDims(V.Shp, [&](Dim D) {
        auto [It, New] = Bound.try_emplace(D.expr());
        if (New)
          It->second = Dim::of(sym::substitute(D.expr(), One));
        return It->second;
      });
  };
  Bind(*M1->Main);
  M1->Main->walk([&](const Node &Nd) {
    for (Graph *Sub : Nd.subgraphs())
      Bind(*Sub);
  });
  for (auto &[S, D] : M1->DataSymbols)
    if (D.Bound)
      D.Bound = sym::substitute(D.Bound, One);
  M1->DimBindings[BatchSymbol] = 1;
}

llvm::Error Planner::loadSymbolic(const BatchLoader &Load) {
  Timing *T = Opts.Timer;
  auto L = Load(PlanSymbolicBatch, Diags, true);
  if (!L)
    return L.takeError();
  M1 = std::move(*L);
  BatchSymbol = M1->BatchSymbol;
  // A batch broadcast against a fixed extent (a table of 8 rows added to the
  // batch's): the graph takes that batch size (or 1) only.
  for (const BroadcastAssumption &A : M1->BroadcastAssumptions)
    if (llvm::is_contained(sym::symbols(A.Dim), BatchSymbol))
      return fileError(
          M1->Path,
          formatv("node '{0}' broadcasts the batch ({1}) against a fixed {2}: the graph takes "
                  "a micro-batch of {2} (or 1) only, not every batch size (one fixed in its "
                  "own constants, such as a Reshape target, does this: export it with a "
                  "dynamic batch dim); cannot plan it",
                  A.Node, A.Dim->str(), A.Against));
  {
    // The costs with the batch a symbol: formulas in it (in their fast
    // univariate form).
    Config SymCfg = Cfg;
    SymCfg.SymbolicCosts = true;
    sym::UnivariateScope InBatch(sym::symbol(BatchSymbol));
    AnalysisManager AM(*M1, SymCfg, Diags, T);
    auto C = AM.getResult<CostAnalysis>();
    if (!C)
      return C.takeError();
    Timing::Scope Phase(T, "plan: costs as polynomials in the micro-batch");
    if (llvm::Error E = takePolynomials(*C))
      return E;
    if (UnboundMacNodes)
      return fileError(
          M1->Path,
          formatv("cannot plan: {0} node(s) with multiply-accumulates, the first '{1}' ({2}), "
                  "are costed in input dims the plan does not set (the warning above names "
                  "them and the --dim or --batch-dim that sets each): a plan without them "
                  "would rank configurations on the rest alone",
                  UnboundMacNodes, FirstUnboundMac->Name, FirstUnboundMac->qualifiedOpType()));
    C1 = std::move(*C); // the manager ends with this scope
  }
  bindMicroBatchOne();
  // Every node with its exact formula in the batch (the usual case): the
  // costs at micro-batch 1 are those formulas at 1, and the graph is walked
  // once.
  if (llvm::all_of(SymModeled, [](uint8_t M) { return M != 0; })) {
    Timing::Scope Phase(T, "plan: costs at micro-batch 1");
    if (llvm::Error E = bindCosts(C1, *M1, microBatchOne(), floatBytes(Cfg)))
      return E;
    return finishLoad();
  }
  // Else the graph is costed again at micro-batch 1, to tell a node no rule
  // can cost (left out, as analyze does) from one whose cost has no exact
  // formula in the batch (an error).
  {
    AnalysisManager AM(*M1, Cfg, Diags, T);
    auto C = AM.getResult<CostAnalysis>();
    if (!C)
      return C.takeError();
    C1 = std::move(*C);
  }
  // A node costed with the batch bound to 1 but with no exact formula in it
  // (or the other way round: the graph does not take every batch size, as
  // one fixed in its own constants does).
  if (SymModeled.size() != C1.Nodes.size())
    return fileError(M1->Path, "the graph changes with the batch size; cannot plan it");
  for (size_t I = 0; I < C1.Nodes.size(); ++I) {
    const NodeCost &NC = C1.Nodes[I];
    if (NC.Modeled == bool(SymModeled[I]))
      continue;
    if (NC.Modeled)
      return fileError(M1->Path,
                       formatv("cannot plan: node '{0}' ({1}) has no exact cost in the "
                               "micro-batch '{2}' ({3})",
                               NC.N->Name, NC.N->qualifiedOpType(), BatchSymbol,
                               SymUnmodeled[I]));
    return fileError(
        M1->Path,
        formatv("node '{0}' ({1}) can be costed as a formula in the micro-batch but not at "
                "micro-batch 1: the graph does not take every batch size (one fixed in its "
                "own constants, such as a Reshape target, does this: export it with a "
                "dynamic batch dim); cannot plan it",
                NC.N->Name, NC.N->qualifiedOpType()));
  }
  return finishLoad();
}

llvm::Error Planner::finishLoad() {
  SymUnmodeled.clear();
  if (C1.UnmodeledNodes)
    Diags.warn(M1->Path, formatv("{0} node(s) cannot be costed and are left out of the "
                                 "plan (see ridge analyze)",
                                 C1.UnmodeledNodes));
  // The sharding propagations start now, on the worker, while the
  // per-position sums are taken (both only read M1 and C1).
  propagateAhead();
  return llvm::Error::success();
}

size_t Planner::PhaseKeyHash::operator()(const PhaseKey &K) const {
  return size_t(hashWords(FnvBasis, K));
}

uint32_t Planner::internPhase(const PolyPhase &P) {
  PhaseKey Key;
  uint64_t *Out = Key.data();
  for (const BatchPoly *X : {&P.Flops, &P.Macs, &P.Transc, &P.Bytes}) {
    std::memcpy(Out, X->C.data(), sizeof(X->C));
    Out += X->C.size();
  }
  auto [It, New] = PhaseIndex.try_emplace(Key, uint32_t(Phases.size()));
  if (New)
    Phases.push_back(P);
  return It->second;
}

void Planner::sumPositions() {
  const Graph &G = *M1->Main;
  size_t N = G.Nodes.size();
  RecomputePlan Full = planRecompute(*M1, C1, Config::Recompute::Full, FloatBytes);
  RecomputePlan Sel = planRecompute(*M1, C1, Config::Recompute::Selective, FloatBytes);
  std::vector<BatchPoly> SavedAff(N), SelAff(N), CkAff(N);
  Cut.assign(N, 0);
  RecFull.assign(N, 0);
  RecSel.assign(N, 0);
  // Each saved tensor counts once (with selective recomputation: once
  // among those held).
  ValueMap<uint8_t> Seen(G, 0), SeenSel(G, 0);
  auto FirstSeen = [](ValueMap<uint8_t> &In, const Value *V) {
    uint8_t &S = In[V];
    bool First = !S;
    S = 1;
    return First;
  };
  for (size_t I = 0; I < C1.Nodes.size(); ++I) {
    const NodeCost &NC = C1.Nodes[I];
    std::optional<size_t> P = positionOf(G, NC.N);
    if (!P)
      continue;
    Pos[*P].NeedsBackward |= NC.NeedsBackward;
    RecFull[*P] |= Full.Recomputed[I];
    RecSel[*P] |= Sel.Recomputed[I];
    BatchPoly S, SS;
    if (auto It = SavedExtra.find(I); It != SavedExtra.end()) {
      S = It->second;
      if (Sel.KeptSaved[I])
        SS = S;
    }
    for (const Value *V : NC.saved()) {
      if (V->isInitializer())
        continue;
      BatchPoly B = bytesOf(V) * std::max(1.0, NC.multiplier());
      if (FirstSeen(Seen, V))
        S += B;
      if (!Sel.Dropped.contains(V) && FirstSeen(SeenSel, V))
        SS += B;
    }
    SavedAff[*P] += S;
    SelAff[*P] += SS;
  }
  for (size_t K = 0; K < Full.Cuts.size(); ++K)
    CkAff[Full.Cuts[K]] += bytesOf(Full.CutValues[K]);
  // Each position's terms once per distinct value (PosKey), and the cuts'
  // checkpoints apart (zero elsewhere).
  struct TermsHash {
    size_t operator()(const PosTerms &T) const {
      std::array<uint64_t, 2 * (BatchPoly::MaxDegree + 1)> W;
      std::memcpy(W.data(), T.Saved.C.data(), sizeof(T.Saved.C));
      std::memcpy(W.data() + T.Saved.C.size(), T.Sel.C.data(), sizeof(T.Sel.C));
      return size_t(hashWords(FnvBasis ^ T.RecSel ^ (uint64_t(T.RecFull) << 8), W));
    }
  };
  std::unordered_map<PosTerms, uint32_t, TermsHash> Keys;
  PosKey.resize(N);
  for (size_t P = 0; P < N; ++P) {
    PosTerms T{SavedAff[P], SelAff[P], RecSel[P], RecFull[P]};
    auto [It, New] = Keys.try_emplace(T, uint32_t(KeyTerms.size()));
    if (New)
      KeyTerms.push_back(T);
    PosKey[P] = It->second;
    SavedInt.add(SavedAff[P]);
    SelInt.add(SelAff[P]);
  }
  for (size_t P = 0; P < N; ++P) {
    Position &X = Pos[P];
    X.N = G.Nodes[P];
    Cut[P] = CkAff[P].at(1) > 0;
    if (Cut[P]) {
      CutPos.push_back(P);
      CutCk.push_back(CkAff[P]);
      CkInt.add(CkAff[P]);
    }
    X.Type = Cfg.ComputeDType.value_or(DType::Float);
    for (const Value *V : X.N->Outputs)
      if (!Cfg.ComputeDType && V && isFloatingPoint(V->Elem)) {
        X.Type = V->Elem;
        break;
      }
  }
  // Activation bytes live on each boundary (a tensor computed from a graph
  // input, between its producer and its last reader; integer activations,
  // token ids, cross stage boundaries too).
  std::vector<BatchPoly> Delta(N + 2);
  forEachActivationRange(G, /*FloatOnly=*/false, [&](const Value *V, long Def, long Last) {
    BatchPoly B = bytesOf(V);
    Delta[Def + 1] += B; // live on boundaries Def+1 .. Last
    Delta[Last + 1] += B * -1.0;
  });
  LiveBytes.assign(N + 1, {});
  BatchPoly Acc;
  for (size_t P = 0; P <= N; ++P)
    LiveBytes[P] = Acc += Delta[P];
}

void Planner::assignParameters() {
  // Parameters belong to the first position that reads them; the later
  // readers of a shared one are listed. (A trainable parameter's first
  // reader, or NotParam; Unread until it has one.)
  const Graph &G = *M1->Main;
  size_t N = G.Nodes.size();
  constexpr uint32_t NotParam = UINT32_MAX, Unread = UINT32_MAX - 1,
                     UnreadFrozen = UINT32_MAX - 2, ReadFrozen = UINT32_MAX - 3;
  ValueMap<uint32_t> FirstReader(G, NotParam);
  C1.Trainable.forEach([&](const Value *V) { FirstReader[V] = Unread; });
  for (const Value *V : C1.FrozenWeights)
    FirstReader[V] = UnreadFrozen;
  llvm::MapVector<const Value *, std::vector<uint32_t>> LaterReaders;
  PosParams.assign(N, 0);
  // A control-flow body reads the weights it captures by name, not as its
  // parent's inputs: its nodes read them at the parent's position.
  std::vector<std::pair<uint32_t, const Node *>> Nested;
  for (const NodeCost &NC : C1.Nodes)
    if (NC.N->Parent != &G)
      if (std::optional<size_t> P = positionOf(G, NC.N))
        Nested.emplace_back(uint32_t(*P), NC.N);
  llvm::stable_sort(Nested, llvm::less_first());
  size_t NextNested = 0;
  llvm::SmallVector<const Node *, 4> Readers;
  for (size_t P = 0; P < N; ++P) {
    Readers.assign({Pos[P].N});
    for (; NextNested < Nested.size() && Nested[NextNested].first == P; ++NextNested)
      Readers.push_back(Nested[NextNested].second);
    for (const Node *Rd : Readers)
      for (const Value *In : Rd->Inputs) {
        if (!In)
          continue;
        uint32_t &First = FirstReader[In];
        if (First == NotParam || First == ReadFrozen)
          continue;
        if (First == UnreadFrozen) {
          // Held by the stage that reads it first (a later stage reading a
          // frozen table too would hold a copy: not counted).
          First = ReadFrozen;
          FrozenPos.push_back(uint32_t(P));
          FrozenVal.push_back(In);
        } else if (First == Unread) {
          First = uint32_t(P);
          double Elems = In->numElements().value_or(0);
          PosParams[P] += Elems;
          ParamPos.push_back(uint32_t(P));
          ParamVal.push_back(In);
          ParamElems.push_back(Elems);
        } else if (First != P) {
          std::vector<uint32_t> &L = LaterReaders[In];
          if (L.empty() || L.back() != P)
            L.push_back(uint32_t(P));
        }
      }
  }
  for (auto &[V, Later] : LaterReaders) {
    SharedParam Sp{V, V->numElements().value_or(0), {FirstReader[V]}};
    Sp.Readers.insert(Sp.Readers.end(), Later.begin(), Later.end());
    Shared.push_back(std::move(Sp));
  }
  Params = C1.TrainableParams;
}

void Planner::findBoundaries() {
  size_t N = Pos.size();
  for (size_t P = 1; P < N; ++P)
    if (Cut[P])
      Boundaries.push_back(P);
  // A stack of identical layers between the cuts (one layer per segment,
  // the embedding before the first cut and the head after the last):
  // stages get whole layers, as Megatron-LM assigns them.
  StackLayers = 0;
  if (blockPeriod(*M1->Main, Boundaries) == 1)
    StackLayers = Boundaries.size();
  Boundaries.push_back(N);
  for (size_t P = 1; P <= N; ++P)
    AllBoundaries.push_back(P);
  // A cut at position P > 0 ends a coarse segment (boundary index: its
  // place in Boundaries, plus one); in the fine segmentation boundary P is P.
  for (size_t Q : CutPos) {
    CutBd[0].push_back(
        Q == 0 ? 0 : uint32_t(std::lower_bound(Boundaries.begin(), Boundaries.end(), Q) -
                              Boundaries.begin() + 1));
    CutBd[1].push_back(uint32_t(Q));
  }
}

void Planner::classifyPositions() {
  // Positions with equal costs, type and backward flag take equal times at
  // every micro-batch and split: one class each.
  // (Equal phases share one index in Phases, equal GEMM dims one in Gemms,
  // equal geometries one in Convs or Recurrents: equal indices are equal
  // bits.)
  struct Key {
    uint32_t Fwd, Bwd;
    uint32_t Shape;   ///< Gemms, Convs or Recurrents index (by Kind)
    uint32_t Nested;  ///< a position with products in its bodies: its own (P + 1)
    uint8_t Kind;     ///< 0 none, 1 product, 2 convolution, 3 recurrent layer
    uint8_t Grads;    ///< GradA, GradB, GradC
    uint8_t Type;
    bool NeedsBackward;
    std::array<double, 2> Kernels; ///< NestedKernels (else 0)
    bool operator==(const Key &O) const {
      return Fwd == O.Fwd && Bwd == O.Bwd && Shape == O.Shape && Nested == O.Nested &&
             Kind == O.Kind && Grads == O.Grads && Type == O.Type &&
             NeedsBackward == O.NeedsBackward && Kernels == O.Kernels;
    }
  };
  struct Hash {
    size_t operator()(const Key &K) const {
      uint64_t Small = uint64_t(K.Kind) | uint64_t(K.Grads) << 8 | uint64_t(K.Type) << 16 |
                       uint64_t(K.NeedsBackward) << 24;
      std::array<uint64_t, 2> Kn;
      std::memcpy(Kn.data(), K.Kernels.data(), sizeof(Kn));
      return size_t(hashWords(FnvBasis, {uint64_t(K.Fwd) << 32 | K.Bwd,
                                         uint64_t(K.Shape) << 32 | K.Nested, Small, Kn[0],
                                         Kn[1]}));
    }
  };
  size_t N = Pos.size();
  std::unordered_map<Key, uint32_t, Hash> Classes;
  ClassOf.resize(N);
  for (size_t P = 0; P < N; ++P) {
    const Position &X = Pos[P];
    Key Ky{X.Fwd, X.Bwd, 0, 0, 0, 0, uint8_t(X.Type), X.NeedsBackward, {0, 0}};
    if (X.Product || X.Conv || X.Recurrent) {
      Ky.Kind = X.Product ? 1 : X.Conv ? 2 : 3;
      Ky.Shape = X.Product ? X.GemmIdx : X.ShapeIdx;
      Ky.Grads = uint8_t(X.GradA) | uint8_t(X.GradB) << 1 |
                 uint8_t((X.Conv || X.Recurrent) && X.GradC) << 2;
    }
    if (auto Nested = NestedKernels.find(uint32_t(P)); Nested != NestedKernels.end())
      Ky.Kernels = Nested->second;
    if (NestedProducts.count(uint32_t(P)))
      Ky.Nested = uint32_t(P) + 1;
    auto [It, New] = Classes.try_emplace(Ky, uint32_t(ClassRep.size()));
    if (New)
      ClassRep.push_back(&X);
    ClassOf[P] = It->second;
  }
}

llvm::Error Planner::prepare(const BatchLoader &Load) {
  if (Cfg.ComputeDType)
    FloatBytes = dtypeBytes(*Cfg.ComputeDType);
  WBytes = FloatBytes.value_or(4);
  Mixed = WBytes < 4;
  K = Opts.DevicesPerNode ? Opts.DevicesPerNode : std::max(1u, Dev.DevicesPerNode);
  // The graph once, its costs as polynomials in the micro-batch.
  std::optional<Timing::Scope> Phase(std::in_place, Opts.Timer,
                                     "plan: load and cost with a symbolic micro-batch");
  if (llvm::Error E = loadSymbolic(Load))
    return E;
  // As analyze says it: a type the device lists no rate for runs at its
  // vector (fp32) rate.
  if (DType T = Cfg.ComputeDType.value_or(DType::Float); !Dev.peak(T))
    Diags.warn(M1->Path, formatv("device {0} lists no {1} peak; ops in {1} are timed at its "
                                 "vector rate",
                                 Dev.Name, dtypeName(T)));
  Phase.emplace(Opts.Timer, "plan: prepare the search");
  sumPositions();
  assignParameters();
  findBoundaries();
  classifyPositions();
  return llvm::Error::success();
}

} // namespace ridge::plan
