//===- Constants.cpp - Shape rules: Shape, Size, constants, ranges --------===//
#include "analyzer/shapes/Rules.h"
#include <algorithm>
#include <cmath>

namespace ridge::shapes {

void ruleShape(Ctx &C) {
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, DType::Int64);
  int64_t R = X->rank();
  int64_t Start = C.N.attrInt("start", 0), End = C.N.attrInt("end", R);
  if (Start < 0)
    Start += R;
  if (End < 0)
    End += R;
  Start = std::clamp<int64_t>(Start, 0, R);
  End = std::clamp<int64_t>(End, 0, R);
  int64_t Len = std::max<int64_t>(End - Start, 0);
  C.setDims(0, DType::Int64, {Dim::known(Len)});
  IVec V;
  for (int64_t I = Start; I < Start + Len; ++I)
    V.push_back(IV::fromDim(X->Dims[I]));
  C.setVals(0, V);
}

void ruleSize(Ctx &C) {
  C.setDims(0, DType::Int64, {});
  const Shape *X = C.shape(0);
  if (!X)
    return;
  Dim N = productDim(X->Dims);
  C.setVals(0, {IV::fromDim(N)});
}

/// A Constant's or ConstantOfShape's tensor payload, when the loader stored
/// it in the attribute (Ints or Floats sized as the tensor).
static bool tensorPayload(const Attribute &A, SmallVectorImpl<int64_t> &Is, FVec &Fs,
                   bool &IsInt) {
  int64_t N = 1;
  for (int64_t D : A.tensorDims())
    if (D < 0 || __builtin_mul_overflow(N, D, &N)) // dims come from the file
      return false;
  if (N > int64_t(MaxValueElems))
    return false;
  IsInt = isIntType(A.TensorElem) || A.TensorElem == DType::Bool;
  if (IsInt && int64_t(A.Ints.size()) == N) {
    Is.assign(A.Ints.begin(), A.Ints.end());
    return true;
  }
  if (isFloatingPoint(A.TensorElem) && int64_t(A.floats().size()) == N) {
    Fs.assign(A.floats().begin(), A.floats().end());
    return true;
  }
  return false;
}

void ruleConstant(Ctx &C) {
  for (const Attribute &A : C.N.Attrs) {
    using K = Attribute::Kind;
    StringRef Name = A.Name;
    if (Name == "value" && A.K == K::Tensor) {
      Shape S;
      for (int64_t D : A.tensorDims())
        S.Dims.push_back(Dim::known(D));
      C.set(0, A.TensorElem, S);
      SmallVector<int64_t, 4> Is;
      FVec Fs;
      bool IsInt;
      if (tensorPayload(A, Is, Fs, IsInt)) {
        if (IsInt)
          C.setInts(0, Is);
        else
          C.setFloats(0, Fs);
      }
      return;
    }
    if (Name == "value_int") {
      C.setDims(0, DType::Int64, {});
      C.setInts(0, {A.I});
      return;
    }
    if (Name == "value_ints") {
      C.setDims(0, DType::Int64, {Dim::known(A.Ints.size())});
      C.setInts(0, A.Ints);
      return;
    }
    if (Name == "value_float") {
      C.setDims(0, DType::Float, {});
      C.setFloats(0, {A.F});
      return;
    }
    if (Name == "value_floats") {
      C.setDims(0, DType::Float, {Dim::known(A.floats().size())});
      C.setFloats(0, A.floats());
      return;
    }
    if (Name == "value_string")
      return C.setDims(0, DType::String, {});
    if (Name == "value_strings")
      return C.setDims(0, DType::String, {Dim::known(A.strings().size())});
  }
}

void ruleConstantOfShape(Ctx &C) {
  const Attribute *A = C.N.attr("value");
  DType T = A && A->K == Attribute::Kind::Tensor ? A->TensorElem : DType::Float;
  IVec V;
  Shape Out;
  if (!C.valsOrUnknown(0, V)) {
    if (const Shape *S = C.shape(0); S && S->rank() == 1 && S->Dims[0].isKnown())
      return C.setRank(0, T, S->Dims[0].extent());
    return C.setType(0, T);
  }
  for (size_t I = 0; I < V.size(); ++I) {
    Dim D;
    if (!V[I].Known && !V[I].E) // a value only the run decides
      D = runtimeExtent(C, 0, I, 0, I, "ConstantOfShape", nullptr);
    else if (!V[I].toDim(D))
      return C.setType(0, T);
    Out.Dims.push_back(D);
  }
  C.set(0, T, Out);
  if (!Out.isFullyKnown() || *Out.numElements() > MaxValueElems)
    return;
  size_t N = size_t(*Out.numElements());
  SmallVector<int64_t, 4> Is;
  FVec Fs;
  bool IsInt;
  if (!A) {
    if (N <= MaxFloatValueElems)
      C.setFloats(0, FVec(N, 0.0));
  } else if (tensorPayload(*A, Is, Fs, IsInt) && (Is.size() == 1 || Fs.size() == 1)) {
    if (IsInt)
      C.setInts(0, SmallVector<int64_t, 4>(N, Is[0]));
    else if (N <= MaxFloatValueElems)
      C.setFloats(0, FVec(N, Fs[0]));
  }
}

