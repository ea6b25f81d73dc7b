//===- ControlFlow.cpp - Shape rules: If, Loop, Scan, sequences -----------===//
#include "analyzer/shapes/Rules.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

namespace ridge::shapes {

/// If: each output is the union of the branches' (same rank: agreeing dims
/// kept, others unknown; different ranks: no shape).
void ruleIf(Ctx &C) {
  Graph *Then = attrGraph(C.N, "then_branch"), *Else = attrGraph(C.N, "else_branch");
  if (Then)
    C.Inf.inferGraph(*Then);
  if (Else)
    C.Inf.inferGraph(*Else);
  if (!Then || !Else)
    return;
  // A condition the graph computes from constants and shapes: the branch
  // taken, with its values.
  int64_t Cond;
  if (C.scalarInt(0, Cond)) {
    Graph *Taken = Cond ? Then : Else;
    for (unsigned O = 0; O < C.numOuts() && O < Taken->Outputs.size(); ++O) {
      Value *A = Taken->Outputs[O];
      auto E = C.Inf.Elems.find(A);
      if (E != C.Inf.Elems.end())
        setElems(C, O, E->second);
      C.setType(O, A->Elem);
      if (A->Shp)
        C.set(O, DType::Undefined, *A->Shp);
      auto V = C.Inf.Vals.find(A);
      if (V != C.Inf.Vals.end()) {
        IVec Copy = V->second;
        C.setVals(O, Copy);
      }
    }
    return;
  }
  for (unsigned O = 0; O < C.numOuts(); ++O) {
    if (O >= Then->Outputs.size() || O >= Else->Outputs.size())
      return;
    Value *A = Then->Outputs[O], *B = Else->Outputs[O];
    auto EA = C.Inf.Elems.find(A), EB = C.Inf.Elems.find(B);
    if (EA != C.Inf.Elems.end() && EB != C.Inf.Elems.end()) {
      ElemInfo E = EA->second;
      if (!EB->second.Empty)
        addElement(E, EB->second.Elem, EB->second.Shp);
      E.Items.reset(); // either branch's elements
      setElems(C, O, E);
    }
    C.setType(O, A->Elem != DType::Undefined ? A->Elem : B->Elem);
    if (!A->Shp || !B->Shp || A->Shp->rank() != B->Shp->rank())
      continue;
    // A dim the branches give differently (torchvision's batched NMS: an
    // empty [0] when there are no boxes, else the boxes kept) is decided by
    // which branch runs: a data-dependent symbol, at most the larger.
    Shape S;
    for (size_t I = 0; I < A->Shp->rank(); ++I) {
      const Dim &DA = A->Shp->Dims[I], &DB = B->Shp->Dims[I];
      Dim U = unionDim(DA, DB);
      if (!U.isDetermined() && DA.isDetermined() && DB.isDetermined())
        U = dataSymbol(C, ("out" + llvm::Twine(O) + "_dim" + llvm::Twine(I)).str(),
                       "extent of an If output whose branches differ",
                       sym::max(DA.expr(), DB.expr()));
      S.Dims.push_back(U);
    }
    C.set(O, DType::Undefined, S);
  }
}

void typeLike(Value &Dst, const Value &Src) {
  if (Dst.Elem == DType::Undefined)
    Dst.Elem = Src.Elem;
  if (Src.Shp)
    refineShape(Dst, *Src.Shp);
}

namespace {
/// A loop state's dim that grows by Step each iteration: First at the
/// first, In (a symbol) in the body.
struct Growth {
  size_t State, Dim;
  ridge::Dim First;
  int64_t Step;
  ridge::Dim In;
};
} // namespace

/// A loop-carried output: the state's initial value or its value after the
/// body, whichever ran last. A dim the body grows by a fixed step is
/// First + Trips * Step after a loop that runs Trips times; when the
/// condition may stop it before its maximum, a data symbol of at most
/// First + Max * Step (unknown without a maximum).
static void setCarriedOutput(Ctx &C, unsigned O, const Value *Init, const Value *Body,
                             llvm::ArrayRef<Growth> Grown, const Dim &Trips,
                             sym::ExprRef Max) {
  C.setType(O, Body->Elem != DType::Undefined ? Body->Elem
                                              : Init ? Init->Elem : DType::Undefined);
  if (!Body->Shp || !Init || !Init->Shp || Init->Shp->rank() != Body->Shp->rank())
    return;
  Shape S;
  for (size_t I = 0; I < Body->Shp->rank(); ++I) {
    const Dim &B = Body->Shp->Dims[I];
    Dim D = unionDim(Init->Shp->Dims[I], B);
    for (const Growth &G : Grown) {
      if (G.State != O || G.Dim != I || !B.isDetermined() ||
          sym::sub(B.expr(), G.In.expr())->constant() != G.Step)
        continue;
      auto After = [&](sym::ExprRef N) {
        return sym::add(G.First.expr(), sym::mul(sym::constant(G.Step), N));
      };
      if (Trips.isDetermined())
        D = Dim::of(After(Trips.expr()));
      else if (Max)
        D = dataSymbol(C, ("out" + llvm::Twine(O) + "_dim" + llvm::Twine(I)).str(),
                       "extent of a state the loop grows, after the iterations its condition "
                       "lets run",
                       After(Max));
    }
    S.Dims.push_back(D);
  }
  C.set(O, DType::Undefined, S);
}

/// A Loop that runs its body exactly once (a maximum trip count of 1 and a
/// condition known true: torch's export of torch.split into two pieces):
/// the body is inferred with the iteration number 0 and the states' initial
/// values, elements included, and its outputs are the loop's, exactly.
/// (The iteration number and condition inputs are typed by ruleLoop.)
static void ruleLoopOnce(Ctx &C, Graph &Body, size_t NState) {
  if (Body.Inputs.size() >= 1)
    C.Inf.Vals[Body.Inputs[0]] = IVec{IV::known(0)};
  if (Body.Inputs.size() >= 2)
    C.Inf.Vals[Body.Inputs[1]] = IVec{IV::known(1)};
  for (size_t K = 0; K < NState && 2 + K < Body.Inputs.size(); ++K)
    if (Value *In = C.in(2 + K)) {
      Value *B = Body.Inputs[2 + K];
      typeLike(*B, *In);
      if (const ElemInfo *E = elemsOf(C, 2 + K)) {
        ElemInfo Copy = *E; // (E points into the map the next line may grow)
        C.Inf.Elems[B] = std::move(Copy);
      }
      IVec V;
      if (C.vals(2 + K, V))
        C.Inf.Vals[B] = V;
    }
  C.Inf.inferGraph(Body);
  C.Inf.LoopTrips[&C.N] = sym::constant(1);
  for (size_t J = 0; J < C.numOuts() && 1 + J < Body.Outputs.size(); ++J) {
    Value *B = Body.Outputs[1 + J];
    C.setType(J, B->Elem);
    if (J < NState) // a state: its value after the one iteration
      if (auto It = C.Inf.Elems.find(B); It != C.Inf.Elems.end())
        setElems(C, J, It->second); // (a sequence: no shape of its own)
    if (!B->Shp)
      continue;
    Shape S = *B->Shp;
    if (J >= NState) { // a scan output: the one iteration's value, stacked
      S.Dims.insert(S.Dims.begin(), Dim::known(1));
      C.set(J, B->Elem, S);
      continue;
    }
    C.set(J, B->Elem, S);
    if (auto It = C.Inf.Vals.find(B); It != C.Inf.Vals.end()) {
      IVec Copy = It->second;
      C.setVals(J, Copy);
    }
  }
}

void ruleLoop(Ctx &C) {
  Graph *Body = attrGraph(C.N, "body");
  if (!Body)
    return;
  // Body inputs: iteration number, condition, loop-carried states.
  // Body outputs: condition, states, scan outputs.
  Value Iter, Cond;
  Iter.Elem = DType::Int64;
  Iter.Shp.emplace();
  Cond.Elem = DType::Bool;
  Cond.Shp.emplace();
  if (Body->Inputs.size() >= 1)
    typeLike(*Body->Inputs[0], Iter);
  if (Body->Inputs.size() >= 2)
    typeLike(*Body->Inputs[1], Cond);
  size_t NState = C.N.Inputs.size() >= 2 ? C.N.Inputs.size() - 2 : 0;
  // The maximum trip count: a number, or an expression (a loop over a
  // symbolic sequence length).
  IVec MaxVals;
  sym::ExprRef Max = nullptr;
  if (C.has(0) && C.vals(0, MaxVals) && MaxVals.size() == 1)
    Max = MaxVals[0].expr();
  if (Max && Max->constant() && *Max->constant() < 0)
    Max = nullptr;
  auto KnownTrue = [&](Value *V) {
    auto It = V ? C.Inf.Vals.find(V) : C.Inf.Vals.end();
    if (It != C.Inf.Vals.end())
      return llvm::all_of(It->second, [](const IV &X) { return X.Known && X.V; });
    return V && V->IntData && llvm::all_of(*V->IntData, [](int64_t X) { return X != 0; });
  };
  bool StartsTrue = !C.has(1) || KnownTrue(C.in(1));
  if (Max && Max->constant() == 1 && StartsTrue)
    return ruleLoopOnce(C, *Body, NState);
  SmallVector<std::pair<Value *, Value *>, 4> Carried;
  for (size_t K = 0; K < NState; ++K) {
    if (2 + K >= Body->Inputs.size() || 1 + K >= Body->Outputs.size())
      break;
    if (Value *In = C.in(2 + K)) {
      typeLike(*Body->Inputs[2 + K], *In);
      if (const ElemInfo *E = elemsOf(C, 2 + K)) {
        ElemInfo Carried = *E;
        Carried.Items.reset(); // it changes from iteration to iteration
        C.Inf.Elems[Body->Inputs[2 + K]] = std::move(Carried);
      }
    }
    Carried.push_back({Body->Inputs[2 + K], Body->Outputs[1 + K]});
  }
  // A state dim the body grows by a fixed step (a list appended in the
  // loop: torch.cat((res, row)) each iteration) takes, in the body, a symbol
  // for its extent at an iteration; after the loop it is known from the
  // trips (below).
  SmallVector<Growth, 2> Grown;
  auto Generalize = [&](size_t K, size_t I, const Dim &In, const Dim &Out) -> Dim {
    if (!In.isDetermined() || !Out.isDetermined())
      return Dim{};
    std::optional<int64_t> Step = sym::sub(Out.expr(), In.expr())->constant();
    if (!Step || *Step <= 0)
      return Dim{};
    sym::ExprRef Bound =
        Max ? sym::add(In.expr(), sym::mul(sym::constant(*Step),
                                           sym::sub(sym::max(Max, sym::constant(1)),
                                                    sym::constant(1))))
            : nullptr;
    Dim S = dataSymbol(C, ("state" + llvm::Twine(K) + "_dim" + llvm::Twine(I)).str(),
                       ("extent of loop state " + llvm::Twine(K) + "'s dim " + llvm::Twine(I) +
                        " in an iteration (" + In.str() + " at the first, " +
                        llvm::Twine(*Step) + " more each iteration)")
                           .str(),
                       Bound);
    Grown.push_back({K, I, In, *Step, S});
    return S;
  };
  C.Inf.inferBody(*Body, Carried, Generalize);
  // Scan outputs: the body's per-iteration values stacked along a new axis,
  // of the trip count when the loop runs exactly that many times (its
  // condition is true and the body passes it through or keeps it true).
  Dim Trip;
  if (!Max) {
    // No maximum trip count: how many iterations run only running the graph
    // decides (a while loop): a symbol, bindable with --dim, that the cost
    // of the body multiplies by.
    Trip = dataSymbol(C, "trips", "iterations of the loop, decided at run time", nullptr);
    if (Trip.isDetermined())
      C.Inf.LoopTrips[&C.N] = Trip.expr();
  } else {
    // Scan outputs and grown states take the maximum when the loop runs
    // exactly that many times (its condition true at the start and passed
    // through or kept true by the body).
    C.Inf.LoopTrips[&C.N] = Max;
    if (StartsTrue && Body->Inputs.size() >= 2 && !Body->Outputs.empty()) {
      Value *CondOut = Body->Outputs[0];
      const Node *P = CondOut->producer();
      if (CondOut == Body->Inputs[1] || KnownTrue(CondOut) ||
          (P && P->OpType == "Identity" && P->input(0) == Body->Inputs[1]))
        Trip = Dim::of(Max);
    }
    // Otherwise the condition may stop it early: how many iterations run is
    // a symbol of at most the maximum, the extent of what the loop stacks
    // and grows. The body's cost still counts the maximum (an upper bound,
    // in numbers) unless the symbol is bound, when it counts that.
    if (!Trip.isDetermined()) {
      Trip = dataSymbol(C, "trips",
                        "iterations its condition lets run (decided at run time)",
                        Max);
      if (Trip.isKnown())
        C.Inf.LoopTrips[&C.N] = Trip.expr();
    }
  }
  for (size_t K = 0; K < NState && K < C.numOuts(); ++K) {
    if (1 + K >= Body->Outputs.size())
      break;
    setCarriedOutput(C, K, C.in(2 + K), Body->Outputs[1 + K], Grown, Trip, Max);
    auto EB = C.Inf.Elems.find(Body->Outputs[1 + K]);
    if (EB == C.Inf.Elems.end())
      continue;
    ElemInfo E = EB->second;
    if (const ElemInfo *EI = elemsOf(C, 2 + K); EI && !EI->Empty)
      addElement(E, EI->Elem, EI->Shp);
    E.Items.reset();
    setElems(C, K, E);
  }
  for (size_t J = NState; J < C.numOuts(); ++J) {
    if (1 + J >= Body->Outputs.size())
      break;
    Value *B = Body->Outputs[1 + J];
    C.setType(J, B->Elem);
    if (!B->Shp)
      continue;
    Shape S = *B->Shp;
    S.Dims.insert(S.Dims.begin(), Trip);
    C.set(J, B->Elem, S);
  }
}

/// Scan-8: a leading sequence_lens input; every input and output has a
/// batch axis 0, scanned inputs and outputs a sequence axis 1.
static void ruleScan8(Ctx &C, Graph *Body) {
  int64_t M = C.N.attrInt("num_scan_inputs", 0);
  int64_t NIn = int64_t(C.N.Inputs.size()) - 1;
  if (M <= 0 || M > NIn || int64_t(Body->Inputs.size()) != NIn)
    return;
  int64_t NState = NIn - M;
  SmallVector<std::pair<Value *, Value *>, 4> Carried;
  Dim Batch, SeqLen;
  for (int64_t K = 0; K < NIn; ++K) {
    Value *In = C.in(1 + K);
    if (!In)
      continue;
    Value Slice;
    Slice.Elem = In->Elem;
    size_t Drop = K < NState ? 1 : 2;
    if (In->Shp && In->Shp->rank() >= Drop) {
      Shape S = *In->Shp;
      S.Dims.erase(S.Dims.begin(), S.Dims.begin() + Drop);
      Slice.Shp = S;
      Batch = mergeDim(Batch, In->Shp->Dims[0]);
      if (K >= NState)
        SeqLen = mergeDim(SeqLen, In->Shp->Dims[1]);
    }
    typeLike(*Body->Inputs[K], Slice);
    if (K < NState && K < int64_t(Body->Outputs.size()))
      Carried.push_back({Body->Inputs[K], Body->Outputs[K]});
  }
  C.Inf.inferBody(*Body, Carried);
  for (int64_t J = 0; J < int64_t(C.numOuts()) && J < int64_t(Body->Outputs.size()); ++J) {
    Value *B = Body->Outputs[J];
    C.setType(J, B->Elem);
    if (!B->Shp)
      continue;
    Shape S = *B->Shp;
    if (J >= NState)
      S.Dims.insert(S.Dims.begin(), SeqLen);
    S.Dims.insert(S.Dims.begin(), Batch);
    C.set(J, B->Elem, S);
  }
}

void ruleScan(Ctx &C) {
  Graph *Body = attrGraph(C.N, "body");
  if (!Body)
    return;
  if (C.Opset < 9)
    return ruleScan8(C, Body);
  int64_t M = C.N.attrInt("num_scan_inputs", 0);
  int64_t NIn = C.N.Inputs.size();
  if (M <= 0 || M > NIn || int64_t(Body->Inputs.size()) != NIn)
    return;
  int64_t NState = NIn - M;
  auto InAxes = C.N.attrInts("scan_input_axes");
  auto OutAxes = C.N.attrInts("scan_output_axes");
  SmallVector<std::pair<Value *, Value *>, 4> Carried;
  for (int64_t K = 0; K < NState; ++K) {
    if (Value *In = C.in(K))
      typeLike(*Body->Inputs[K], *In);
    if (K < int64_t(Body->Outputs.size()))
      Carried.push_back({Body->Inputs[K], Body->Outputs[K]});
  }
  Dim SeqLen;
  bool HaveLen = false;
  for (int64_t J = 0; J < M; ++J) {
    Value *In = C.in(NState + J);
    if (!In)
      continue;
    Value Slice;
    Slice.Elem = In->Elem;
    if (In->Shp) {
      int64_t Axis = InAxes && J < int64_t(InAxes->size()) ? (*InAxes)[J] : 0;
      if (normAxis(Axis, In->Shp->rank())) {
        Shape S = *In->Shp;
        S.Dims.erase(S.Dims.begin() + Axis);
        Slice.Shp = S;
        if (!HaveLen) {
          SeqLen = In->Shp->Dims[Axis];
          HaveLen = true;
        }
      }
    }
    typeLike(*Body->Inputs[NState + J], Slice);
  }
  C.Inf.inferBody(*Body, Carried);
  for (int64_t K = 0; K < NState && K < int64_t(C.numOuts()); ++K)
    if (K < int64_t(Body->Outputs.size()))
      setCarriedOutput(C, K, C.in(K), Body->Outputs[K], {}, Dim{}, nullptr);
  for (int64_t J = NState; J < int64_t(C.numOuts()); ++J) {
    if (J >= int64_t(Body->Outputs.size()))
      break;
    Value *B = Body->Outputs[J];
    C.setType(J, B->Elem);
    if (!B->Shp)
      continue;
    Shape S = *B->Shp;
    int64_t Axis = OutAxes && J - NState < int64_t(OutAxes->size())
                       ? (*OutAxes)[J - NState] : 0;
    if (!normAxis(Axis, S.rank() + 1))
      continue;
    S.Dims.insert(S.Dims.begin() + Axis, HaveLen ? SeqLen : Dim{});
    C.set(J, B->Elem, S);
  }
}

void ruleSequenceLength(Ctx &C) {
  C.setDims(0, DType::Int64, {});
  if (const ElemInfo *S = elemsOf(C, 0); S && S->Items)
    C.setInts(0, {int64_t(S->Items->size())});
}
void ruleOptionalHasElement(Ctx &C) { C.setDims(0, DType::Bool, {}); }

void ruleSequenceEmpty(Ctx &C) {
  ElemInfo E;
  E.Elem = attrDType(C.N, "dtype", DType::Float);
  E.Empty = true;
  E.Items.emplace();
  setElems(C, 0, E);
}

void ruleSequenceConstruct(Ctx &C) {
  ElemInfo E;
  E.Empty = true;
  E.Items.emplace();
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I)
    if (Value *V = C.in(I)) {
      addElement(E, V->Elem, V->Shp);
      E.Items->push_back(V->Shp);
    }
  setElems(C, 0, E);
}

