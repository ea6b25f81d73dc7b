//===- Movement.cpp - Shape rules: reshapes, slices, gathers, padding -----===//
#include "analyzer/shapes/Rules.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>

namespace ridge::shapes {

/// Resolves Reshape's -1 at NegIdx: elements of In over the other dims of
/// Out, when that divides exactly ([batch,seq,768] to [batch,seq,12,-1]
/// gives 64; [batch,seq,768] to [-1,768] gives batch*seq).
static Dim resolveInferredDim(const Shape &In, const Shape &Out, size_t NegIdx) {
  Shape Rest = Out;
  Rest.Dims.erase(Rest.Dims.begin() + NegIdx);
  if (In.isFullyKnown() && Rest.isFullyKnown()) { // without interning
    Dim N = productDim(In.Dims), D = productDim(Rest.Dims);
    if (!N.isKnown() || !D.isKnown() || D.extent() == 0 || N.extent() % D.extent())
      return Dim{};
    return Dim::known(N.extent() / D.extent());
  }
  auto Determined = [](const Shape &S) {
    return llvm::all_of(S.Dims, [](const Dim &D) { return D.isDetermined(); });
  };
  if (!Determined(In) || !Determined(Rest))
    return Dim{};
  Dim N = productDim(In.Dims), D = productDim(Rest.Dims);
  if (!N.isDetermined() || !D.isDetermined() || D == Dim::known(0))
    return Dim{};
  return Dim::of(sym::divideExactly(N.expr(), D.expr()));
}

void ruleReshape(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  IVec Target;
  if (C.Opset < 5 || !C.has(1)) {
    auto A = C.N.attrInts("shape");
    if (!A)
      return C.setType(0, T);
    for (int64_t V : *A)
      Target.push_back(IV::known(V));
  } else if (!C.vals(1, Target)) {
    const Shape *S = C.shape(1);
    if (S && S->rank() == 1 && S->Dims[0].isKnown())
      C.setRank(0, T, S->Dims[0].extent());
    else
      C.setType(0, T);
    return;
  }
  bool AllowZero = C.Opset >= 14 && C.N.attrInt("allowzero", 0) != 0;
  Shape Out;
  int64_t NegIdx = -1;
  for (size_t I = 0; I < Target.size(); ++I) {
    const IV &V = Target[I];
    if (V.Known && V.V == 0 && !AllowZero) {
      Out.Dims.push_back(X && I < X->rank() ? X->Dims[I] : Dim{});
    } else if (V.Known && V.V == -1) {
      if (NegIdx >= 0)
        return C.setType(0, T);
      NegIdx = I;
      Out.Dims.push_back(Dim{});
    } else {
      Dim D;
      if (!V.toDim(D))
        return C.setType(0, T);
      Out.Dims.push_back(D);
    }
  }
  // One element computed at run time: whether it is -1, 0 (copy) or a
  // positive extent, the element count fixes it as -1 would.
  if (NegIdx < 0 && !AllowZero) {
    auto Unknown = [](const IV &V) { return !V.Known && !V.E; };
    if (llvm::count_if(Target, Unknown) == 1)
      NegIdx = llvm::find_if(Target, Unknown) - Target.begin();
  }
  if (NegIdx >= 0 && X)
    Out.Dims[NegIdx] = resolveInferredDim(*X, Out, NegIdx);
  // Element counts must agree when both are known.
  if (X && X->isFullyKnown() && Out.isFullyKnown() &&
      *X->numElements() != *Out.numElements())
    return C.setType(0, T);
  C.set(0, T, Out);
  if (Out.isFullyKnown() || Out.rank() <= 1)
    passValues(C);
}

void ruleFlatten(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  int64_t Axis = C.N.attrInt("axis", 1), R = X->rank();
  if (Axis < 0)
    Axis += R;
  if (Axis < 0 || Axis > R)
    return C.setType(0, T);
  ArrayRef<Dim> D(X->Dims);
  C.setDims(0, T, {productDim(D.take_front(Axis)), productDim(D.drop_front(Axis))});
  passValues(C);
}

/// A transposed integer value of known shape: output axis I is input axis
/// Perm[I] (validated by ruleTranspose).
static void transposeValues(Ctx &C, ArrayRef<int64_t> Perm) {
  IVec V;
  SmallVector<int64_t, 4> D;
  if (!shapedVals(C, 0, V, D) || D.size() < 2)
    return;
  size_t R = D.size();
  SmallVector<size_t, 4> Stride(R, 1); // of the input, row-major
  for (size_t I = R - 1; I-- > 0;)
    Stride[I] = Stride[I + 1] * size_t(D[I + 1]);
  IVec Res(V.size());
  for (size_t K = 0; K < V.size(); ++K) {
    size_t Rest = K, Src = 0;
    for (size_t I = R; I-- > 0;) {
      size_t Ext = size_t(D[Perm[I]]);
      Src += (Rest % Ext) * Stride[Perm[I]];
      Rest /= Ext;
    }
    Res[K] = V[Src];
  }
  C.setVals(0, Res);
}

void ruleTranspose(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  size_t R = X->rank();
  SmallVector<int64_t, 4> Perm;
  if (auto P = C.N.attrInts("perm")) {
    if (P->size() != R)
      return C.setType(0, T);
    SmallVector<bool, 8> Seen(R, false);
    for (int64_t A : *P) {
      if (!normAxis(A, R) || Seen[A])
        return C.setType(0, T);
      Seen[A] = true;
      Perm.push_back(A);
    }
  } else {
    for (size_t I = R; I-- > 0;)
      Perm.push_back(int64_t(I));
  }
  Shape Out;
  for (int64_t A : Perm)
    Out.Dims.push_back(X->Dims[A]);
  C.set(0, T, std::move(Out));
  transposeValues(C, Perm);
}

void ruleSqueeze(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  SmallVector<int64_t, 4> Axes;
  Ctx::Src S = C.intsArg("axes", 1, Axes);
  const Shape *AS = C.shape(1);
  if (X && S == Ctx::Unknown && AS && AS->rank() == 1 && AS->Dims[0].isKnown() &&
      AS->Dims[0].extent() <= int64_t(X->rank()))
    return C.setRank(0, T, X->rank() - AS->Dims[0].extent());
  if (!X || S == Ctx::Unknown)
    return C.setType(0, T);
  size_t R = X->rank();
  SmallVector<bool, 8> Drop(R, false);
  if (S == Ctx::Absent) {
    for (size_t I = 0; I < R; ++I) {
      if (!X->Dims[I].isKnown())
        return C.setType(0, T); // might be 1: the rank is not known
      Drop[I] = X->Dims[I].extent() == 1;
    }
  } else {
    for (int64_t A : Axes) {
      if (!normAxis(A, R))
        return C.setType(0, T);
      if (X->Dims[A].isKnown() && X->Dims[A].extent() != 1)
        return C.setType(0, T);
      Drop[A] = true;
    }
  }
  Shape Out;
  for (size_t I = 0; I < R; ++I)
    if (!Drop[I])
      Out.Dims.push_back(X->Dims[I]);
  C.set(0, T, Out);
  if (Out.isFullyKnown() || Out.rank() <= 1)
    passValues(C);
}

void ruleUnsqueeze(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  SmallVector<int64_t, 4> Axes;
  Ctx::Src S = C.intsArg("axes", 1, Axes);
  const Shape *AS = C.shape(1);
  if (X && S == Ctx::Unknown && AS && AS->rank() == 1 && AS->Dims[0].isKnown())
    return C.setRank(0, T, X->rank() + AS->Dims[0].extent()); // where the 1s go is unknown
  if (!X || S != Ctx::Known)
    return C.setType(0, T);
  size_t R = X->rank() + Axes.size();
  SmallVector<bool, 8> New(R, false);
  for (int64_t A : Axes) {
    if (!normAxis(A, R) || New[A])
      return C.setType(0, T);
    New[A] = true;
  }
  Shape Out;
  size_t J = 0;
  for (size_t I = 0; I < R; ++I)
    Out.Dims.push_back(New[I] ? Dim::known(1) : X->Dims[J++]);
  C.set(0, T, Out);
  if (Out.isFullyKnown() || Out.rank() <= 1)
    passValues(C);
}

/// Integer values of any rank concatenated along Axis: for each index of
/// the dims before Axis, each input's block in turn.
static void concatShapedValues(Ctx &C, int64_t Axis) {
  SmallVector<IVec, 4> Vals;
  SmallVector<size_t, 4> Block; // each input's elements from Axis on
  size_t Outer = 0;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I) {
    if (!C.has(I))
      continue;
    IVec V;
    SmallVector<int64_t, 4> D;
    if (!shapedVals(C, I, V, D) || int64_t(D.size()) <= Axis)
      return;
    size_t O = 1, B = 1;
    for (size_t K = 0; K < D.size(); ++K)
      (int64_t(K) < Axis ? O : B) *= size_t(D[K]);
    if (Vals.empty())
      Outer = O;
    if (O != Outer)
      return;
    Vals.push_back(std::move(V));
    Block.push_back(B);
  }
  IVec All;
  for (size_t O = 0; O < Outer; ++O)
    for (size_t I = 0; I < Vals.size(); ++I)
      All.append(Vals[I].begin() + O * Block[I], Vals[I].begin() + (O + 1) * Block[I]);
  C.setVals(0, All);
}