void ruleRange(Ctx &C) {
  DType T = C.elem(0);
  IVec S, L, D;
  if (C.vals(0, S) && C.vals(1, L) && C.vals(2, D) && S.size() == 1 &&
      L.size() == 1 && D.size() == 1 && !isFloatingPoint(T)) {
    if (S[0].Known && L[0].Known && D[0].Known && D[0].V != 0) {
      i128 Span = i128(L[0].V) - S[0].V, Step = D[0].V;
      i128 Q = Span / Step;
      if (Q * Step != Span && ((Span < 0) == (Step < 0)))
        ++Q; // ceil
      if (Q > MaxExtent)
        return C.setDims(0, T, {Dim{}});
      int64_t N = std::max<int64_t>(int64_t(Q), 0);
      C.setDims(0, T, {Dim::known(N)});
      if (N <= int64_t(MaxValueElems)) {
        SmallVector<int64_t, 4> Xs;
        for (int64_t I = 0; I < N; ++I)
          Xs.push_back(S[0].V + I * D[0].V);
        C.setInts(0, Xs);
      }
      return;
    }
    if (S[0].is(0) && D[0].is(1)) { // arange(n) for a symbolic n
      Dim N;
      if (L[0].toDim(N))
        return C.setDims(0, T, {N});
    }
    return C.setDims(0, T, {Dim{}});
  }
  FVec FS, FL, FD;
  if (C.floats(0, FS) && C.floats(1, FL) && C.floats(2, FD) && FS.size() == 1 &&
      FL.size() == 1 && FD.size() == 1 && FD[0] != 0) {
    double N = std::ceil((FL[0] - FS[0]) / FD[0]);
    if (std::isfinite(N) && N < 9.0e18)
      return C.setDims(0, T, {Dim::known(std::max<int64_t>(int64_t(N), 0))});
  }
  // A start, limit or delta only the run knows (a graph input, a value
  // computed from the data): the length is a data symbol.
  for (unsigned I = 0; I < 3; ++I) {
    IVec X;
    FVec F;
    if (C.has(I) && !C.vals(I, X) && !C.floats(I, F))
      return C.setDims(0, T, {runtimeExtent(C, 0, 0, I, 0, "Range", nullptr)});
  }
  C.setDims(0, T, {Dim{}});
}

void ruleOneHot(Ctx &C) {
  DType T = C.elem(2);
  const Shape *I = C.shape(0);
  if (!I)
    return C.setType(0, T);
  int64_t R = I->rank() + 1;
  int64_t Axis = C.N.attrInt("axis", -1);
  if (!normAxis(Axis, R))
    return C.setType(0, T);
  Dim Depth;
  FVec D;
  if (C.floats(1, D) && D.size() == 1 && D[0] >= 0 && D[0] < 9.0e18)
    Depth = Dim::known(int64_t(D[0]));
  Shape Out = *I;
  Out.Dims.insert(Out.Dims.begin() + Axis, Depth);
  C.set(0, T, Out);
}


void ruleEyeLike(Ctx &C) { C.copy(0, 0, attrDType(C.N, "dtype", C.elem(0))); }

void ruleRandom(Ctx &C) {
  DType T = attrDType(C.N, "dtype", DType::Float);
  auto S = C.N.attrInts("shape");
  if (!S)
    return C.setType(0, T);
  Shape Out;
  for (int64_t D : *S)
    Out.Dims.push_back(D >= 0 ? Dim::known(D) : Dim{});
  C.set(0, T, Out);
}

void ruleRandomLike(Ctx &C) { C.copy(0, 0, attrDType(C.N, "dtype", C.elem(0))); }

void ruleMultinomial(Ctx &C) {
  DType T = attrDType(C.N, "dtype", DType::Int32);
  const Shape *X = C.shape(0);
  if (!X || X->rank() != 2)
    return C.setType(0, T);
  C.setDims(0, T, {X->Dims[0], Dim::known(C.N.attrInt("sample_size", 1))});
}

} // namespace ridge::shapes
