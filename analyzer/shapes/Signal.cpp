//===- Signal.cpp - Shape rules: windows, DFT, STFT -----------------------===//
#include "analyzer/shapes/Rules.h"

namespace ridge::shapes {

void ruleWindow(Ctx &C) {
  DType T = attrDType(C.N, "output_datatype", DType::Float);
  IVec S;
  if (C.vals(0, S) && S.size() == 1) {
    Dim D;
    if (S[0].toDim(D))
      return C.setDims(0, T, {D});
  }
  C.setDims(0, T, {Dim{}});
}

void ruleMelWeightMatrix(Ctx &C) {
  DType T = attrDType(C.N, "output_datatype", DType::Float);
  int64_t Bins = 0, Dft = 0;
  Dim A, B;
  if (C.scalarInt(0, Bins) && Bins >= 0)
    B = Dim::known(Bins);
  if (C.scalarInt(1, Dft) && Dft >= 0)
    A = Dim::known(Dft / 2 + 1);
  C.setDims(0, T, {A, B});
}

void ruleDFT(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X || X->rank() < 2)
    return C.setType(0, T);
  int64_t Axis = C.N.attrInt("axis", 1);
  if (C.Opset >= 20) {
    int64_t A;
    if (C.has(2)) {
      if (!C.scalarInt(2, A))
        return C.setRank(0, T, X->rank());
      Axis = A;
    } else {
      Axis = -2;
    }
  }
  int64_t R = X->rank();
  if (!normAxis(Axis, R) || Axis == R - 1)
    return C.setType(0, T);
  Shape Out = *X;
  Out.Dims.back() = Dim::known(2);
  Dim N = X->Dims[Axis];
  if (C.has(1)) {
    int64_t L;
    N = C.scalarInt(1, L) && L >= 0 ? Dim::known(L) : Dim{};
  }
  if (C.N.attrInt("onesided", 0) && !C.N.attrInt("inverse", 0))
    N = N.isKnown() ? Dim::known(N.extent() / 2 + 1) : Dim{};
  Out.Dims[Axis] = N;
  C.set(0, T, Out);
}

void ruleSTFT(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X || X->rank() != 3)
    return C.setType(0, T);
  int64_t Step, Len = -1;
  if (C.has(3)) {
    if (!C.scalarInt(3, Len))
      Len = -1;
  } else if (const Shape *W = C.shape(2); W && W->rank() == 1 && W->Dims[0].isKnown()) {
    Len = W->Dims[0].extent();
  }
  Dim Frames, Bins;
  const Dim &Sig = X->Dims[1];
  if (Len >= 0 && C.scalarInt(1, Step) && Step > 0 && Sig.isKnown() && Sig.extent() >= Len)
    Frames = Dim::known((Sig.extent() - Len) / Step + 1);
  if (Len >= 0)
    Bins = Dim::known(C.N.attrInt("onesided", 1) ? Len / 2 + 1 : Len);
  C.setDims(0, T, {X->Dims[0], Frames, Bins, Dim::known(2)});
}

} // namespace ridge::shapes