void ruleConcat(Ctx &C) {
  DType T = C.elem(0);
  int64_t Axis = C.N.attrInt("axis", 0);
  const Shape *First = nullptr;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I)
    if (const Shape *S = C.shape(I)) {
      First = S;
      break;
    }
  if (!First || !normAxis(Axis, First->rank()))
    return C.setType(0, T);
  Shape Out = *First;
  SmallVector<Dim, 1> Along;
  bool AllKnownRank = true;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I) {
    if (!C.has(I))
      continue;
    const Shape *S = C.shape(I);
    if (!S) {
      AllKnownRank = false;
      continue;
    }
    if (S->rank() != Out.rank())
      return C.setType(0, T);
    for (size_t D = 0; D < Out.rank(); ++D) {
      if (D == size_t(Axis))
        continue;
      const Dim &A = Out.Dims[D], &B = S->Dims[D];
      if (A.isKnown() && B.isKnown() && A.extent() != B.extent())
        return C.setType(0, T);
      Out.Dims[D] = mergeDim(A, B);
    }
    Along.push_back(S->Dims[Axis]);
  }
  // The sum along the axis, as an expression when dims are symbolic
  // (two [batch, ...] inputs give 2*batch).
  Dim Sum = Dim::known(0);
  if (!AllKnownRank)
    Sum = Dim{};
  for (const Dim &D : Along)
    Sum = addDims(Sum, D);
  if (DimOverflow)
    return C.setType(0, T);
  Out.Dims[Axis] = Sum;
  C.set(0, T, Out);
  if (Out.rank() != 1)
    return concatShapedValues(C, Axis);
  // Known elements stay known beside inputs with no value (a shape whose
  // spatial dims are computed at run time: [1, 3, ?, ?]).
  IVec All;
  FVec AllF;
  bool Ints = true, Floats = true, AnyVals = false;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I) {
    if (!C.has(I))
      continue;
    IVec V;
    FVec F;
    if (Ints && C.valsOrUnknown(I, V)) {
      AnyVals |= llvm::any_of(V, [](const IV &X) { return X.Known || X.E; });
      All.append(V.begin(), V.end());
    } else {
      Ints = false;
    }
    if (Floats && C.Inf.FVals.count(C.in(I)) && C.floats(I, F))
      AllF.append(F.begin(), F.end());
    else
      Floats = false;
  }
  if (Ints && AnyVals)
    C.setVals(0, All);
  if (Floats)
    C.setFloats(0, AllF);
}