/// Sequences longer than this are followed by their elements' common shape
/// only.
constexpr int64_t MaxSequenceItems = 1024;

/// A position input (In) into a sequence of N elements: its index in
/// [0, N] (or [0, N) for an existing element); the end when absent (Insert)
/// or the last (Erase); none when computed at run time or out of range.
static std::optional<size_t> seqPosition(Ctx &C, unsigned In, size_t N, bool Existing) {
  int64_t P;
  if (!C.has(In))
    return Existing ? (N ? std::optional<size_t>(N - 1) : std::nullopt) : std::optional<size_t>(N);
  if (!C.scalarInt(In, P))
    return std::nullopt;
  if (P < 0)
    P += int64_t(N);
  if (P < 0 || P > int64_t(N) || (Existing && P == int64_t(N)))
    return std::nullopt;
  return size_t(P);
}

void ruleSequenceInsert(Ctx &C) {
  const ElemInfo *S = elemsOf(C, 0);
  Value *T = C.in(1);
  if (!S || !T)
    return;
  ElemInfo E = *S;
  addElement(E, T->Elem, T->Shp);
  if (E.Items) {
    std::optional<size_t> P = seqPosition(C, 2, E.Items->size(), false);
    if (P && int64_t(E.Items->size()) < MaxSequenceItems)
      E.Items->insert(E.Items->begin() + *P, T->Shp);
    else
      E.Items.reset();
  }
  setElems(C, 0, E);
}

