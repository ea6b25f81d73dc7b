//===- Reduction.cpp - Shape rules: reductions and normalizations ---------===//
#include "analyzer/shapes/Rules.h"
#include "llvm/ADT/StringSwitch.h"

namespace ridge::shapes {

void ruleBatchNorm(Ctx &C) {
  C.copy(0, 0);
  // Training outputs (running or saved mean and variance): [C].
  Shape Stat;
  if (const Shape *S = C.shape(1); S && S->rank() == 1)
    Stat = *S;
  else if (const Shape *X = C.shape(0); X && X->rank() >= 2)
    Stat.Dims.push_back(X->Dims[1]);
  else
    Stat.Dims.push_back(Dim{});
  DType T = C.has(3) ? C.elem(3) : C.elem(0);
  for (unsigned O = 1; O < C.numOuts(); ++O)
    C.set(O, T, Stat);
}

void ruleLayerNorm(Ctx &C) {
  C.copy(0, 0);
  DType Stash = attrDType(C.N, "stash_type", DType::Float);
  const Shape *X = C.shape(0);
  for (unsigned O = 1; O < C.numOuts(); ++O) {
    if (!X) {
      C.setType(O, Stash);
      continue;
    }
    int64_t Axis = C.N.attrInt("axis", -1);
    if (!normAxis(Axis, X->rank()))
      return;
    Shape S = *X;
    for (size_t I = Axis; I < S.rank(); ++I)
      S.Dims[I] = Dim::known(1);
    C.set(O, Stash, S);
  }
}


static void reduceTo(Ctx &C, unsigned O, DType T, const Shape &X,
              ArrayRef<int64_t> Axes, bool KeepDims) {
  SmallVector<bool, 8> Reduced(X.rank(), Axes.empty());
  for (int64_t A : Axes) {
    if (!normAxis(A, X.rank()))
      return C.setType(O, T);
    Reduced[A] = true;
  }
  Shape Out;
  for (size_t I = 0; I < X.rank(); ++I) {
    if (!Reduced[I])
      Out.Dims.push_back(X.Dims[I]);
    else if (KeepDims)
      Out.Dims.push_back(Dim::known(1));
  }
  C.set(O, T, std::move(Out));
}

/// Integer values of any rank reduced over Axes (all when empty): each
/// output element accumulates the input elements that map onto it.
static void reduceValues(Ctx &C, BinOp Op, ArrayRef<int64_t> Axes) {
  IVec V;
  SmallVector<int64_t, 4> XD, Pos;
  if (!shapedVals(C, 0, V, XD) || V.empty())
    return;
  SmallVector<bool, 8> Reduced(XD.size(), Axes.empty());
  for (int64_t A : Axes) {
    if (!normAxis(A, XD.size()))
      return;
    Reduced[A] = true;
  }
  SmallVector<int64_t, 4> KeptDims;
  for (size_t D = 0; D < XD.size(); ++D)
    KeptDims.push_back(Reduced[D] ? 1 : XD[D]);
  size_t N = 1;
  for (int64_t D : KeptDims)
    N *= size_t(D);
  SmallVector<IV, 4> Acc(N);
  SmallVector<bool, 4> Seen(N, false);
  for (size_t K = 0; K < V.size(); ++K) {
    unravel(K, XD, Pos);
    for (size_t D = 0; D < XD.size(); ++D)
      if (Reduced[D])
        Pos[D] = 0;
    size_t O = ravel(Pos, KeptDims);
    Acc[O] = Seen[O] ? evalInt(Op, Acc[O], V[K], false) : V[K];
    Seen[O] = true;
  }
  C.setVals(0, IVec(Acc.begin(), Acc.end()));
}

void ruleReduce(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  bool KeepDims = C.N.attrInt("keepdims", 1) != 0;
  bool Noop = C.N.attrInt("noop_with_empty_axes", 0) != 0;
  SmallVector<int64_t, 4> Axes;
  Ctx::Src S = C.intsArg("axes", 1, Axes);
  if (!X)
    return C.setType(0, T);
  if (S == Ctx::Unknown) {
    if (KeepDims)
      C.setRank(0, T, X->rank());
    else
      C.setType(0, T);
    return;
  }
  if (Axes.empty() && Noop) {
    C.copy(0, 0);
    IVec V;
    if (C.vals(0, V))
      C.setVals(0, V);
    return;
  }
  reduceTo(C, 0, T, *X, Axes, KeepDims);
  // Values of a reduced 1-D vector (numel = ReduceProd(Shape(x)); the max of
  // a float constant that sizes a pad).
  BinOp Op = llvm::StringSwitch<BinOp>(C.N.OpType)
                 .Case("ReduceProd", BinOp::Mul).Case("ReduceSum", BinOp::Add)
                 .Case("ReduceMax", BinOp::Max).Case("ReduceMin", BinOp::Min)
                 .Default(BinOp::None);
  if (Op == BinOp::None)
    return;
  if (X->rank() > 1)
    return reduceValues(C, Op, Axes);
  FVec F;
  if (C.Inf.FVals.count(C.in(0)) && C.floats(0, F) && !F.empty()) {
    double Acc = F[0];
    for (size_t I = 1; I < F.size(); ++I)
      if (!evalFloat(Op, Acc, F[I], Acc))
        return;
    C.setFloats(0, {Acc});
    return;
  }
  IVec V;
  if (!C.vals(0, V) || V.empty())
    return;
  IV Acc = V[0];
  for (size_t I = 1; I < V.size(); ++I)
    Acc = evalInt(Op, Acc, V[I], false);
  C.setVals(0, {Acc});
}

/// CumSum: running sums along axis (exclusive: before the element; reverse:
/// from the end), of integer values of known dims.
void ruleCumSum(Ctx &C) {
  C.copy(0, 0);
  IVec V;
  SmallVector<int64_t, 4> XD, Pos;
  int64_t Axis;
  if (!shapedVals(C, 0, V, XD) || XD.empty() || !C.scalarInt(1, Axis) ||
      !normAxis(Axis, XD.size()) || !isIntType(C.elem(0)))
    return;
  bool Exclusive = C.N.attrInt("exclusive", 0) != 0, Reverse = C.N.attrInt("reverse", 0) != 0;
  size_t Stride = 1;
  for (size_t D = Axis + 1; D < XD.size(); ++D)
    Stride *= size_t(XD[D]);
  int64_t Len = XD[Axis];
  IVec Res(V.size());
  for (size_t K = 0; K < V.size(); ++K) {
    unravel(K, XD, Pos);
    if (Pos[Axis] != 0)
      continue; // each line once, from its first element
    IV Acc = IV::known(0);
    for (int64_t J = 0; J < Len; ++J) {
      int64_t At = Reverse ? Len - 1 - J : J;
      size_t E = K + size_t(At) * Stride;
      if (Exclusive) {
        Res[E] = Acc;
        Acc = evalInt(BinOp::Add, Acc, V[E], false);
      } else {
        Acc = evalInt(BinOp::Add, Acc, V[E], false);
        Res[E] = Acc;
      }
    }
  }
  C.setVals(0, Res);
}

void ruleArgMinMax(Ctx &C) {
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, DType::Int64);
  int64_t Axis = C.N.attrInt("axis", 0);
  reduceTo(C, 0, DType::Int64, *X, {Axis}, C.N.attrInt("keepdims", 1) != 0);
}

} // namespace ridge::shapes