void ruleSplit(Ctx &C) {
  DType T = C.elem(0);
  unsigned NOut = C.numOuts();
  for (unsigned O = 0; O < NOut; ++O)
    C.setType(O, T);
  const Shape *X = C.shape(0);
  if (!X || !NOut)
    return;
  int64_t Axis = C.N.attrInt("axis", 0);
  if (!normAxis(Axis, X->rank()))
    return;
  const Dim &D = X->Dims[Axis];
  SmallVector<int64_t, 4> Sizes;
  Ctx::Src S = C.intsArg("split", 1, Sizes);
  SmallVector<Dim, 4> Parts;
  if (S == Ctx::Known) {
    if (Sizes.size() != NOut)
      return;
    int64_t Sum = 0;
    for (int64_t P : Sizes) {
      if (P < 0)
        return;
      if (!addOk(Sum, P, Sum))
        return;
      Parts.push_back(Dim::known(P));
    }
    if (D.isKnown() && D.extent() != Sum)
      return;
  } else if (S == Ctx::Unknown) {
    Parts.assign(NOut, Dim{});
  } else if (!D.isKnown()) {
    Parts.assign(NOut, NOut == 1 ? D : Dim{});
  } else if (C.N.attr("num_outputs")) {
    int64_t N = C.N.attrInt("num_outputs", NOut);
    if (N != int64_t(NOut) || N <= 0)
      return;
    int64_t Chunk = ceilDiv(D.extent(), N);
    for (unsigned O = 0; O < NOut; ++O)
      Parts.push_back(Dim::known(O + 1 < NOut ? Chunk : D.extent() - Chunk * (N - 1)));
    if (Parts.back().extent() < 0)
      return;
  } else {
    if (D.extent() % NOut != 0)
      return;
    Parts.assign(NOut, Dim::known(D.extent() / NOut));
  }
  Shape Out = *X;
  IVec V;
  bool HaveVals = X->rank() == 1 && C.vals(0, V);
  size_t Pos = 0;
  for (unsigned O = 0; O < NOut; ++O) {
    Out.Dims[Axis] = Parts[O];
    C.set(O, T, Out);
    if (HaveVals && Parts[O].isKnown() && Pos + Parts[O].extent() <= V.size()) {
      C.setVals(O, ArrayRef<IV>(V).slice(Pos, Parts[O].extent()));
      Pos += Parts[O].extent();
    } else {
      HaveVals = false;
    }
  }
}