void ruleSequenceErase(Ctx &C) {
  const ElemInfo *S = elemsOf(C, 0);
  if (!S)
    return;
  ElemInfo E = *S;
  if (E.Items) {
    if (std::optional<size_t> P = seqPosition(C, 1, E.Items->size(), true))
      E.Items->erase(E.Items->begin() + *P);
    else
      E.Items.reset();
  }
  setElems(C, 0, E);
}

void ruleSequenceAt(Ctx &C) {
  const ElemInfo *S = elemsOf(C, 0);
  if (!S)
    return;
  if (S->Items) // the element at a known position, exactly
    if (std::optional<size_t> P = seqPosition(C, 1, S->Items->size(), true)) {
      if (const std::optional<Shape> &Item = (*S->Items)[*P])
        return C.set(0, S->Elem, *Item);
      return C.setType(0, S->Elem);
    }
  if (S->Shp && !S->Empty)
    C.set(0, S->Elem, *S->Shp);
  else
    C.setType(0, S->Elem);
}

void ruleSplitToSequence(Ctx &C) {
  const Shape *X = C.shape(0);
  ElemInfo E;
  E.Elem = C.elem(0);
  int64_t Axis = C.N.attrInt("axis", 0);
  if (X && normAxis(Axis, X->rank())) {
    Shape S = *X;
    const Dim &D = X->Dims[Axis];
    SmallVector<int64_t, 4> Split;
    // The pieces' extents along the axis, when the split and the dim fix them.
    std::optional<SmallVector<int64_t, 4>> Pieces;
    bool KeepDims = C.N.attrInt("keepdims", 1) != 0;
    if (!C.has(1)) {
      if (KeepDims)
        S.Dims[Axis] = Dim::known(1);
      else
        S.Dims.erase(S.Dims.begin() + Axis);
      if (D.isKnown() && D.extent() <= MaxSequenceItems)
        Pieces.emplace(size_t(D.extent()), 1);
    } else if (C.ints(1, Split) && !Split.empty()) {
      const Shape *SS = C.shape(1);
      bool Scalar = SS && SS->rank() == 0;
      if (Scalar)
        S.Dims[Axis] = D.isKnown() && Split[0] > 0 && D.extent() % Split[0] == 0
                           ? Dim::known(Split[0]) : Dim{};
      else
        S.Dims[Axis] = llvm::all_equal(Split) ? Dim::known(Split[0]) : Dim{};
      int64_t Sum = 0;
      bool Valid = llvm::all_of(Split, [&](int64_t X) { return X >= 0 && addOk(Sum, X, Sum); });
      if (Scalar && D.isKnown() && Split[0] > 0 &&
          ceilDiv(D.extent(), Split[0]) <= MaxSequenceItems) {
        Pieces.emplace();
        for (int64_t At = 0; At < D.extent(); At += Split[0])
          Pieces->push_back(std::min(Split[0], D.extent() - At));
      } else if (!Scalar && Valid && int64_t(Split.size()) <= MaxSequenceItems &&
                 (!D.isKnown() || Sum == D.extent())) {
        Pieces.emplace(Split.begin(), Split.end());
      }
    } else {
      S.Dims[Axis] = Dim{};
    }
    E.Shp = S;
    if (Pieces) {
      E.Items.emplace();
      for (int64_t P : *Pieces) {
        Shape Item = *X;
        if (!C.has(1) && !KeepDims)
          Item.Dims.erase(Item.Dims.begin() + Axis);
        else
          Item.Dims[Axis] = Dim::known(P);
        E.Items->push_back(Item);
      }
    }
  }
  setElems(C, 0, E);
}

