//===- Elementwise.cpp - Shape rules: element-wise, casts, quantization ---===//
#include "analyzer/shapes/Rules.h"
#include <algorithm>
#include <cmath>

namespace ridge::shapes {

void ruleUnary(Ctx &C) { C.copy(0, 0); }

/// Output 0 holds input 0's elements (Identity, Reshape, Squeeze, ...).
void passValues(Ctx &C) {
  IVec V;
  if (C.vals(0, V))
    C.setVals(0, V);
  auto It = C.Inf.FVals.find(C.in(0));
  if (It != C.Inf.FVals.end()) {
    FVec F = It->second;
    C.setFloats(0, F);
  }
}

void ruleIdentity(Ctx &C) {
  if (const ElemInfo *E = elemsOf(C, 0))
    setElems(C, 0, *E);
  C.copy(0, 0);
  passValues(C);
}

void ruleToBool(Ctx &C) { C.copy(0, 0, DType::Bool); }

void ruleNot(Ctx &C) {
  C.copy(0, 0, DType::Bool);
  IVec V;
  if (C.vals(0, V)) {
    for (IV &X : V)
      X = X.Known ? IV::known(!X.V) : IV{};
    C.setVals(0, V);
  }
}

/// Neg, Abs, Floor, Ceil, Round, Sqrt, Relu, Sign, and (floats) Reciprocal,
/// Exp, Log: shape as input 0; values of known elements.
void ruleUnaryMath(Ctx &C) {
  C.copy(0, 0);
  StringRef Op = C.N.OpType;
  if (C.Inf.FVals.count(C.in(0))) {
    FVec F;
    C.floats(0, F);
    for (double &X : F) {
      if (Op == "Neg") X = -X;
      else if (Op == "Abs") X = std::fabs(X);
      else if (Op == "Floor") X = std::floor(X);
      else if (Op == "Ceil") X = std::ceil(X);
      else if (Op == "Round") X = std::nearbyint(X);
      else if (Op == "Sqrt") X = std::sqrt(X);
      else if (Op == "Relu") X = std::max(X, 0.0);
      else if (Op == "Reciprocal") X = 1.0 / X;
      else if (Op == "Exp") X = std::exp(X);
      else if (Op == "Log") X = std::log(X);
      else if (Op == "Sign") X = X > 0 ? 1.0 : X < 0 ? -1.0 : 0.0;
      else return;
    }
    C.setFloats(0, F);
    return;
  }
  IVec V;
  if (!C.vals(0, V) || !isIntType(C.elem(0)))
    return;
  for (IV &X : V) {
    if (!X.Known || X.V == I64Min) {
      X = IV{};
      continue;
    }
    if (Op == "Neg") X.V = -X.V;
    else if (Op == "Abs") X.V = std::abs(X.V);
    else if (Op == "Relu") X.V = std::max<int64_t>(X.V, 0);
    else if (Op == "Sign") X.V = X.V > 0 ? 1 : X.V < 0 ? -1 : 0;
    else if (Op != "Floor" && Op != "Ceil" && Op != "Round") return;
  }
  C.setVals(0, V);
}

void ruleCast(Ctx &C) {
  DType To = attrDType(C.N, "to", DType::Undefined);
  C.copy(0, 0, To);
  DType From = C.elem(0);
  IVec V;
  FVec F;
  bool FromInt = isIntType(From) || From == DType::Bool;
  bool ToInt = isIntType(To) || To == DType::Bool;
  if (FromInt && ToInt && C.vals(0, V)) {
    if (To == DType::Bool)
      for (IV &X : V)
        X = X.Known ? IV::known(X.V != 0) : IV{};
    C.setVals(0, V);
  } else if (FromInt && isFloatingPoint(To) && C.floats(0, F)) {
    C.setFloats(0, F);
  } else if (isFloatingPoint(From) && C.Inf.FVals.count(C.in(0)) && C.floats(0, F)) {
    if (isFloatingPoint(To)) {
      C.setFloats(0, F);
    } else if (ToInt) {
      SmallVector<int64_t, 4> Is;
      for (double X : F) {
        if (!std::isfinite(X) || std::fabs(X) > 9.0e18)
          return;
        Is.push_back(To == DType::Bool ? X != 0 : int64_t(std::trunc(X)));
      }
      C.setInts(0, Is);
    }
  }
}

void ruleCastLike(Ctx &C) { C.copy(0, 0, C.elem(1)); }

/// Multidirectional broadcasting over the present inputs, from First on.
void broadcastRule(Ctx &C, unsigned First, DType T) {
  Shape Out;
  bool Any = false;
  for (unsigned I = First; I < C.N.Inputs.size(); ++I) {
    if (!C.has(I))
      continue;
    const Shape *S = C.shape(I);
    if (!S) {
      C.setType(0, T);
      return;
    }
    if (!Any) {
      Out = *S;
      Any = true;
    } else if (!broadcastInto(Out, *S)) {
      C.setType(0, T);
      C.invalid(llvm::formatv("input {0} {1} does not broadcast against input {2} {3}", I,
                              S->str(), First, C.shape(First) ? C.shape(First)->str() : "?"));
      return;
    }
  }
  if (Any)
    C.set(0, T, std::move(Out));
  else
    C.setType(0, T);
}

/// Broadcasts small values: lengths equal or one of them 1.
template <typename T>
static bool broadcastVals(const SmallVectorImpl<T> &A, const SmallVectorImpl<T> &B,
                   size_t &Len) {
  if (A.size() == B.size() || B.size() == 1) {
    Len = A.size();
    return true;
  }
  if (A.size() == 1) {
    Len = B.size();
    return true;
  }
  return false;
}

/// Every input is a 1-D value (or a scalar): its values broadcast by length.
static bool flatOperands(Ctx &C) {
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I)
    if (C.has(I) && C.rank(I) > 1)
      return false;
  return true;
}