/// The length of a slice of a dim of extent Dim (ONNX's clamping rules).
static int64_t sliceLen(int64_t D, int64_t Start, int64_t End, int64_t Step,
                 int64_t &First) {
  if (Start < 0)
    Start += D;
  if (End < 0)
    End += D;
  if (Step > 0) {
    Start = std::clamp<int64_t>(Start, 0, D);
    End = std::clamp<int64_t>(End, 0, D);
    First = Start;
    return End > Start ? ceilDiv(End - Start, Step) : 0;
  }
  Start = std::clamp<int64_t>(Start, 0, D - 1);
  End = std::clamp<int64_t>(End, -1, D - 1);
  First = Start;
  return Start > End ? ceilDiv(Start - End, -Step) : 0;
}

/// sliceLen's clamping in expressions, for a symbolic dim or bound: x[1:],
/// x[:-1] of [seq] give seq - 1 (a symbolic dim is at least 1), x[0:n] with
/// n the dim gives n. Unknown when a symbolic bound's sign cannot be told.
static Dim symbolicSliceLen(const Dim &D, const IV &St, const IV &En, int64_t Step) {
  using namespace sym;
  ExprRef N = D.expr();
  if (!N)
    return Dim{};
  constexpr int64_t ToEnd = std::numeric_limits<int32_t>::max(),
                    ToStart = std::numeric_limits<int32_t>::min();
  // A bound as an index: a negative one counts from the end.
  auto Index = [&](const IV &X) -> ExprRef {
    if (X.Known)
      return X.V < 0 ? add(N, constant(X.V)) : constant(X.V);
    return X.E && provablyLE(constant(0), X.E) ? X.E : nullptr;
  };
  auto Clamp = [](ExprRef X, ExprRef Lo, ExprRef Hi) { return min(max(X, Lo), Hi); };
  ExprRef Zero = constant(0), Last = sub(N, constant(1)), Len;
  if (Step > 0) {
    ExprRef B = Index(St), E = En.Known && En.V >= ToEnd ? N : Index(En);
    if (!B || !E)
      return Dim{};
    B = Clamp(B, Zero, N);
    E = Clamp(E, Zero, N);
    Len = ceilDiv(sub(E, B), constant(Step));
    if (provablyLE(B, E))
      return Dim::of(Len); // never negative
  } else {
    ExprRef B = St.Known && St.V >= ToEnd ? Last : Index(St);
    ExprRef E = En.Known && En.V <= ToStart ? constant(-1) : Index(En);
    if (!B || !E || Step == std::numeric_limits<int64_t>::min())
      return Dim{};
    B = Clamp(B, Zero, Last);
    E = Clamp(E, constant(-1), Last);
    Len = ceilDiv(sub(B, E), constant(-Step));
    if (provablyLE(E, B))
      return Dim::of(Len);
  }
  return Dim::of(max(Len, Zero));
}

/// The values of a slice of an integer value of known shape (any rank):
/// output coordinate k of axis a is input coordinate First[a] + k Step[a].
static void sliceValues(Ctx &C, const Shape &Out, ArrayRef<int64_t> First,
                        ArrayRef<int64_t> Step) {
  IVec V;
  SmallVector<int64_t, 4> D, OD;
  if (!shapedVals(C, 0, V, D) || !knownDims(&Out, OD))
    return;
  size_t R = D.size(), N = 1;
  for (size_t I = 0; I < R; ++I)
    N *= size_t(OD[I]);
  if (N > MaxValueElems)
    return;
  IVec Res;
  for (size_t K = 0; K < N; ++K) {
    size_t Rest = K, Src = 0, Stride = 1;
    for (size_t I = R; I-- > 0;) {
      int64_t Coord = First[I] + int64_t(Rest % size_t(OD[I])) * Step[I];
      Rest /= size_t(OD[I]);
      if (Coord < 0 || Coord >= D[I])
        return;
      Src += size_t(Coord) * Stride;
      Stride *= size_t(D[I]);
    }
    Res.push_back(V[Src]);
  }
  C.setVals(0, Res);
}