void ruleConcatFromSequence(Ctx &C) {
  const ElemInfo *S = elemsOf(C, 0);
  if (!S)
    return;
  C.setType(0, S->Elem);
  if (!S->Shp || S->Empty)
    return;
  Shape Out = *S->Shp;
  int64_t Axis = C.N.attrInt("axis", 0);
  bool NewAxis = C.N.attrInt("new_axis", 0) != 0;
  if (!normAxis(Axis, Out.rank() + (NewAxis ? 1 : 0)))
    return;
  // With the elements known: their count along a new axis, or the sum of
  // their extents along the axis.
  Dim Along;
  if (S->Items && llvm::all_of(*S->Items, [&](const std::optional<Shape> &I) {
        return I && I->rank() == Out.rank();
      })) {
    if (NewAxis) {
      Along = Dim::known(int64_t(S->Items->size()));
    } else {
      Along = Dim::known(0);
      for (const std::optional<Shape> &I : *S->Items)
        Along = addDims(Along, I->Dims[Axis]);
    }
  }
  if (NewAxis)
    Out.Dims.insert(Out.Dims.begin() + Axis, Along);
  else
    Out.Dims[Axis] = Along;
  C.set(0, S->Elem, Out);
}

void ruleOptional(Ctx &C) {
  ElemInfo E;
  if (Value *V = C.in(0)) {
    E.Elem = V->Elem;
    E.Shp = V->Shp;
  } else if (const Attribute *A = C.N.attr("type"); A) {
    E.Empty = true; // the type proto is not in the IR
  }
  setElems(C, 0, E);
}