/// Integer values of any rank with known shapes, broadcast element by
/// element through the shapes (a [2,1] and a [1,3] value give [2,3]); false
/// when the shapes or values are not all known, or the inputs are 1-D (the
/// caller's flat broadcast covers those, unknown lengths included).
static bool broadcastShapedValues(Ctx &C, BinOp Op, bool FMod) {
  if (flatOperands(C) || !(isIntType(C.elem(0)) || C.elem(0) == DType::Bool))
    return false;
  SmallVector<int64_t, 4> OutDims;
  Value *Out = C.out(0);
  if (!Out || !knownDims(Out->Shp ? &*Out->Shp : nullptr, OutDims))
    return false;
  std::optional<double> N = Out->Shp->numElements();
  if (!N || *N > MaxValueElems)
    return false;
  SmallVector<IVec, 2> Vals;
  SmallVector<SmallVector<int64_t, 4>, 2> Dims;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I) {
    IVec V;
    SmallVector<int64_t, 4> D;
    if (!C.has(I) || !shapedVals(C, I, V, D) || D.size() > OutDims.size())
      return false;
    // Each dim 1 or the output's (a declared output shape may disagree).
    for (size_t K = 0; K < D.size(); ++K)
      if (D[K] != 1 && D[K] != OutDims[OutDims.size() - D.size() + K])
        return false;
    Vals.push_back(std::move(V));
    Dims.push_back(std::move(D));
  }
  IVec R;
  for (size_t K = 0; K < size_t(*N); ++K) {
    IV Acc = Vals[0][broadcastSource(OutDims, Dims[0], K)];
    for (size_t I = 1; I < Vals.size(); ++I)
      Acc = evalInt(Op, Acc, Vals[I][broadcastSource(OutDims, Dims[I], K)], FMod);
    R.push_back(Acc);
  }
  C.setVals(0, R);
  return true;
}

/// Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean, Mod, BitShift, PRelu, the
/// bitwise and logical ops and the comparisons (bool results).
void ruleBroadcast(Ctx &C) {
  BinOp Op = binOpOf(C.N.OpType);
  bool Bool = Op == BinOp::Equal || Op == BinOp::Less || Op == BinOp::Greater ||
              Op == BinOp::LessEq || Op == BinOp::GreaterEq ||
              Op == BinOp::And || Op == BinOp::Or || Op == BinOp::Xor;
  DType T = Bool ? DType::Bool : C.elem(0);
  broadcastRule(C, 0, T);
  if (Op == BinOp::None || C.N.Inputs.empty() || !C.has(0))
    return;
  bool FMod = C.N.attrInt("fmod", 0) != 0;
  if (broadcastShapedValues(C, Op, FMod))
    return;
  // Integer values.
  IVec Acc;
  if (C.vals(0, Acc) && (isIntType(C.elem(0)) || C.elem(0) == DType::Bool) &&
      flatOperands(C)) {
    bool Ok = true;
    for (unsigned I = 1; I < C.N.Inputs.size() && Ok; ++I) {
      IVec B;
      size_t Len;
      if (!C.vals(I, B) || !broadcastVals(Acc, B, Len)) {
        Ok = false;
        break;
      }
      IVec R;
      for (size_t K = 0; K < Len; ++K)
        R.push_back(evalInt(Op, Acc[Acc.size() == 1 ? 0 : K],
                            B[B.size() == 1 ? 0 : K], FMod));
      Acc = std::move(R);
    }
    if (Ok)
      C.setVals(0, Acc);
    return;
  }
  // Floating-point values (scales of Resize, Range bounds).
  FVec FA;
  if (!isFloatingPoint(C.elem(0)) || !flatOperands(C) || !C.Inf.FVals.count(C.in(0)) ||
      !C.floats(0, FA))
    return;
  for (unsigned I = 1; I < C.N.Inputs.size(); ++I) {
    FVec B;
    size_t Len;
    if (!C.floats(I, B) || !broadcastVals(FA, B, Len))
      return;
    FVec R;
    for (size_t K = 0; K < Len; ++K) {
      double X;
      if (!evalFloat(Op, FA[FA.size() == 1 ? 0 : K], B[B.size() == 1 ? 0 : K], X))
        return;
      R.push_back(X);
    }
    FA = std::move(R);
  }
  if (!Bool)
    C.setFloats(0, FA);
}

void ruleMean(Ctx &C) { broadcastRule(C, 0, C.elem(0)); }

void ruleWhere(Ctx &C) {
  broadcastRule(C, 0, C.elem(1));
  IVec Cond, X, Y;
  if (!flatOperands(C) || !C.vals(0, Cond) || !C.vals(1, X) || !C.vals(2, Y))
    return;
  size_t L1, L2;
  if (!broadcastVals(Cond, X, L1) || !broadcastVals(X, Y, L2))
    return;
  size_t Len = std::max({Cond.size(), X.size(), Y.size()});
  IVec R;
  for (size_t K = 0; K < Len; ++K) {
    const IV &CK = Cond[Cond.size() == 1 ? 0 : K];
    const IV &XK = X[X.size() == 1 ? 0 : K];
    const IV &YK = Y[Y.size() == 1 ? 0 : K];
    if (CK.Known)
      R.push_back(CK.V ? XK : YK);
    else
      R.push_back(XK.sameAs(YK) ? XK : IV{});
  }
  C.setVals(0, R);
}

void ruleDropout(Ctx &C) {
  C.copy(0, 0);
  if (C.numOuts() > 1)
    C.copy(1, 0, C.Opset >= 10 ? DType::Bool : C.elem(0));
}

void ruleClip(Ctx &C) { C.copy(0, 0); }

void ruleQuantize(Ctx &C) {
  DType T = C.has(2) ? C.elem(2) : DType::UInt8;
  T = attrDType(C.N, "output_dtype", T);
  C.copy(0, 0, T);
}

void ruleDequantize(Ctx &C) {
  C.copy(0, 0, C.Opset >= 19 && C.elem(1) != DType::Undefined ? C.elem(1)
                                                               : DType::Float);
}

void ruleDynamicQuantize(Ctx &C) {
  C.copy(0, 0, DType::UInt8);
  C.setDims(1, DType::Float, {});
  C.setDims(2, DType::UInt8, {});
}

} // namespace ridge::shapes