void ruleSlice(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  size_t R = X->rank();
  IVec Starts, Ends;
  SmallVector<int64_t, 4> Axes, Steps;
  bool HaveBounds, AxesKnown = true;
  if (C.Opset < 10 || (!C.has(1) && C.N.attr("starts"))) {
    auto S = C.N.attrInts("starts"), E = C.N.attrInts("ends");
    HaveBounds = S && E;
    if (HaveBounds) {
      for (int64_t V : *S)
        Starts.push_back(IV::known(V));
      for (int64_t V : *E)
        Ends.push_back(IV::known(V));
    }
    if (auto A = C.N.attrInts("axes"))
      Axes.assign(A->begin(), A->end());
  } else {
    HaveBounds = C.vals(1, Starts) && C.vals(2, Ends);
    if (C.has(3) && !C.ints(3, Axes))
      AxesKnown = false;
    if (C.has(4) && !C.ints(4, Steps))
      return C.setRank(0, T, R);
  }
  if (!AxesKnown)
    return C.setRank(0, T, R);
  size_t NAx = HaveBounds ? Starts.size() : Axes.size();
  if (!HaveBounds && Axes.empty()) {
    // Which axes are sliced is unknown without the bounds' lengths.
    const Shape *SS = C.shape(1);
    if (!SS || SS->rank() != 1 || !SS->Dims[0].isKnown())
      return C.setRank(0, T, R);
    NAx = SS->Dims[0].extent();
  }
  if (Axes.empty())
    for (size_t I = 0; I < NAx; ++I)
      Axes.push_back(I);
  if (Steps.empty())
    Steps.assign(Axes.size(), 1);
  if (Axes.size() != NAx || Steps.size() != NAx ||
      (HaveBounds && Ends.size() != NAx))
    return C.setRank(0, T, R);
  Shape Out = *X;
  SmallVector<int64_t, 4> Firsts(R, 0), StepOf(R, 1);
  SmallVector<bool, 8> Seen(R, false);
  bool AllKnown = true;
  for (size_t I = 0; I < NAx; ++I) {
    int64_t A = Axes[I];
    if (!normAxis(A, R) || Seen[A] || Steps[I] == 0)
      return C.setType(0, T);
    Steps[I] = std::clamp<int64_t>(Steps[I], -MaxExtent, MaxExtent);
    Seen[A] = true;
    StepOf[A] = Steps[I];
    const Dim &D = X->Dims[A];
    // Bounds that only the run decides (a box's corner in a detector's mask
    // paste): a data symbol, at most the sliced dim.
    bool RuntimeBounds = !HaveBounds || (!Starts[I].Known && !Starts[I].E) ||
                         (!Ends[I].Known && !Ends[I].E);
    if (RuntimeBounds) {
      IVec Probe;
      bool StartsRuntime = HaveBounds ? !Starts[I].Known && !Starts[I].E : !C.vals(1, Probe);
      Out.Dims[A] = D.isDetermined() && C.Opset >= 10 && C.has(1)
                        ? runtimeExtent(C, 0, size_t(A), StartsRuntime ? 1 : 2, I, "Slice",
                                        D.expr())
                        : Dim{};
      AllKnown = false;
      continue;
    }
    const IV &St = Starts[I], &En = Ends[I];
    int64_t Step = Steps[I];
    if (D.isKnown() && St.Known && En.Known) {
      Out.Dims[A] = Dim::known(sliceLen(D.extent(), St.V, En.V, Step, Firsts[A]));
      continue;
    }
    AllKnown = false;
    Out.Dims[A] = symbolicSliceLen(D, St, En, Step);
  }
  C.set(0, T, Out);
  if (AllKnown)
    sliceValues(C, Out, Firsts, StepOf);
}

void ruleGather(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *Idx = C.shape(1);
  if (!X || !Idx)
    return C.setType(0, T);
  int64_t Axis = C.N.attrInt("axis", 0);
  if (!normAxis(Axis, X->rank()))
    return C.setType(0, T);
  Shape Out;
  Out.Dims.append(X->Dims.begin(), X->Dims.begin() + Axis);
  Out.Dims.append(Idx->Dims.begin(), Idx->Dims.end());
  Out.Dims.append(X->Dims.begin() + Axis + 1, X->Dims.end());
  C.set(0, T, std::move(Out));
  IVec V;
  SmallVector<int64_t, 4> I;
  if (X->rank() == 1 && Idx->rank() <= 1 && C.vals(0, V) && C.ints(1, I)) {
    IVec Res; // the common case: elements of a shape vector
    for (int64_t K : I) {
      if (K < 0)
        K += V.size();
      if (K < 0 || size_t(K) >= V.size())
        return;
      Res.push_back(V[K]);
    }
    return C.setVals(0, Res);
  }
  // Any rank: output [pre, idx..., post] reads data [pre, index, post].
  SmallVector<int64_t, 4> XD, ID, OD, Pos, Src;
  size_t N;
  if (!shapedVals(C, 0, V, XD) || !shapedInts(C, 1, I, ID) || !valueDims(C, 0, OD, N))
    return;
  IVec Res(N);
  size_t IR = ID.size();
  for (size_t K = 0; K < N; ++K) {
    unravel(K, OD, Pos);
    Src.assign(Pos.begin(), Pos.begin() + Axis);
    int64_t At = I[ravel(ArrayRef<int64_t>(Pos).slice(Axis, IR), ID)];
    if (At < 0)
      At += XD[Axis];
    if (At < 0 || At >= XD[Axis])
      return;
    Src.push_back(At);
    Src.append(Pos.begin() + Axis + IR, Pos.end());
    Res[K] = V[ravel(Src, XD)];
  }
  C.setVals(0, Res);
}