void ruleOptionalGetElement(Ctx &C) {
  if (const ElemInfo *S = elemsOf(C, 0)) {
    if (S->Shp && !S->Empty)
      C.set(0, S->Elem, *S->Shp);
    else
      C.setType(0, S->Elem);
    return;
  }
  // Opset 18 accepts a plain tensor.
  Value *V = C.in(0);
  if (V && (V->Shp || V->Elem != DType::Undefined))
    C.copy(0, 0);
}

/// SequenceMap: the body runs on each element; outputs are sequences.
void ruleSequenceMap(Ctx &C) {
  Graph *Body = attrGraph(C.N, "body");
  if (!Body)
    return;
  for (size_t I = 0; I < Body->Inputs.size() && I < C.N.Inputs.size(); ++I) {
    Value *In = C.in(I);
    if (!In)
      continue;
    Value Elem;
    if (const ElemInfo *S = elemsOf(C, I)) {
      Elem.Elem = S->Elem;
      if (!S->Empty)
        Elem.Shp = S->Shp;
    } else {
      Elem.Elem = In->Elem;
      Elem.Shp = In->Shp;
    }
    typeLike(*Body->Inputs[I], Elem);
  }
  C.Inf.inferGraph(*Body);
  // The body runs once an element of the first input (a sequence): the
  // count its composition gives, else a symbol, bindable with --dim, that
  // the body's cost multiplies by. With the count known, each output holds
  // that many elements of the body's output shape (the body inferred on the
  // elements' common shape).
  const ElemInfo *First = elemsOf(C, 0);
  for (size_t O = 0; O < C.numOuts() && O < Body->Outputs.size(); ++O) {
    ElemInfo E;
    E.Elem = Body->Outputs[O]->Elem;
    E.Shp = Body->Outputs[O]->Shp;
    if (First && First->Items)
      E.Items.emplace(First->Items->size(), Body->Outputs[O]->Shp);
    setElems(C, O, E);
  }
  if (First && First->Items) {
    C.Inf.LoopTrips[&C.N] = sym::constant(int64_t(First->Items->size()));
  } else if (First && First->Empty) {
    C.Inf.LoopTrips[&C.N] = sym::constant(0);
  } else {
    Dim Elements = dataSymbol(C, "elements",
                              "elements of the sequence it maps (decided at run time)", nullptr);
    if (Elements.isDetermined())
      C.Inf.LoopTrips[&C.N] = Elements.expr();
  }
}

} // namespace ridge::shapes
