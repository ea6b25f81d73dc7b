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
    if (C.vals(1, KV) && KV.size() == 1) {
      if (!KV[0].toDim(Out.Dims[Axis]))
        return;
    } else {
      Out.Dims[Axis] = Dim{};
    }
  } else if ((K = C.N.attrInt("k", -1)) >= 0) {
    Out.Dims[Axis] = Dim::known(K);
  } else {
    return;
  }
  C.set(0, T, Out);
  C.set(1, DType::Int64, Out);
}

void ruleNonZero(Ctx &C) {
  const Shape *X = C.shape(0);
  C.setDims(0, DType::Int64, {X ? Dim::known(X->rank()) : Dim{}, Dim{}});
}

void ruleCompress(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  const Attribute *A = C.N.attr("axis");
  if (!A)
    return C.setDims(0, T, {Dim{}});
  if (!X)
    return C.setType(0, T);
  int64_t Axis = A->I;
  if (!normAxis(Axis, X->rank()))
    return C.setType(0, T);
  Shape Out = *X;
  Out.Dims[Axis] = Dim{};
  C.set(0, T, Out);
}

void ruleUnique(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  const Attribute *A = C.N.attr("axis");
  Dim InvLen;
  if (!A) {
    C.setDims(0, T, {Dim{}});
    if (X)
      InvLen = productDim(X->Dims);
  } else if (X) {
    int64_t Axis = A->I;
    if (normAxis(Axis, X->rank())) {
      Shape Out = *X;
      Out.Dims[Axis] = Dim{};
      C.set(0, T, Out);
      InvLen = X->Dims[Axis];
    }
  } else {
    C.setType(0, T);
  }
  C.setDims(1, DType::Int64, {Dim{}});
  C.setDims(2, DType::Int64, {InvLen});
  C.setDims(3, DType::Int64, {Dim{}});
}

void ruleNonMaxSuppression(Ctx &C) {
  C.setDims(0, DType::Int64, {Dim{}, Dim::known(3)});
}

} // namespace ridge::shapes