/// GatherElements' and ScatterElements' addressing: element K of the
/// indices (dims ID) names the data element (dims XD) at K's coordinates
/// with axis's replaced by Index; its flat position, or none out of range.
static std::optional<size_t> elementAt(size_t K, int64_t Index, int64_t Axis,
                                       ArrayRef<int64_t> ID, ArrayRef<int64_t> XD,
                                       SmallVectorImpl<int64_t> &Pos) {
  unravel(K, ID, Pos);
  int64_t At = Index < 0 ? Index + XD[Axis] : Index;
  if (At < 0 || At >= XD[Axis])
    return std::nullopt;
  Pos[Axis] = At;
  for (size_t D = 0; D < XD.size(); ++D)
    if (Pos[D] >= XD[D])
      return std::nullopt;
  return ravel(Pos, XD);
}

/// Output [i0.., ik..] = data with axis's coordinate indices[i0.., ik..].
void ruleGatherElements(Ctx &C) {
  C.copy(0, 1, C.elem(0));
  int64_t Axis = C.N.attrInt("axis", 0);
  IVec V;
  SmallVector<int64_t, 4> I, XD, ID, Pos;
  if (!shapedVals(C, 0, V, XD) || !shapedInts(C, 1, I, ID) || ID.size() != XD.size() ||
      !normAxis(Axis, XD.size()))
    return;
  IVec Res(I.size());
  for (size_t K = 0; K < I.size(); ++K) {
    std::optional<size_t> At = elementAt(K, I[K], Axis, ID, XD, Pos);
    if (!At)
      return;
    Res[K] = V[*At];
  }
  C.setVals(0, Res);
}

/// The reduction a scatter applies to an element it writes.
static bool scatterCombine(StringRef Red, IV &Dst, const IV &Upd) {
  if (Red == "none") {
    Dst = Upd;
    return true;
  }
  BinOp Op = Red == "add" ? BinOp::Add : Red == "mul" ? BinOp::Mul
           : Red == "max" ? BinOp::Max : Red == "min" ? BinOp::Min : BinOp::None;
  if (Op == BinOp::None)
    return false;
  Dst = evalInt(Op, Dst, Upd, false);
  return true;
}

/// ScatterElements (and Scatter): data with updates[k] written at k's
/// coordinates, axis's replaced by indices[k].
void ruleScatterElements(Ctx &C) {
  C.copy(0, 0);
  int64_t Axis = C.N.attrInt("axis", 0);
  std::string Red = C.N.attrString("reduction", "none");
  IVec V, U;
  SmallVector<int64_t, 4> I, XD, ID, UD, Pos;
  if (!shapedVals(C, 0, V, XD) || !shapedInts(C, 1, I, ID) || !shapedVals(C, 2, U, UD) ||
      ID != UD || ID.size() != XD.size() || !normAxis(Axis, XD.size()))
    return;
  for (size_t K = 0; K < I.size(); ++K) {
    std::optional<size_t> At = elementAt(K, I[K], Axis, ID, XD, Pos);
    if (!At || !scatterCombine(Red, V[*At], U[K]))
      return;
  }
  C.setVals(0, V);
}

/// ScatterND: indices [..., q] address data's first q axes; each update is
/// the slice of data there (torch's index_put of a pad list).
void ruleScatterND(Ctx &C) {
  C.copy(0, 0);
  std::string Red = C.N.attrString("reduction", "none");
  IVec V, U;
  SmallVector<int64_t, 4> I, XD, ID, UD;
  if (!shapedVals(C, 0, V, XD) || !shapedInts(C, 1, I, ID) || !shapedVals(C, 2, U, UD) ||
      ID.empty())
    return;
  size_t Q = size_t(ID.back());
  if (Q > XD.size())
    return;
  size_t Slice = 1, Updates = 1;
  for (size_t D = Q; D < XD.size(); ++D)
    Slice *= size_t(XD[D]);
  for (size_t D = 0; D + 1 < ID.size(); ++D)
    Updates *= size_t(ID[D]);
  if (U.size() != Updates * Slice)
    return;
  SmallVector<int64_t, 4> Pos(XD.size(), 0);
  for (size_t K = 0; K < Updates; ++K) {
    for (size_t D = 0; D < Q; ++D) {
      int64_t At = I[K * Q + D];
      if (At < 0)
        At += XD[D];
      if (At < 0 || At >= XD[D])
        return;
      Pos[D] = At;
    }
    size_t Base = ravel(Pos, XD);
    for (size_t E = 0; E < Slice; ++E)
      if (!scatterCombine(Red, V[Base + E], U[K * Slice + E]))
        return;
  }
  C.setVals(0, V);
}

