//===- DataDependent.cpp - Shape rules: data-dependent extents ------------===//
#include "analyzer/shapes/Rules.h"

namespace ridge::shapes {

void ruleTopK(Ctx &C) {
  DType T = C.elem(0);
  C.setType(0, T);
  C.setType(1, DType::Int64);
  const Shape *X = C.shape(0);
  if (!X)
    return;
  int64_t Axis = C.N.attrInt("axis", -1);
  if (!normAxis(Axis, X->rank()))
    return;
  Shape Out = *X;
  int64_t K;
  if (C.has(1)) {
    IVec KV;
    if (C.vals(1, KV) && KV.size() == 1 && KV[0].expr()) {
      if (!KV[0].toDim(Out.Dims[Axis]))
        return;
    } else {
      Out.Dims[Axis] = dataSymbol(C, "k", "TopK's k, computed at run time",
                                  X->Dims[Axis].expr());
    }
  } else if ((K = C.N.attrInt("k", -1)) >= 0) {
    Out.Dims[Axis] = Dim::known(K);
  } else {
    return;
  }
  C.set(0, T, Out);
  C.set(1, DType::Int64, Out);
}

/// Elements of S as an expression (nullptr when a dim is unknown).
static sym::ExprRef elements(const Shape *S) {
  return S ? productDim(S->Dims).expr() : nullptr;
}

void ruleNonZero(Ctx &C) {
  const Shape *X = C.shape(0);
  C.setDims(0, DType::Int64,
            {X ? Dim::known(X->rank()) : Dim{},
             dataSymbol(C, "nnz", "non-zero elements", elements(X))});
}

void ruleCompress(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  const Attribute *A = C.N.attr("axis");
  if (!A)
    return C.setDims(0, T, {dataSymbol(C, "selected", "elements the condition selects",
                                       elements(X))});
  if (!X)
    return C.setType(0, T);
  int64_t Axis = A->I;
  if (!normAxis(Axis, X->rank()))
    return C.setType(0, T);
  Shape Out = *X;
  Out.Dims[Axis] = dataSymbol(C, "selected", "slices the condition selects",
                              X->Dims[Axis].expr());
  C.set(0, T, Out);
}

void ruleUnique(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  const Attribute *A = C.N.attr("axis");
  Dim InvLen, Count;
  if (!A) {
    if (X)
      InvLen = productDim(X->Dims);
    Count = dataSymbol(C, "unique", "distinct elements", InvLen.expr());
    C.setDims(0, T, {Count});
  } else if (X) {
    int64_t Axis = A->I;
    if (normAxis(Axis, X->rank())) {
      Shape Out = *X;
      InvLen = X->Dims[Axis];
      Count = dataSymbol(C, "unique", "distinct slices", InvLen.expr());
      Out.Dims[Axis] = Count;
      C.set(0, T, Out);
    }
  } else {
    C.setType(0, T);
  }
  C.setDims(1, DType::Int64, {Count});
  C.setDims(2, DType::Int64, {InvLen});
  C.setDims(3, DType::Int64, {Count});
}

/// NonMaxSuppression(boxes [B, N, 4], scores [B, C, N], max_output_boxes_per_class
/// M): at most B * C * min(M, N) selected (batch, class, box) triples.
void ruleNonMaxSuppression(Ctx &C) {
  const Shape *Scores = C.shape(1);
  sym::ExprRef Bound = nullptr;
  if (Scores && Scores->rank() == 3) {
    sym::ExprRef PerClass = Scores->Dims[2].expr();
    int64_t M;
    if (C.has(2) && C.scalarInt(2, M) && M >= 0)
      PerClass = sym::min(PerClass, sym::constant(M));
    else if (!C.has(2))
      PerClass = sym::constant(0); // max_output_boxes_per_class defaults to 0
    Bound = sym::mul(sym::mul(Scores->Dims[0].expr(), Scores->Dims[1].expr()), PerClass);
  }
  if (Bound && Bound->constant() == std::optional<int64_t>(0))
    return C.setDims(0, DType::Int64, {Dim::known(0), Dim::known(3)});
  C.setDims(0, DType::Int64,
            {dataSymbol(C, "selected", "boxes selected (batch, class, box)", Bound),
             Dim::known(3)});
}

} // namespace ridge::shapes