void ruleGatherND(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *Idx = C.shape(1);
  int64_t B = C.N.attrInt("batch_dims", 0);
  if (!X || !Idx || Idx->rank() < 1 || !Idx->Dims.back().isKnown())
    return C.setType(0, T);
  int64_t Last = Idx->Dims.back().extent();
  if (B < 0 || B >= int64_t(Idx->rank()) || Last > int64_t(X->rank()) - B)
    return C.setType(0, T);
  Shape Out;
  Out.Dims.append(Idx->Dims.begin(), Idx->Dims.end() - 1);
  Out.Dims.append(X->Dims.begin() + B + Last, X->Dims.end());
  C.set(0, T, Out);
  // Values: each index tuple (within its batch) picks a slice of data.
  IVec V;
  SmallVector<int64_t, 4> I, XD, ID;
  if (!shapedVals(C, 0, V, XD) || !shapedInts(C, 1, I, ID) || ID.back() != Last)
    return;
  for (int64_t D = 0; D < B; ++D) // the batch dims of indices and data agree
    if (ID[D] != XD[D])
      return;
  size_t Batches = 1, PerBatch = 1, Slice = 1, DataPerBatch = 1;
  for (int64_t D = 0; D < B; ++D)
    Batches *= size_t(ID[D]);
  for (size_t D = B; D + 1 < ID.size(); ++D)
    PerBatch *= size_t(ID[D]);
  for (size_t D = B + Last; D < XD.size(); ++D)
    Slice *= size_t(XD[D]);
  for (size_t D = B; D < XD.size(); ++D)
    DataPerBatch *= size_t(XD[D]);
  if (Batches * PerBatch * Slice > MaxValueElems)
    return;
  IVec Res;
  SmallVector<int64_t, 4> Pos(XD.size() - B, 0);
  ArrayRef<int64_t> Inner = ArrayRef<int64_t>(XD).drop_front(B);
  for (size_t Bt = 0; Bt < Batches; ++Bt)
    for (size_t K = 0; K < PerBatch; ++K) {
      std::fill(Pos.begin(), Pos.end(), 0);
      for (int64_t D = 0; D < Last; ++D) {
        int64_t At = I[(Bt * PerBatch + K) * Last + D];
        if (At < 0)
          At += Inner[D];
        if (At < 0 || At >= Inner[D])
          return;
        Pos[D] = At;
      }
      size_t Base = Bt * DataPerBatch + ravel(Pos, Inner);
      for (size_t E = 0; E < Slice; ++E)
        Res.push_back(V[Base + E]);
    }
  C.setVals(0, Res);
}

/// Values as dims of a shape; false when an element is negative.
bool valsToShape(ArrayRef<IV> V, Shape &S) {
  for (const IV &X : V) {
    Dim D;
    if (!X.toDim(D))
      return false;
    S.Dims.push_back(D);
  }
  return true;
}

void ruleExpand(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  IVec Target;
  Shape TS;
  if (C.vals(1, Target)) {
    // Dims of 1 in the target keep the input's dim; -1 is not allowed.
    for (const IV &V : Target) {
      Dim D;
      if (!V.toDim(D))
        return C.setType(0, T);
      TS.Dims.push_back(D);
    }
  } else if (const Shape *S = C.shape(1); S && S->rank() == 1 && S->Dims[0].isKnown()) {
    TS.Dims.resize(S->Dims[0].extent());
  } else {
    return C.setType(0, T);
  }
  if (!X)
    return C.setType(0, T);
  Shape Out = *X;
  if (!broadcastInto(Out, TS))
    return C.setType(0, T);
  C.set(0, T, Out);
  IVec V;
  if (Out.rank() == 1 && Out.Dims[0].isKnown() &&
      Out.Dims[0].extent() <= int64_t(MaxValueElems) && C.vals(0, V) && V.size() == 1) {
    IVec Res(Out.Dims[0].extent(), V[0]);
    return C.setVals(0, Res);
  }
  // Any rank: each output element reads its broadcast source.
  SmallVector<int64_t, 4> XD, OD;
  size_t N;
  if (!shapedVals(C, 0, V, XD) || !valueDims(C, 0, OD, N) || XD.size() > OD.size())
    return;
  for (size_t K = 0; K < XD.size(); ++K) // (a declared output shape may disagree)
    if (XD[K] != 1 && XD[K] != OD[OD.size() - XD.size() + K])
      return;
  IVec Res(N);
  for (size_t K = 0; K < N; ++K)
    Res[K] = V[broadcastSource(OD, XD, K)];
  C.setVals(0, Res);
}

/// The value of a tiled integer tensor of known dims and repeats: output
/// element K reads input element (K's index mod the input dims).
static void tileValues(Ctx &C) {
  IVec V;
  SmallVector<int64_t, 4> D, OutDims, Pos;
  size_t N;
  if (!shapedVals(C, 0, V, D) || !valueDims(C, 0, OutDims, N) || OutDims.size() != D.size())
    return;
  IVec Res(N);
  for (size_t K = 0; K < N; ++K) {
    unravel(K, OutDims, Pos);
    for (size_t I = 0; I < D.size(); ++I)
      Pos[I] %= D[I];
    Res[K] = V[ravel(Pos, D)];
  }
  C.setVals(0, Res);
}

/// Tile: dim I times repeats[I], each a number or an expression (a batch
/// repeated: [batch, 1, 1, 1]); values of small integer tensors tiled.
void ruleTile(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  IVec Rep;
  if (!C.valsOrUnknown(1, Rep)) {
    C.setRank(0, T, X->rank());
    return;
  }
  if (Rep.size() != X->rank())
    return C.setType(0, T);
  Shape Out = *X;
  for (size_t I = 0; I < Rep.size(); ++I) {
    Dim R;
    if (!Rep[I].toDim(R))
      return C.setType(0, T); // a negative repeat
    Out.Dims[I] = productDim({X->Dims[I], R});
  }
  C.set(0, T, Out);
  tileValues(C);
}

void rulePad(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  size_t R = X->rank();
  SmallVector<int64_t, 8> Pads;
  Ctx::Src S = C.intsArg("pads", 1, Pads);
  if (S == Ctx::Absent && C.N.attrInts("paddings")) {
    auto P = C.N.attrInts("paddings");
    Pads.assign(P->begin(), P->end());
    S = Ctx::Known;
  }
  // Pads computed from symbolic dims (torch's F.pad of a padding that makes
  // a dim divisible): each side an expression.
  IVec PadVals;
  if (S == Ctx::Unknown && C.vals(1, PadVals)) {
    for (const IV &P : PadVals)
      if (!P.expr())
        return C.setRank(0, T, R);
  } else if (S != Ctx::Known) {
    return C.setRank(0, T, R);
  } else {
    for (int64_t P : Pads)
      PadVals.push_back(IV::known(P));
  }
  SmallVector<int64_t, 4> Axes;
  if (C.has(3)) {
    if (!C.ints(3, Axes))
      return C.setRank(0, T, R);
  } else {
    for (size_t I = 0; I < R; ++I)
      Axes.push_back(I);
  }
  if (PadVals.size() != 2 * Axes.size())
    return C.setType(0, T);
  Shape Out = *X;
  size_t NA = Axes.size();
  for (size_t I = 0; I < NA; ++I) {
    int64_t A = Axes[I];
    if (!normAxis(A, R))
      return C.setType(0, T);
    const Dim &D = X->Dims[A];
    const IV &PB = PadVals[I], &PE = PadVals[I + NA];
    if (D.isKnown() && PB.Known && PE.Known) {
      i128 Add = i128(PB.V) + PE.V;
      if (!extentOk(D.extent() + Add))
        return C.setType(0, T);
      Out.Dims[A] = Dim::known(int64_t(D.extent() + Add));
    } else {
      Out.Dims[A] = Dim::of(sym::add(D.expr(), sym::add(PB.expr(), PE.expr())));
    }
  }
  C.set(0, T, Out);
}

void ruleDepthToSpace(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  int64_t B = C.N.attrInt("blocksize", 0);
  if (!X || X->rank() != 4 || B <= 0)
    return C.setType(0, T);
  bool ToSpace = C.N.OpType == "DepthToSpace";
  Shape Out = *X;
  const Dim &Ch = X->Dims[1];
  if (ToSpace)
    Out.Dims[1] = B > 3037000499 ? Dim{} : divDim(Ch, B * B);
  else
    Out.Dims[1] = B > 3037000499 ? Dim{} : mulDim(Ch, B * B);
  for (int I = 2; I < 4; ++I) {
    const Dim &D = X->Dims[I];
    if (!D.isKnown())
      Out.Dims[I] = Dim{};
    else if (ToSpace)
      Out.Dims[I] = mulDim(D, B);
    else
      Out.Dims[I] = D.extent() % B ? Dim{} : Dim::known(D.extent() / B);
  }
  C.set(0, T, Out);
}

void ruleCenterCropPad(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  IVec V;
  if (!X || !C.vals(1, V))
    return X ? C.setRank(0, T, X->rank()) : C.setType(0, T);
  SmallVector<int64_t, 4> Axes;
  if (auto A = C.N.attrInts("axes"))
    Axes.assign(A->begin(), A->end());
  else
    for (size_t I = 0; I < X->rank(); ++I)
      Axes.push_back(I);
  if (Axes.size() != V.size())
    return C.setType(0, T);
  Shape Out = *X;
  for (size_t I = 0; I < Axes.size(); ++I) {
    int64_t A = Axes[I];
    if (!normAxis(A, X->rank()) || !V[I].toDim(Out.Dims[A]))
      return C.setType(0, T);
  }
  C.set(0, T, Out);
}

} // namespace ridge::shapes
