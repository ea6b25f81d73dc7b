//===- ShapeInference.cpp - ridge's own shape and small-value inference ---===//
//
// One rule per op type, found through a StringMap built once. A rule reads
// its inputs' element types, shapes and small values and refines its outputs.
// Rules follow the ONNX operator specs per opset; where ONNX 1.12's own
// inference differs from the spec or the runtimes, the rule follows the spec.
//
//===----------------------------------------------------------------------===//
#include "analyzer/shapes/ShapeInference.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/Twine.h"
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

using namespace ridge;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::SmallVectorImpl;
using llvm::StringRef;

namespace {

constexpr size_t MaxValueElems = 64;
constexpr int64_t I64Min = std::numeric_limits<int64_t>::min();

//===----------------------------------------------------------------------===//
// Dims and shapes
//===----------------------------------------------------------------------===//

bool isIntType(DType T) {
  switch (T) {
  case DType::Int8: case DType::UInt8: case DType::Int16: case DType::UInt16:
  case DType::Int32: case DType::UInt32: case DType::Int64: case DType::UInt64:
  case DType::Int4: case DType::UInt4:
    return true;
  default:
    return false;
  }
}

int64_t floorDiv(int64_t A, int64_t B) {
  int64_t Q = A / B;
  if ((A % B != 0) && ((A < 0) != (B < 0)))
    --Q;
  return Q;
}
int64_t ceilDiv(int64_t A, int64_t B) { return -floorDiv(-A, B); }

using i128 = __int128;
constexpr int64_t MaxExtent = int64_t(1) << 62;

/// A computed extent as a dim; false when negative or absurdly large.
bool extentOk(i128 V) { return V >= 0 && V <= MaxExtent; }

/// A op B for non-negative dims; false on overflow.
bool mulOk(int64_t A, int64_t B, int64_t &R) { return !__builtin_mul_overflow(A, B, &R); }
bool addOk(int64_t A, int64_t B, int64_t &R) { return !__builtin_add_overflow(A, B, &R); }

/// Product of dims: known when all are; one non-known dim times known 1s is
/// that dim (batch * 1 = batch); anything times 0 is 0.
Dim productDim(ArrayRef<Dim> Ds) {
  int64_t P = 1;
  const Dim *Sole = nullptr;
  unsigned NonKnown = 0;
  for (const Dim &D : Ds) {
    if (D.isKnown()) {
      if (!mulOk(P, D.extent(), P))
        return Dim{};
    } else {
      ++NonKnown;
      Sole = &D;
    }
  }
  if (!NonKnown || P == 0)
    return Dim::known(P);
  if (NonKnown == 1 && P == 1)
    return *Sole;
  return Dim{};
}

/// Sum of two dims: known when both are; a symbol plus 0 stays that symbol.
Dim addDims(const Dim &A, const Dim &B) {
  if (A.isKnown() && B.isKnown())
    return extentOk(i128(A.extent()) + B.extent()) ? Dim::known(A.extent() + B.extent()) : Dim{};
  if (A.isKnown() && A.extent() == 0)
    return B;
  if (B.isKnown() && B.extent() == 0)
    return A;
  return Dim{};
}

/// A dim divided by a known factor: known when it divides.
Dim divDim(const Dim &A, int64_t F) {
  if (F == 1)
    return A;
  return A.isKnown() && F > 0 && A.extent() % F == 0 ? Dim::known(A.extent() / F) : Dim{};
}

Dim mulDim(const Dim &A, int64_t F) {
  if (F == 1)
    return A;
  return A.isKnown() && F >= 0 && extentOk(i128(A.extent()) * F) ? Dim::known(A.extent() * F)
                                                               : Dim{};
}

/// Two dims that must be equal: the more specific one.
const Dim &mergeDim(const Dim &A, const Dim &B) {
  if (A.isKnown())
    return A;
  if (B.isKnown())
    return B;
  return A.symbol().empty() ? B : A;
}

/// A dim that may be either: itself when both agree, else unknown.
Dim unionDim(const Dim &A, const Dim &B) { return A == B ? A : Dim{}; }

/// One axis of multidirectional broadcasting (ONNX's rule: a known dim other
/// than 1 wins; two different symbols give an unknown dim).
bool broadcastDim(const Dim &A, const Dim &B, Dim &Out) {
  if (A.isKnown() && B.isKnown()) {
    if (A.extent() == B.extent() || B.extent() == 1) {
      Out = A;
      return true;
    }
    if (A.extent() == 1) {
      Out = B;
      return true;
    }
    return false;
  }
  if (A.isKnown()) {
    Out = A.extent() == 1 ? B : A;
    return true;
  }
  if (B.isKnown()) {
    Out = B.extent() == 1 ? A : B;
    return true;
  }
  if (!A.symbol().empty() && A.symbol() == B.symbol())
    Out = A;
  else
    Out = Dim{};
  return true;
}

/// Broadcasts Out (already holding a shape) with S.
bool broadcastInto(Shape &Out, const Shape &S) {
  if (S.rank() > Out.rank())
    Out.Dims.insert(Out.Dims.begin(), S.rank() - Out.rank(), Dim::known(1));
  size_t Off = Out.rank() - S.rank();
  for (size_t I = 0; I < S.rank(); ++I) {
    Dim R;
    if (!broadcastDim(Out.Dims[Off + I], S.Dims[I], R))
      return false;
    Out.Dims[Off + I] = std::move(R);
  }
  return true;
}

bool normAxis(int64_t &A, int64_t Rank) {
  if (A < -Rank || A >= Rank)
    return false;
  if (A < 0)
    A += Rank;
  return true;
}

/// Refines V's shape with S: sets it when V has none; otherwise, at the same
/// rank, replaces unknown dims by symbolic or known ones and symbolic by known.
void refineShape(Value &V, const Shape &S) {
  if (!V.Shp) {
    V.Shp = S;
    return;
  }
  if (V.Shp->rank() != S.rank())
    return;
  for (size_t I = 0; I < S.rank(); ++I) {
    Dim &Old = V.Shp->Dims[I];
    const Dim &New = S.Dims[I];
    if (Old.isKnown())
      continue;
    if (New.isKnown() || (Old.symbol().empty() && !New.symbol().empty()))
      Old = New;
  }
}

//===----------------------------------------------------------------------===//
// Small integer values
//===----------------------------------------------------------------------===//

/// One element of a propagated integer value: known, a dim's symbol, or
/// unknown (no symbol).
struct IV {
  int64_t V = 0;
  bool Known = false;
  DimSymbol Sym;

  static IV known(int64_t X) {
    IV R;
    R.V = X;
    R.Known = true;
    return R;
  }
  static IV fromDim(const Dim &D) {
    if (D.isKnown())
      return known(D.extent());
    IV R;
    R.Sym = D.symbol();
    return R;
  }
  bool is(int64_t X) const { return Known && V == X; }
  /// Certainly equal: the same known number or the same symbol.
  bool sameAs(const IV &O) const {
    if (Known)
      return O.Known && V == O.V;
    return !O.Known && !Sym.empty() && Sym == O.Sym;
  }
  /// As a dim; false when known and negative.
  bool toDim(Dim &D) const {
    if (Known) {
      if (V < 0)
        return false;
      D = Dim::known(V);
    } else {
      D = Dim::symbolic(Sym);
    }
    return true;
  }
};
using IVec = SmallVector<IV, 4>;
using FVec = SmallVector<double, 4>;

enum class BinOp {
  None, Add, Sub, Mul, Div, Mod, Max, Min, Pow, Equal, Less, Greater,
  LessEq, GreaterEq, And, Or, Xor
};

BinOp binOpOf(StringRef Op) {
  return llvm::StringSwitch<BinOp>(Op)
      .Case("Add", BinOp::Add).Case("Sum", BinOp::Add).Case("Sub", BinOp::Sub)
      .Case("Mul", BinOp::Mul).Case("Div", BinOp::Div).Case("Mod", BinOp::Mod)
      .Case("Max", BinOp::Max).Case("Min", BinOp::Min).Case("Pow", BinOp::Pow)
      .Case("Equal", BinOp::Equal).Case("Less", BinOp::Less)
      .Case("Greater", BinOp::Greater).Case("LessOrEqual", BinOp::LessEq)
      .Case("GreaterOrEqual", BinOp::GreaterEq).Case("And", BinOp::And)
      .Case("Or", BinOp::Or).Case("Xor", BinOp::Xor)
      .Default(BinOp::None);
}

IV evalInt(BinOp Op, const IV &A, const IV &B, bool FMod) {
  if (A.Known && B.Known) {
    int64_t X = A.V, Y = B.V, R = 0;
    switch (Op) {
    case BinOp::Add: if (__builtin_add_overflow(X, Y, &R)) return IV{}; break;
    case BinOp::Sub: if (__builtin_sub_overflow(X, Y, &R)) return IV{}; break;
    case BinOp::Mul: if (__builtin_mul_overflow(X, Y, &R)) return IV{}; break;
    case BinOp::Div: // integer Div truncates toward zero (ONNX reference, ORT)
      if (Y == 0 || (X == I64Min && Y == -1)) return IV{};
      R = X / Y;
      break;
    case BinOp::Mod:
      if (Y == 0 || (X == I64Min && Y == -1)) return IV{};
      R = X % Y;
      if (!FMod && R != 0 && ((R < 0) != (Y < 0))) // Python's %: sign of divisor
        R += Y;
      break;
    case BinOp::Max: R = std::max(X, Y); break;
    case BinOp::Min: R = std::min(X, Y); break;
    case BinOp::Pow: {
      if (Y < 0) return IV{};
      R = 1;
      for (int64_t I = 0; I < Y; ++I)
        if (__builtin_mul_overflow(R, X, &R) || I > 64) return IV{};
      break;
    }
    case BinOp::Equal: R = X == Y; break;
    case BinOp::Less: R = X < Y; break;
    case BinOp::Greater: R = X > Y; break;
    case BinOp::LessEq: R = X <= Y; break;
    case BinOp::GreaterEq: R = X >= Y; break;
    case BinOp::And: R = X && Y; break;
    case BinOp::Or: R = X || Y; break;
    case BinOp::Xor: R = (X != 0) != (Y != 0); break;
    case BinOp::None: return IV{};
    }
    return IV::known(R);
  }
  // Symbolic identities.
  switch (Op) {
  case BinOp::Add:
    if (B.is(0)) return A;
    if (A.is(0)) return B;
    break;
  case BinOp::Sub:
    if (B.is(0)) return A;
    if (A.sameAs(B)) return IV::known(0);
    break;
  case BinOp::Mul:
    if (B.is(1)) return A;
    if (A.is(1)) return B;
    if (A.is(0) || B.is(0)) return IV::known(0);
    break;
  case BinOp::Div:
    if (B.is(1)) return A;
    break;
  case BinOp::Max:
  case BinOp::Min:
    if (A.sameAs(B)) return A;
    break;
  case BinOp::Equal:
  case BinOp::LessEq:
  case BinOp::GreaterEq:
    if (A.sameAs(B)) return IV::known(1);
    break;
  case BinOp::Less:
  case BinOp::Greater:
    if (A.sameAs(B)) return IV::known(0);
    break;
  default:
    break;
  }
  return IV{};
}

bool evalFloat(BinOp Op, double X, double Y, double &R) {
  switch (Op) {
  case BinOp::Add: R = X + Y; return true;
  case BinOp::Sub: R = X - Y; return true;
  case BinOp::Mul: R = X * Y; return true;
  case BinOp::Div: R = X / Y; return true;
  case BinOp::Max: R = std::max(X, Y); return true;
  case BinOp::Min: R = std::min(X, Y); return true;
  case BinOp::Pow: R = std::pow(X, Y); return true;
  default: return false;
  }
}

//===----------------------------------------------------------------------===//
// The inferencer and a rule's view of one node
//===----------------------------------------------------------------------===//

class Ctx;
using RuleFn = void (*)(Ctx &);

/// The elements of a sequence (or the content of an optional): their type
/// and the union of their shapes.
struct ElemInfo {
  DType Elem = DType::Undefined;
  std::optional<Shape> Shp;
  bool Empty = false; ///< no element yet (SequenceEmpty)
};

/// Shape of a value that may be either A or B.
std::optional<Shape> unionShape(const std::optional<Shape> &A,
                                const std::optional<Shape> &B) {
  if (!A || !B || A->rank() != B->rank())
    return std::nullopt;
  Shape S;
  for (size_t I = 0; I < A->rank(); ++I)
    S.Dims.push_back(unionDim(A->Dims[I], B->Dims[I]));
  return S;
}

void addElement(ElemInfo &E, DType T, const std::optional<Shape> &S) {
  if (E.Elem == DType::Undefined)
    E.Elem = T;
  if (E.Empty) {
    E.Shp = S;
    E.Empty = false;
  } else {
    E.Shp = unionShape(E.Shp, S);
  }
}

class Inferencer {
public:
  explicit Inferencer(const Model &M) : M(M) {
    auto It = M.Opsets.find("");
    DefaultOpset = It == M.Opsets.end() ? 0 : It->second;
  }
  void inferGraph(Graph &G);
  void inferNode(Node &N);
  /// Infers Body with its inputs typed as Inputs (null: keep the declared
  /// type). Where a loop-carried output disagrees with its input (the state
  /// changes shape between iterations), the body is inferred again with the
  /// input generalized. Carried: pairs (body input, body output).
  void inferBody(Graph &Body, ArrayRef<std::pair<Value *, Value *>> Carried);
  void inferCall(Node &N, const Function &F);

  const Model &M;
  int64_t DefaultOpset = 0;
  llvm::DenseMap<const Value *, IVec> Vals;
  llvm::DenseMap<const Value *, FVec> FVals;
  /// Element type of sequence and optional values (the IR types them not).
  llvm::DenseMap<const Value *, ElemInfo> Elems;
  llvm::StringSet<> UnknownOps;
  unsigned CallDepth = 0;
};

class Ctx {
public:
  Ctx(Inferencer &Inf, Node &N, int64_t Opset) : Inf(Inf), N(N), Opset(Opset) {}
  Inferencer &Inf;
  Node &N;
  int64_t Opset;

  Value *in(unsigned I) const { return N.input(I); }
  bool has(unsigned I) const { return N.input(I) != nullptr; }
  const Shape *shape(unsigned I) const {
    Value *V = in(I);
    return V && V->Shp ? &*V->Shp : nullptr;
  }
  int64_t rank(unsigned I) const {
    const Shape *S = shape(I);
    return S ? int64_t(S->rank()) : -1;
  }
  DType elem(unsigned I) const {
    Value *V = in(I);
    return V ? V->Elem : DType::Undefined;
  }
  unsigned numOuts() const { return N.Outputs.size(); }
  Value *out(unsigned O) const { return N.output(O); }

  void setType(unsigned O, DType T) const {
    Value *V = out(O);
    if (V && V->Elem == DType::Undefined && T != DType::Undefined)
      V->Elem = T;
  }
  void set(unsigned O, DType T, const Shape &S) const {
    setType(O, T);
    if (Value *V = out(O))
      refineShape(*V, S);
  }
  void set(unsigned O, DType T, Shape &&S) const {
    setType(O, T);
    Value *V = out(O);
    if (V && !V->Shp)
      V->Shp = std::move(S);
    else if (V)
      refineShape(*V, S);
  }
  void setDims(unsigned O, DType T, ArrayRef<Dim> D) const {
    Shape S;
    S.Dims.assign(D.begin(), D.end());
    set(O, T, std::move(S));
  }
  /// Output O gets input I's shape; T (Undefined: input I's type).
  void copy(unsigned O, unsigned I, DType T = DType::Undefined) const {
    if (T == DType::Undefined)
      T = elem(I);
    if (const Shape *S = shape(I))
      set(O, T, *S);
    else
      setType(O, T);
  }
  /// Rank known, every dim unknown.
  void setRank(unsigned O, DType T, size_t R) const {
    Shape S;
    S.Dims.resize(R);
    set(O, T, std::move(S));
  }

  /// The elements of input I's value, when its length is known.
  bool vals(unsigned I, IVec &Out) const {
    Value *V = in(I);
    if (!V)
      return false;
    auto It = Inf.Vals.find(V);
    if (It != Inf.Vals.end()) {
      Out = It->second;
      return true;
    }
    if (V->IntData && V->IntData->size() <= MaxValueElems &&
        (!V->Shp || V->Shp->rank() <= 1)) {
      Out.clear();
      for (int64_t X : *V->IntData)
        Out.push_back(IV::known(X));
      return true;
    }
    return false;
  }
  /// Input I's value when every element is known.
  bool ints(unsigned I, SmallVectorImpl<int64_t> &Out) const {
    Value *V = in(I);
    if (!V)
      return false;
    if (V->IntData && V->IntData->size() <= MaxValueElems) {
      Out.assign(V->IntData->begin(), V->IntData->end());
      return true;
    }
    auto It = Inf.Vals.find(V);
    if (It == Inf.Vals.end())
      return false;
    Out.clear();
    for (const IV &X : It->second) {
      if (!X.Known)
        return false;
      Out.push_back(X.V);
    }
    return true;
  }
  bool scalarInt(unsigned I, int64_t &X) const {
    SmallVector<int64_t, 4> V;
    if (!ints(I, V) || V.size() != 1)
      return false;
    X = V[0];
    return true;
  }
  /// Input I's value as numbers (floats, or ints converted).
  bool floats(unsigned I, FVec &Out) const {
    Value *V = in(I);
    if (!V)
      return false;
    auto It = Inf.FVals.find(V);
    if (It != Inf.FVals.end()) {
      Out = It->second;
      return true;
    }
    SmallVector<int64_t, 4> Is;
    if (!ints(I, Is))
      return false;
    Out.assign(Is.begin(), Is.end());
    return true;
  }

  /// Records output O's value; stores it in IntData when fully known and O
  /// is int32/int64. Ignored when it does not fit O's shape.
  void setVals(unsigned O, ArrayRef<IV> Xs) const {
    Value *V = out(O);
    if (!V || Xs.size() > MaxValueElems || !fitsShape(*V, Xs.size()))
      return;
    Inf.Vals[V] = IVec(Xs.begin(), Xs.end());
    if (V->IntData || (V->Elem != DType::Int64 && V->Elem != DType::Int32))
      return;
    for (const IV &X : Xs)
      if (!X.Known)
        return;
    V->IntData.emplace();
    for (const IV &X : Xs)
      V->IntData->push_back(X.V);
  }
  void setInts(unsigned O, ArrayRef<int64_t> Xs) const {
    IVec V;
    for (int64_t X : Xs)
      V.push_back(IV::known(X));
    setVals(O, V);
  }
  void setFloats(unsigned O, ArrayRef<double> Xs) const {
    Value *V = out(O);
    if (!V || Xs.size() > MaxValueElems || !fitsShape(*V, Xs.size()))
      return;
    Inf.FVals[V] = FVec(Xs.begin(), Xs.end());
  }

  enum Src { Absent, Known, Unknown };
  /// Ints given by input Input when present, else by attribute Attr (the
  /// attribute form of older opsets).
  Src intsArg(StringRef Attr, unsigned Input, SmallVectorImpl<int64_t> &Out) const {
    if (has(Input))
      return ints(Input, Out) ? Known : Unknown;
    if (auto A = N.attrInts(Attr)) {
      Out.assign(A->begin(), A->end());
      return Known;
    }
    return Absent;
  }

private:
  static bool fitsShape(const Value &V, size_t N) {
    if (!V.Shp)
      return true;
    if (V.Shp->rank() > 1)
      return false;
    if (V.Shp->rank() == 0)
      return N == 1;
    const Dim &D = V.Shp->Dims[0];
    return !D.isKnown() || size_t(D.extent()) == N;
  }
};

const ElemInfo *elemsOf(Ctx &C, unsigned I) {
  Value *V = C.in(I);
  if (!V)
    return nullptr;
  auto It = C.Inf.Elems.find(V);
  return It == C.Inf.Elems.end() ? nullptr : &It->second;
}

void setElems(Ctx &C, unsigned O, ElemInfo E) {
  if (Value *V = C.out(O)) {
    V->NonTensor = true; // a sequence or optional: no tensor shape of its own
    C.Inf.Elems[V] = std::move(E);
  }
}

DType attrDType(const Node &N, StringRef Name, DType Default) {
  const Attribute *A = N.attr(Name);
  if (!A || A->K != Attribute::Kind::Int)
    return Default;
  auto T = dtypeFromOnnx(int32_t(A->I));
  return T && *T != DType::Undefined ? *T : Default;
}

Graph *attrGraph(const Node &N, StringRef Name) {
  const Attribute *A = N.attr(Name);
  return A && !A->Graphs.empty() ? A->Graphs[0].get() : nullptr;
}

//===----------------------------------------------------------------------===//
// Element-wise rules
//===----------------------------------------------------------------------===//

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

/// Neg, Abs, Floor, Ceil, Round, Sqrt: shape as input 0; values of known
/// elements.
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
bool broadcastVals(const SmallVectorImpl<T> &A, const SmallVectorImpl<T> &B,
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
  // Integer values.
  IVec Acc;
  if (C.vals(0, Acc) && (isIntType(C.elem(0)) || C.elem(0) == DType::Bool)) {
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
  if (!isFloatingPoint(C.elem(0)) || !C.Inf.FVals.count(C.in(0)) || !C.floats(0, FA))
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
  if (!C.vals(0, Cond) || !C.vals(1, X) || !C.vals(2, Y))
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

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, pooling, normalization
//===----------------------------------------------------------------------===//

bool matmulShape(const Shape &A, const Shape &B, Shape &Out) {
  if (A.rank() == 0 || B.rank() == 0)
    return false;
  Shape SA = A, SB = B;
  bool VecA = A.rank() == 1, VecB = B.rank() == 1;
  if (VecA)
    SA.Dims.insert(SA.Dims.begin(), Dim::known(1));
  if (VecB)
    SB.Dims.push_back(Dim::known(1));
  const Dim &KA = SA.Dims[SA.rank() - 1], &KB = SB.Dims[SB.rank() - 2];
  if (KA.isKnown() && KB.isKnown() && KA.extent() != KB.extent())
    return false;
  Shape BA, BB;
  BA.Dims.assign(SA.Dims.begin(), SA.Dims.end() - 2);
  BB.Dims.assign(SB.Dims.begin(), SB.Dims.end() - 2);
  if (!broadcastInto(BA, BB))
    return false;
  Out = std::move(BA);
  if (!VecA)
    Out.Dims.push_back(SA.Dims[SA.rank() - 2]);
  if (!VecB)
    Out.Dims.push_back(SB.Dims[SB.rank() - 1]);
  return true;
}

void matmulRule(Ctx &C, unsigned IA, unsigned IB, DType T) {
  const Shape *A = C.shape(IA), *B = C.shape(IB);
  Shape Out;
  if (A && B && matmulShape(*A, *B, Out))
    C.set(0, T, std::move(Out));
  else
    C.setType(0, T);
}

void ruleMatMul(Ctx &C) { matmulRule(C, 0, 1, C.elem(0)); }
void ruleMatMulInteger(Ctx &C) { matmulRule(C, 0, 1, DType::Int32); }
void ruleQLinearMatMul(Ctx &C) {
  matmulRule(C, 0, 3, C.has(7) ? C.elem(7) : C.elem(0));
}

void ruleGemm(Ctx &C) {
  DType T = C.elem(0);
  const Shape *A = C.shape(0), *B = C.shape(1);
  if (!A || !B || A->rank() != 2 || B->rank() != 2) {
    C.setType(0, T);
    return;
  }
  bool TA = C.N.attrInt("transA", 0), TB = C.N.attrInt("transB", 0);
  C.setDims(0, T, {A->Dims[TA ? 1 : 0], B->Dims[TB ? 0 : 1]});
}

/// Spatial output dims of Conv and the pools. Kernel: -1 where unknown.
bool convPoolDims(const Node &N, const Shape &X, ArrayRef<int64_t> Kernel,
                  bool CeilMode, Shape &Out) {
  size_t NS = X.rank() - 2;
  if (Kernel.size() != NS)
    return false;
  auto Strides = N.attrInts("strides"), Dil = N.attrInts("dilations"),
       Pads = N.attrInts("pads");
  std::string AutoPad = N.attrString("auto_pad", "NOTSET");
  bool Same = AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER";
  bool UsePads = AutoPad == "NOTSET" || AutoPad.empty();
  for (size_t I = 0; I < NS; ++I) {
    int64_t S = Strides && I < Strides->size() ? (*Strides)[I] : 1;
    int64_t D = Dil && I < Dil->size() ? (*Dil)[I] : 1;
    if (S <= 0 || D <= 0)
      return false;
    const Dim &In = X.Dims[2 + I];
    if (!In.isKnown() || Kernel[I] < 0) {
      Out.Dims.push_back(Dim{});
      continue;
    }
    i128 Len;
    if (Same) {
      Len = ceilDiv(In.extent(), S);
    } else {
      i128 PB = 0, PE = 0;
      if (UsePads && Pads && Pads->size() == 2 * NS) {
        PB = (*Pads)[I];
        PE = (*Pads)[I + NS];
      }
      i128 EffK = i128(Kernel[I] - 1) * D + 1;
      i128 Span = In.extent() + PB + PE - EffK;
      if (Span < 0 || !extentOk(Span))
        return false;
      if (CeilMode) {
        Len = (Span + S - 1) / S + 1;
        // A window may not start in the right padding (the spec since ONNX
        // 1.16; PyTorch and ONNX Runtime).
        if ((Len - 1) * S >= In.extent() + PB)
          --Len;
      } else {
        Len = Span / S + 1;
      }
    }
    if (!extentOk(Len))
      return false;
    Out.Dims.push_back(Dim::known(int64_t(Len)));
  }
  return true;
}

/// Conv, ConvInteger, QLinearConv: X at input IX, W at IW.
void convRule(Ctx &C, unsigned IX, unsigned IW, DType T) {
  const Shape *X = C.shape(IX), *W = C.shape(IW);
  if (!X || X->rank() < 2) {
    C.setType(0, T);
    return;
  }
  size_t NS = X->rank() - 2;
  SmallVector<int64_t, 4> Kernel;
  if (auto K = C.N.attrInts("kernel_shape")) {
    Kernel.assign(K->begin(), K->end());
  } else if (W && W->rank() == NS + 2) {
    for (size_t I = 0; I < NS; ++I)
      Kernel.push_back(W->Dims[2 + I].isKnown() ? W->Dims[2 + I].extent() : -1);
  } else {
    Kernel.assign(NS, -1);
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(W && W->rank() >= 1 ? W->Dims[0] : Dim{});
  if (!convPoolDims(C.N, *X, Kernel, false, Out)) {
    C.setType(0, T);
    return;
  }
  C.set(0, T, std::move(Out));
}

void ruleConv(Ctx &C) { convRule(C, 0, 1, C.elem(0)); }
void ruleConvInteger(Ctx &C) { convRule(C, 0, 1, DType::Int32); }
void ruleQLinearConv(Ctx &C) {
  convRule(C, 0, 3, C.has(7) ? C.elem(7) : C.elem(0));
}

void ruleConvTranspose(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *W = C.shape(1);
  if (!X || X->rank() < 2) {
    C.setType(0, T);
    return;
  }
  size_t NS = X->rank() - 2;
  const Node &N = C.N;
  int64_t Group = N.attrInt("group", 1);
  SmallVector<int64_t, 4> Kernel;
  if (auto K = N.attrInts("kernel_shape"))
    Kernel.assign(K->begin(), K->end());
  else if (W && W->rank() == NS + 2)
    for (size_t I = 0; I < NS; ++I)
      Kernel.push_back(W->Dims[2 + I].isKnown() ? W->Dims[2 + I].extent() : -1);
  else
    Kernel.assign(NS, -1);
  if (Kernel.size() != NS) {
    C.setType(0, T);
    return;
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Dim M;
  if (W && W->rank() >= 2 && W->Dims[1].isKnown())
    M = extentOk(i128(W->Dims[1].extent()) * Group)
            ? Dim::known(W->Dims[1].extent() * Group) : Dim{};
  Out.Dims.push_back(M);
  auto Strides = N.attrInts("strides"), Dil = N.attrInts("dilations"),
       Pads = N.attrInts("pads"), OutPad = N.attrInts("output_padding"),
       OutShape = N.attrInts("output_shape");
  std::string AutoPad = N.attrString("auto_pad", "NOTSET");
  bool Same = AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER";
  if (OutShape && (OutShape->size() == NS || OutShape->size() == NS + 2)) {
    for (size_t I = OutShape->size() - NS; I < OutShape->size(); ++I)
      Out.Dims.push_back((*OutShape)[I] >= 0 ? Dim::known((*OutShape)[I]) : Dim{});
    C.set(0, T, Out);
    return;
  }
  for (size_t I = 0; I < NS; ++I) {
    int64_t S = Strides && I < Strides->size() ? (*Strides)[I] : 1;
    int64_t D = Dil && I < Dil->size() ? (*Dil)[I] : 1;
    int64_t OP = OutPad && I < OutPad->size() ? (*OutPad)[I] : 0;
    const Dim &In = X->Dims[2 + I];
    if (!In.isKnown() || Kernel[I] < 0) {
      Out.Dims.push_back(Dim{});
      continue;
    }
    i128 Len;
    if (Same) {
      Len = i128(In.extent()) * S;
    } else {
      i128 PB = 0, PE = 0;
      if (AutoPad != "VALID" && Pads && Pads->size() == 2 * NS) {
        PB = (*Pads)[I];
        PE = (*Pads)[I + NS];
      }
      Len = i128(S) * (In.extent() - 1) + OP + i128(Kernel[I] - 1) * D + 1 - PB - PE;
    }
    if (!extentOk(Len)) {
      C.setType(0, T);
      return;
    }
    Out.Dims.push_back(Dim::known(int64_t(Len)));
  }
  C.set(0, T, Out);
}

void rulePool(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  auto K = C.N.attrInts("kernel_shape");
  if (C.numOuts() > 1)
    C.setType(1, DType::Int64);
  if (!X || X->rank() < 2 || !K) {
    C.setType(0, T);
    return;
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(X->Dims[1]);
  if (!convPoolDims(C.N, *X, *K, C.N.attrInt("ceil_mode", 0) != 0, Out)) {
    C.setType(0, T);
    return;
  }
  C.set(0, T, Out);
  if (C.numOuts() > 1)
    C.set(1, DType::Int64, Out);
}

void ruleGlobalPool(Ctx &C) {
  const Shape *X = C.shape(0);
  if (!X || X->rank() < 2) {
    C.setType(0, C.elem(0));
    return;
  }
  Shape Out = *X;
  for (size_t I = 2; I < Out.rank(); ++I)
    Out.Dims[I] = Dim::known(1);
  C.set(0, C.elem(0), Out);
}

void ruleMaxUnpool(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  IVec OS;
  if (C.has(2)) {
    if (C.vals(2, OS)) {
      Shape Out;
      for (const IV &V : OS) {
        Dim D;
        if (!V.toDim(D))
          return C.setType(0, T);
        Out.Dims.push_back(D);
      }
      C.set(0, T, Out);
    } else if (const Shape *S = C.shape(2); S && S->rank() == 1 && S->Dims[0].isKnown()) {
      C.setRank(0, T, S->Dims[0].extent());
    } else {
      C.setType(0, T);
    }
    return;
  }
  auto K = C.N.attrInts("kernel_shape");
  if (!X || X->rank() < 2 || !K || K->size() != X->rank() - 2)
    return C.setType(0, T);
  size_t NS = X->rank() - 2;
  auto Strides = C.N.attrInts("strides"), Pads = C.N.attrInts("pads");
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(X->Dims[1]);
  for (size_t I = 0; I < NS; ++I) {
    int64_t S = Strides && I < Strides->size() ? (*Strides)[I] : 1;
    int64_t PB = 0, PE = 0;
    if (Pads && Pads->size() == 2 * NS) {
      PB = (*Pads)[I];
      PE = (*Pads)[I + NS];
    }
    const Dim &In = X->Dims[2 + I];
    i128 Len = i128(In.extent() - 1) * S + (*K)[I] - PB - PE;
    Out.Dims.push_back(In.isKnown() && extentOk(Len) ? Dim::known(int64_t(Len)) : Dim{});
  }
  C.set(0, T, Out);
}

/// RoiAlign, MaxRoiPool: [num_rois, C, h, w].
void ruleRoiPool(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *R = C.shape(1);
  if (!X || X->rank() != 4 || !R || R->rank() != 2)
    return C.setType(0, T);
  Dim H, W;
  if (C.N.OpType == "MaxRoiPool") {
    auto P = C.N.attrInts("pooled_shape");
    if (!P || P->size() != 2)
      return C.setType(0, T);
    H = Dim::known((*P)[0]);
    W = Dim::known((*P)[1]);
  } else {
    H = Dim::known(C.N.attrInt("output_height", 1));
    W = Dim::known(C.N.attrInt("output_width", 1));
  }
  C.setDims(0, T, {R->Dims[0], X->Dims[1], H, W});
}

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

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

void reduceTo(Ctx &C, unsigned O, DType T, const Shape &X,
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
  // Values of a reduced 1-D shape vector (numel = ReduceProd(Shape(x))).
  IVec V;
  if (X->rank() != 1 || !C.vals(0, V) || V.empty())
    return;
  BinOp Op = llvm::StringSwitch<BinOp>(C.N.OpType)
                 .Case("ReduceProd", BinOp::Mul).Case("ReduceSum", BinOp::Add)
                 .Case("ReduceMax", BinOp::Max).Case("ReduceMin", BinOp::Min)
                 .Default(BinOp::None);
  if (Op == BinOp::None)
    return;
  IV Acc = V[0];
  for (size_t I = 1; I < V.size(); ++I)
    Acc = evalInt(Op, Acc, V[I], false);
  C.setVals(0, {Acc});
}

void ruleArgMinMax(Ctx &C) {
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, DType::Int64);
  int64_t Axis = C.N.attrInt("axis", 0);
  reduceTo(C, 0, DType::Int64, *X, {Axis}, C.N.attrInt("keepdims", 1) != 0);
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

/// Resolves Reshape's -1 at NegIdx: elements of In over the other dims of
/// Out, cancelling symbols that appear in both ([batch,seq,768] to
/// [batch,seq,12,-1] gives 64).
Dim resolveInferredDim(const Shape &In, const Shape &Out, size_t NegIdx) {
  int64_t Num = 1, Den = 1;
  SmallVector<StringRef, 4> Syms;
  for (const Dim &D : In.Dims) {
    if (D.isKnown()) {
      if (!mulOk(Num, D.extent(), Num))
        return Dim{};
    } else if (!D.symbol().empty()) {
      Syms.push_back(D.symbol());
    } else {
      return Dim{};
    }
  }
  for (size_t I = 0; I < Out.rank(); ++I) {
    if (I == NegIdx)
      continue;
    const Dim &D = Out.Dims[I];
    if (D.isKnown()) {
      if (!mulOk(Den, D.extent(), Den))
        return Dim{};
      continue;
    }
    auto It = llvm::find(Syms, StringRef(D.symbol()));
    if (D.symbol().empty() || It == Syms.end())
      return Dim{};
    Syms.erase(It);
  }
  if (Den == 0 || Num % Den != 0)
    return Dim{};
  if (Syms.empty())
    return Dim::known(Num / Den);
  if (Syms.size() == 1 && Num == Den)
    return Dim::symbolic(Syms[0]);
  return Dim{};
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
  if (NegIdx >= 0 && X)
    Out.Dims[NegIdx] = resolveInferredDim(*X, Out, NegIdx);
  // Element counts must agree when both are known.
  if (X && X->isFullyKnown() && Out.isFullyKnown() &&
      *X->numElements() != *Out.numElements())
    return C.setType(0, T);
  C.set(0, T, Out);
  if (Out.rank() <= 1)
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
}

void ruleTranspose(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  size_t R = X->rank();
  Shape Out;
  if (auto P = C.N.attrInts("perm")) {
    if (P->size() != R)
      return C.setType(0, T);
    SmallVector<bool, 8> Seen(R, false);
    for (int64_t A : *P) {
      if (!normAxis(A, R) || Seen[A])
        return C.setType(0, T);
      Seen[A] = true;
      Out.Dims.push_back(X->Dims[A]);
    }
  } else {
    Out.Dims.assign(X->Dims.rbegin(), X->Dims.rend());
  }
  C.set(0, T, std::move(Out));
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
  if (Out.rank() <= 1)
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
  if (Out.rank() <= 1)
    passValues(C);
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
  Dim Sum = Dim::known(0);
  if (!AllKnownRank) {
    Sum = Dim{};
  } else {
    // Sum of known dims; one symbolic dim plus zeros stays that symbol.
    int64_t Total = 0;
    const Dim *Sole = nullptr;
    unsigned NonKnown = 0;
    for (const Dim &D : Along) {
      if (D.isKnown()) {
        if (!addOk(Total, D.extent(), Total))
          return C.setType(0, T);
      } else {
        ++NonKnown;
        Sole = &D;
      }
    }
    Sum = !NonKnown ? Dim::known(Total)
                    : NonKnown == 1 && Total == 0 ? *Sole : Dim{};
  }
  Out.Dims[Axis] = Sum;
  C.set(0, T, Out);
  if (Out.rank() != 1)
    return;
  IVec All;
  FVec AllF;
  bool Ints = true, Floats = true;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I) {
    if (!C.has(I))
      continue;
    IVec V;
    FVec F;
    if (Ints && C.vals(I, V))
      All.append(V.begin(), V.end());
    else
      Ints = false;
    if (Floats && C.Inf.FVals.count(C.in(I)) && C.floats(I, F))
      AllF.append(F.begin(), F.end());
    else
      Floats = false;
  }
  if (Ints)
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
int64_t sliceLen(int64_t D, int64_t Start, int64_t End, int64_t Step,
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
    if (!HaveBounds) {
      Out.Dims[A] = Dim{};
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
    // The whole of a dim not known: x[0:INT_MAX], x[0:n] where n is x's dim.
    bool ToEnd = En.Known ? En.V >= std::numeric_limits<int32_t>::max()
                          : (!D.isKnown() && En.sameAs(IV::fromDim(D)));
    if (Step == 1 && St.is(0) && ToEnd)
      Out.Dims[A] = D;
    else if (Step == -1 && St.is(-1) && En.Known && En.V <= std::numeric_limits<int32_t>::min())
      Out.Dims[A] = D;
    else
      Out.Dims[A] = Dim{};
  }
  C.set(0, T, Out);
  // Values of a sliced 1-D value.
  IVec V;
  if (R != 1 || !AllKnown || !C.vals(0, V) || !Out.Dims[0].isKnown())
    return;
  IVec Res;
  for (int64_t K = 0, P = Firsts[0]; K < Out.Dims[0].extent(); ++K, P += StepOf[0]) {
    if (P < 0 || size_t(P) >= V.size())
      return;
    Res.push_back(V[P]);
  }
  C.setVals(0, Res);
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
  if (X->rank() != 1 || Idx->rank() > 1 || !C.vals(0, V) || !C.ints(1, I))
    return;
  IVec Res;
  for (int64_t K : I) {
    if (K < 0)
      K += V.size();
    if (K < 0 || size_t(K) >= V.size())
      return;
    Res.push_back(V[K]);
  }
  C.setVals(0, Res);
}

void ruleGatherElements(Ctx &C) { C.copy(0, 1, C.elem(0)); }

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
    C.setVals(0, Res);
  }
}

void ruleTile(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  SmallVector<int64_t, 4> Rep;
  if (!C.ints(1, Rep)) {
    if (C.N.OpType == "Tile" && X)
      C.setRank(0, T, X->rank());
    return;
  }
  if (Rep.size() != X->rank())
    return C.setType(0, T);
  Shape Out = *X;
  for (size_t I = 0; I < Rep.size(); ++I) {
    if (Rep[I] < 0)
      return C.setType(0, T);
    const Dim &D = X->Dims[I];
    int64_t P;
    if (D.isKnown())
      Out.Dims[I] = mulOk(D.extent(), Rep[I], P) ? Dim::known(P) : Dim{};
    else
      Out.Dims[I] = Rep[I] == 1 ? D : Rep[I] == 0 ? Dim::known(0) : Dim{};
  }
  C.set(0, T, Out);
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
  if (S != Ctx::Known)
    return C.setRank(0, T, R);
  SmallVector<int64_t, 4> Axes;
  if (C.has(3)) {
    if (!C.ints(3, Axes))
      return C.setRank(0, T, R);
  } else {
    for (size_t I = 0; I < R; ++I)
      Axes.push_back(I);
  }
  if (Pads.size() != 2 * Axes.size())
    return C.setType(0, T);
  Shape Out = *X;
  size_t NA = Axes.size();
  for (size_t I = 0; I < NA; ++I) {
    int64_t A = Axes[I];
    if (!normAxis(A, R))
      return C.setType(0, T);
    const Dim &D = X->Dims[A];
    i128 Add = i128(Pads[I]) + Pads[I + NA];
    if (!D.isKnown())
      Out.Dims[A] = Add == 0 ? D : Dim{};
    else if (!extentOk(D.extent() + Add))
      return C.setType(0, T);
    else
      Out.Dims[A] = Dim::known(int64_t(D.extent() + Add));
  }
  C.set(0, T, Out);
}

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
bool tensorPayload(const Attribute &A, SmallVectorImpl<int64_t> &Is, FVec &Fs,
                   bool &IsInt) {
  int64_t N = 1;
  for (int64_t D : A.TensorDims)
    if (D < 0 || __builtin_mul_overflow(N, D, &N)) // dims come from the file
      return false;
  if (N > int64_t(MaxValueElems))
    return false;
  IsInt = isIntType(A.TensorElem) || A.TensorElem == DType::Bool;
  if (IsInt && int64_t(A.Ints.size()) == N) {
    Is.assign(A.Ints.begin(), A.Ints.end());
    return true;
  }
  if (isFloatingPoint(A.TensorElem) && int64_t(A.Floats.size()) == N) {
    Fs.assign(A.Floats.begin(), A.Floats.end());
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
      for (int64_t D : A.TensorDims)
        S.Dims.push_back(Dim::known(D));
      C.set(0, A.TensorElem, S);
      SmallVector<int64_t, 4> Is;
      FVec Fs;
      bool IsInt;
      if (S.rank() <= 1 && tensorPayload(A, Is, Fs, IsInt)) {
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
      C.setDims(0, DType::Float, {Dim::known(A.Floats.size())});
      C.setFloats(0, A.Floats);
      return;
    }
    if (Name == "value_string")
      return C.setDims(0, DType::String, {});
    if (Name == "value_strings")
      return C.setDims(0, DType::String, {Dim::known(A.Strings.size())});
  }
}

void ruleConstantOfShape(Ctx &C) {
  const Attribute *A = C.N.attr("value");
  DType T = A && A->K == Attribute::Kind::Tensor ? A->TensorElem : DType::Float;
  IVec V;
  Shape Out;
  if (C.vals(0, V)) {
    if (!valsToShape(V, Out))
      return C.setType(0, T);
  } else if (const Shape *S = C.shape(0); S && S->rank() == 1 && S->Dims[0].isKnown()) {
    return C.setRank(0, T, S->Dims[0].extent());
  } else {
    return C.setType(0, T);
  }
  C.set(0, T, Out);
  if (Out.rank() > 1 || !Out.isFullyKnown() || *Out.numElements() > MaxValueElems)
    return;
  size_t N = size_t(*Out.numElements());
  SmallVector<int64_t, 4> Is;
  FVec Fs;
  bool IsInt;
  if (!A) {
    C.setFloats(0, FVec(N, 0.0));
  } else if (tensorPayload(*A, Is, Fs, IsInt) && (Is.size() == 1 || Fs.size() == 1)) {
    if (IsInt)
      C.setInts(0, SmallVector<int64_t, 4>(N, Is[0]));
    else
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
  C.setDims(0, T, {Dim{}});
}

/// Resize and Upsample: output dims from sizes, else floor(dim * scale).
void ruleResize(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  size_t R = X->rank();
  bool Upsample = C.N.OpType == "Upsample";
  unsigned ScalesIn = Upsample || C.Opset < 11 ? 1 : 2;
  unsigned SizesIn = Upsample || C.Opset < 11 ? ~0u : 3;
  SmallVector<int64_t, 4> Axes;
  if (auto A = C.N.attrInts("axes"))
    Axes.assign(A->begin(), A->end());
  else
    for (size_t I = 0; I < R; ++I)
      Axes.push_back(I);
  for (int64_t &A : Axes)
    if (!normAxis(A, R))
      return C.setType(0, T);
  Shape Out = *X;
  IVec Sizes;
  FVec Scales;
  bool HaveScales = false;
  if (SizesIn != ~0u && C.has(SizesIn) && C.vals(SizesIn, Sizes)) {
    if (Sizes.size() != Axes.size())
      return C.setType(0, T);
    std::string Policy = C.N.attrString("keep_aspect_ratio_policy", "stretch");
    if (Policy != "stretch") {
      // not_larger/not_smaller: one scale for all axes, from the sizes.
      double Scale = Policy == "not_larger" ? 1e300 : 0;
      for (size_t I = 0; I < Axes.size(); ++I) {
        const Dim &D = X->Dims[Axes[I]];
        if (!Sizes[I].Known || !D.isKnown() || D.extent() == 0)
          return C.setRank(0, T, R);
        double S = double(Sizes[I].V) / double(D.extent());
        Scale = Policy == "not_larger" ? std::min(Scale, S) : std::max(Scale, S);
      }
      for (int64_t A : Axes)
        Out.Dims[A] = Dim::known(int64_t(std::round(Scale * X->Dims[A].extent())));
      return C.set(0, T, Out);
    }
    for (size_t I = 0; I < Axes.size(); ++I) {
      Dim D;
      if (!Sizes[I].toDim(D))
        return C.setType(0, T);
      Out.Dims[Axes[I]] = D;
    }
    return C.set(0, T, Out);
  }
  if (Upsample && C.Opset < 9) {
    if (const Attribute *A = C.N.attr("scales"); A && A->K == Attribute::Kind::Floats) {
      Scales.assign(A->Floats.begin(), A->Floats.end());
      HaveScales = true;
    }
  } else if (C.has(ScalesIn)) {
    HaveScales = C.floats(ScalesIn, Scales) && !Scales.empty();
  }
  if (!HaveScales || Scales.size() != Axes.size())
    return C.setRank(0, T, R);
  for (size_t I = 0; I < Axes.size(); ++I) {
    const Dim &D = X->Dims[Axes[I]];
    if (D.isKnown())
    {
      float F = std::floor(float(D.extent()) * float(Scales[I]));
      Out.Dims[Axes[I]] = std::isfinite(F) && F >= 0 && F < 4.0e18f
                              ? Dim::known(int64_t(F)) : Dim{};
    }
    else
      Out.Dims[Axes[I]] = Scales[I] == 1.0 ? D : Dim{};
  }
  C.set(0, T, Out);
}

void ruleEinsum(Ctx &C) {
  DType T = C.elem(0);
  C.setType(0, T);
  std::string Eq;
  for (char Ch : C.N.attrString("equation", ""))
    if (Ch != ' ')
      Eq += Ch;
  StringRef E(Eq);
  auto [Lhs, Rhs] = E.split("->");
  bool Explicit = E.contains("->");
  SmallVector<StringRef, 4> Terms;
  Lhs.split(Terms, ',');
  if (Terms.size() != C.N.Inputs.size())
    return;
  Dim Letter[128];
  unsigned Count[128] = {0};
  Shape Ell;
  bool AnyEll = false;
  for (size_t I = 0; I < Terms.size(); ++I) {
    const Shape *S = C.shape(I);
    if (!S)
      return;
    StringRef Term = Terms[I];
    size_t EllPos = Term.find("...");
    size_t Letters = Term.size() - (EllPos == StringRef::npos ? 0 : 3);
    if (Letters > S->rank() || (EllPos == StringRef::npos && Letters != S->rank()))
      return;
    size_t EllRank = S->rank() - Letters;
    size_t Axis = 0;
    for (size_t P = 0; P < Term.size();) {
      if (P == EllPos) {
        Shape Part;
        Part.Dims.assign(S->Dims.begin() + Axis, S->Dims.begin() + Axis + EllRank);
        if (!AnyEll)
          Ell = Part;
        else if (!broadcastInto(Ell, Part))
          return;
        AnyEll = true;
        Axis += EllRank;
        P += 3;
        continue;
      }
      unsigned char Ch = Term[P++];
      if (!std::isalpha(Ch))
        return;
      const Dim &D = S->Dims[Axis++];
      if (Count[Ch] == 0) {
        Letter[Ch] = D;
      } else {
        if (Letter[Ch].isKnown() && D.isKnown() && Letter[Ch].extent() != D.extent() &&
            D.extent() != 1 && Letter[Ch].extent() != 1)
          return;
        Dim R;
        broadcastDim(Letter[Ch], D, R);
        Letter[Ch] = R;
      }
      ++Count[Ch];
    }
  }
  Shape Out;
  if (Explicit) {
    for (size_t P = 0; P < Rhs.size();) {
      if (Rhs.substr(P).starts_with("...")) {
        Out.Dims.append(Ell.Dims.begin(), Ell.Dims.end());
        P += 3;
        continue;
      }
      unsigned char Ch = Rhs[P++];
      if (!std::isalpha(Ch) || !Count[Ch])
        return;
      Out.Dims.push_back(Letter[Ch]);
    }
  } else {
    Out.Dims.append(Ell.Dims.begin(), Ell.Dims.end());
    for (unsigned Ch = 0; Ch < 128; ++Ch)
      if (Count[Ch] == 1)
        Out.Dims.push_back(Letter[Ch]);
  }
  C.set(0, T, Out);
}

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

void ruleGridSample(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *G = C.shape(1);
  if (!X || !G || X->rank() < 3 || G->rank() != X->rank())
    return C.setType(0, T);
  Shape Out;
  Out.Dims.push_back(mergeDim(X->Dims[0], G->Dims[0]));
  Out.Dims.push_back(X->Dims[1]);
  Out.Dims.append(G->Dims.begin() + 1, G->Dims.end() - 1);
  C.set(0, T, Out);
}

void ruleDet(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X || X->rank() < 2)
    return C.setType(0, T);
  Shape Out;
  Out.Dims.assign(X->Dims.begin(), X->Dims.end() - 2);
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

//===----------------------------------------------------------------------===//
// Generators, random, quantization, losses, signal
//===----------------------------------------------------------------------===//

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

/// SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss.
void ruleLoss(Ctx &C) {
  DType T = C.elem(0);
  std::string Reduction = C.N.attrString("reduction", "mean");
  if (Reduction == "none")
    C.copy(0, 1, T);
  else
    C.setDims(0, T, {});
  if (C.numOuts() > 1)
    C.copy(1, 0);
}

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

//===----------------------------------------------------------------------===//
// Recurrent networks
//===----------------------------------------------------------------------===//

void ruleRNN(Ctx &C) {
  DType T = C.elem(0);
  for (unsigned O = 0; O < C.numOuts(); ++O)
    C.setType(O, T);
  const Shape *X = C.shape(0);
  if (!X || X->rank() != 3)
    return;
  bool Layout1 = C.N.attrInt("layout", 0) != 0;
  Dim Seq = X->Dims[Layout1 ? 1 : 0], Batch = X->Dims[Layout1 ? 0 : 1];
  Dim NumDir = Dim::known(C.N.attrString("direction", "forward") == "bidirectional" ? 2 : 1);
  Dim Hidden;
  if (const Attribute *H = C.N.attr("hidden_size"))
    Hidden = Dim::known(H->I);
  else if (const Shape *R = C.shape(2); R && R->rank() == 3)
    Hidden = R->Dims[2];
  if (Layout1)
    C.setDims(0, T, {Batch, Seq, NumDir, Hidden});
  else
    C.setDims(0, T, {Seq, NumDir, Batch, Hidden});
  for (unsigned O = 1; O < C.numOuts() && O < 3; ++O) {
    if (Layout1)
      C.setDims(O, T, {Batch, NumDir, Hidden});
    else
      C.setDims(O, T, {NumDir, Batch, Hidden});
  }
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

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
  for (unsigned O = 0; O < C.numOuts(); ++O) {
    if (O >= Then->Outputs.size() || O >= Else->Outputs.size())
      return;
    Value *A = Then->Outputs[O], *B = Else->Outputs[O];
    auto EA = C.Inf.Elems.find(A), EB = C.Inf.Elems.find(B);
    if (EA != C.Inf.Elems.end() && EB != C.Inf.Elems.end()) {
      ElemInfo E = EA->second;
      if (!EB->second.Empty)
        addElement(E, EB->second.Elem, EB->second.Shp);
      setElems(C, O, E);
    }
    C.setType(O, A->Elem != DType::Undefined ? A->Elem : B->Elem);
    if (!A->Shp || !B->Shp || A->Shp->rank() != B->Shp->rank())
      continue;
    Shape S;
    for (size_t I = 0; I < A->Shp->rank(); ++I)
      S.Dims.push_back(unionDim(A->Shp->Dims[I], B->Shp->Dims[I]));
    C.set(O, DType::Undefined, S);
  }
}

void typeLike(Value &Dst, const Value &Src) {
  if (Dst.Elem == DType::Undefined)
    Dst.Elem = Src.Elem;
  if (Src.Shp)
    refineShape(Dst, *Src.Shp);
}

/// A loop-carried output: the state's initial value or its value after the
/// body, whichever ran last.
void setCarriedOutput(Ctx &C, unsigned O, const Value *Init, const Value *Body) {
  C.setType(O, Body->Elem != DType::Undefined ? Body->Elem
                                              : Init ? Init->Elem : DType::Undefined);
  if (!Body->Shp || !Init || !Init->Shp || Init->Shp->rank() != Body->Shp->rank())
    return;
  Shape S;
  for (size_t I = 0; I < Body->Shp->rank(); ++I)
    S.Dims.push_back(unionDim(Init->Shp->Dims[I], Body->Shp->Dims[I]));
  C.set(O, DType::Undefined, S);
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
  SmallVector<std::pair<Value *, Value *>, 4> Carried;
  size_t NState = C.N.Inputs.size() >= 2 ? C.N.Inputs.size() - 2 : 0;
  for (size_t K = 0; K < NState; ++K) {
    if (2 + K >= Body->Inputs.size() || 1 + K >= Body->Outputs.size())
      break;
    if (Value *In = C.in(2 + K)) {
      typeLike(*Body->Inputs[2 + K], *In);
      if (const ElemInfo *E = elemsOf(C, 2 + K))
        C.Inf.Elems[Body->Inputs[2 + K]] = *E;
    }
    Carried.push_back({Body->Inputs[2 + K], Body->Outputs[1 + K]});
  }
  C.Inf.inferBody(*Body, Carried);
  for (size_t K = 0; K < NState && K < C.numOuts(); ++K) {
    if (1 + K >= Body->Outputs.size())
      break;
    setCarriedOutput(C, K, C.in(2 + K), Body->Outputs[1 + K]);
    auto EB = C.Inf.Elems.find(Body->Outputs[1 + K]);
    if (EB == C.Inf.Elems.end())
      continue;
    ElemInfo E = EB->second;
    if (const ElemInfo *EI = elemsOf(C, 2 + K); EI && !EI->Empty)
      addElement(E, EI->Elem, EI->Shp);
    setElems(C, K, E);
  }
  // Scan outputs: the body's per-iteration values stacked along a new axis,
  // of the trip count when the loop runs exactly that many times (its
  // condition is true and the body passes it through or keeps it true).
  Dim Trip;
  int64_t MaxTrip;
  auto KnownTrue = [&](Value *V) {
    auto It = V ? C.Inf.Vals.find(V) : C.Inf.Vals.end();
    if (It != C.Inf.Vals.end())
      return llvm::all_of(It->second, [](const IV &X) { return X.Known && X.V; });
    return V && V->IntData && llvm::all_of(*V->IntData, [](int64_t X) { return X != 0; });
  };
  if (C.has(0) && C.scalarInt(0, MaxTrip) && MaxTrip >= 0 &&
      (!C.has(1) || KnownTrue(C.in(1))) && Body->Inputs.size() >= 2 &&
      !Body->Outputs.empty()) {
    Value *CondOut = Body->Outputs[0];
    const Node *P = CondOut->Producer;
    if (CondOut == Body->Inputs[1] || KnownTrue(CondOut) ||
        (P && P->OpType == "Identity" && P->input(0) == Body->Inputs[1]))
      Trip = Dim::known(MaxTrip);
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
void ruleScan8(Ctx &C, Graph *Body) {
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
      Slice.Shp = *In->Shp;
      Slice.Shp->Dims.erase(Slice.Shp->Dims.begin(), Slice.Shp->Dims.begin() + Drop);
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
        Slice.Shp = *In->Shp;
        Slice.Shp->Dims.erase(Slice.Shp->Dims.begin() + Axis);
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
      setCarriedOutput(C, K, C.in(K), Body->Outputs[K]);
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

void ruleSequenceLength(Ctx &C) { C.setDims(0, DType::Int64, {}); }
void ruleOptionalHasElement(Ctx &C) { C.setDims(0, DType::Bool, {}); }

void ruleSequenceEmpty(Ctx &C) {
  ElemInfo E;
  E.Elem = attrDType(C.N, "dtype", DType::Float);
  E.Empty = true;
  setElems(C, 0, E);
}

void ruleSequenceConstruct(Ctx &C) {
  ElemInfo E;
  E.Empty = true;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I)
    if (Value *V = C.in(I))
      addElement(E, V->Elem, V->Shp);
  setElems(C, 0, E);
}

void ruleSequenceInsert(Ctx &C) {
  const ElemInfo *S = elemsOf(C, 0);
  Value *T = C.in(1);
  if (!S || !T)
    return;
  ElemInfo E = *S;
  addElement(E, T->Elem, T->Shp);
  setElems(C, 0, E);
}

void ruleSequenceErase(Ctx &C) {
  if (const ElemInfo *S = elemsOf(C, 0))
    setElems(C, 0, *S);
}

void ruleSequenceAt(Ctx &C) {
  const ElemInfo *S = elemsOf(C, 0);
  if (!S)
    return;
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
    if (!C.has(1)) {
      if (C.N.attrInt("keepdims", 1))
        S.Dims[Axis] = Dim::known(1);
      else
        S.Dims.erase(S.Dims.begin() + Axis);
    } else if (C.ints(1, Split) && !Split.empty()) {
      const Shape *SS = C.shape(1);
      bool Scalar = SS && SS->rank() == 0;
      if (Scalar)
        S.Dims[Axis] = D.isKnown() && Split[0] > 0 && D.extent() % Split[0] == 0
                           ? Dim::known(Split[0]) : Dim{};
      else
        S.Dims[Axis] = llvm::all_equal(Split) ? Dim::known(Split[0]) : Dim{};
    } else {
      S.Dims[Axis] = Dim{};
    }
    E.Shp = S;
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
  if (NewAxis)
    Out.Dims.insert(Out.Dims.begin() + Axis, Dim{});
  else
    Out.Dims[Axis] = Dim{};
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
  for (size_t O = 0; O < C.numOuts() && O < Body->Outputs.size(); ++O) {
    ElemInfo E;
    E.Elem = Body->Outputs[O]->Elem;
    E.Shp = Body->Outputs[O]->Shp;
    setElems(C, O, E);
  }
}

void ruleNonMaxSuppression(Ctx &C) {
  C.setDims(0, DType::Int64, {Dim{}, Dim::known(3)});
}

void ruleStringNormalizer(Ctx &C) {
  const Shape *X = C.shape(0);
  if (X && X->rank() == 2)
    C.setDims(0, DType::String, {X->Dims[0], Dim{}});
  else
    C.setDims(0, DType::String, {Dim{}});
}

void ruleTfIdfVectorizer(Ctx &C) {
  const Shape *X = C.shape(0);
  Dim Width;
  if (auto Idx = C.N.attrInts("ngram_indexes"); Idx && !Idx->empty())
    if (int64_t Max = *std::max_element(Idx->begin(), Idx->end()); Max >= 0 && Max < MaxExtent)
      Width = Dim::known(Max + 1);
  if (!X || X->rank() == 0 || X->rank() > 2)
    return C.setType(0, DType::Float);
  if (X->rank() == 1)
    C.setDims(0, DType::Float, {Width});
  else
    C.setDims(0, DType::Float, {X->Dims[0], Width});
}

/// ai.onnx.preview.training Adagrad, Adam, Momentum: inputs R, T, then K
/// groups of n tensors (X, G, states...); outputs the groups but G.
void ruleOptimizer(Ctx &C) {
  size_t K = C.N.OpType == "Adam" ? 4 : 3;
  size_t NIn = C.N.Inputs.size();
  if (NIn < 2 || (NIn - 2) % K)
    return;
  size_t N = (NIn - 2) / K;
  if (C.numOuts() != N * (K - 1))
    return;
  for (size_t O = 0; O < C.numOuts(); ++O) {
    size_t Group = O / N, Idx = O % N;
    size_t InGroup = Group == 0 ? 0 : Group + 1;
    C.copy(O, 2 + InGroup * N + Idx);
  }
}

/// ai.onnx.preview.training Gradient: d(y)/d(xs[i]) has xs[i]'s type.
void ruleGradient(Ctx &C) {
  const Attribute *Xs = C.N.attr("xs");
  if (!Xs)
    return;
  for (size_t O = 0; O < C.numOuts() && O < Xs->Strings.size(); ++O)
    if (Value *V = C.N.Parent ? C.N.Parent->lookup(Xs->Strings[O]) : nullptr) {
      C.setType(O, V->Elem);
      if (V->Shp)
        C.set(O, V->Elem, *V->Shp);
    }
}

/// Attention (opset 23): Q, K, V as [B, heads, seq, head] or [B, seq,
/// heads * head] with q_num_heads / kv_num_heads; optional past_key/value.
void ruleAttention(Ctx &C) {
  DType T = C.elem(0);
  for (unsigned O = 0; O < C.numOuts(); ++O)
    C.setType(O, T);
  const Shape *Q = C.shape(0), *K = C.shape(1), *V = C.shape(2);
  if (!Q || !K || !V || Q->rank() != K->rank() || Q->rank() != V->rank() ||
      (Q->rank() != 3 && Q->rank() != 4))
    return;
  bool Four = Q->rank() == 4;
  int64_t Hq = C.N.attrInt("q_num_heads", 0), Hkv = C.N.attrInt("kv_num_heads", 0);
  if (!Four && (Hq <= 0 || Hkv <= 0))
    return;
  Dim B = mergeDim(Q->Dims[0], K->Dims[0]);
  Dim HQ = Four ? Q->Dims[1] : Dim::known(Hq), HKV = Four ? K->Dims[1] : Dim::known(Hkv);
  Dim S = Q->Dims[Four ? 2 : 1], L = K->Dims[Four ? 2 : 1];
  Dim Dh = Four ? K->Dims[3] : divDim(K->Dims[2], Hkv);
  Dim Dv = Four ? V->Dims[3] : divDim(V->Dims[2], Hkv);
  if (Four)
    C.setDims(0, T, {B, HQ, S, Dv});
  else
    C.setDims(0, T, {B, S, mulDim(Dv, Hq)});
  Dim Total = L;
  if (C.has(4)) {
    const Shape *PK = C.shape(4);
    Total = PK && PK->rank() == 4 ? addDims(PK->Dims[2], L) : Dim{};
  }
  C.setDims(1, T, {B, HKV, Total, Dh});
  C.setDims(2, T, {B, HKV, Total, Dv});
  C.setDims(3, T, {B, HQ, S, Total});
}

/// Col2Im (18): [N, C * prod(block), L] -> [N, C, *image_shape].
void ruleCol2Im(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  IVec Image, Block;
  if (!X || X->rank() != 3 || !C.vals(1, Image) || !C.vals(2, Block))
    return C.setType(0, T);
  int64_t BlockElems = 1;
  for (const IV &B : Block) {
    if (!B.Known || B.V <= 0 || !mulOk(BlockElems, B.V, BlockElems))
      return C.setType(0, T);
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(divDim(X->Dims[1], BlockElems));
  Shape Img;
  if (!valsToShape(Image, Img))
    return C.setType(0, T);
  Out.Dims.append(Img.Dims.begin(), Img.Dims.end());
  C.set(0, T, std::move(Out));
}

/// AffineGrid (20): theta [N, 2, 3] and size (N, C, H, W) -> [N, H, W, 2];
/// theta [N, 3, 4] and size (N, C, D, H, W) -> [N, D, H, W, 3].
void ruleAffineGrid(Ctx &C) {
  DType T = C.elem(0);
  IVec Size;
  if (!C.vals(1, Size) || (Size.size() != 4 && Size.size() != 5))
    return C.setType(0, T);
  Shape Out;
  Size.erase(Size.begin() + 1); // C
  if (!valsToShape(Size, Out))
    return C.setType(0, T);
  Out.Dims.push_back(Dim::known(Size.size() - 1));
  C.set(0, T, std::move(Out));
}

void ruleImageDecoder(Ctx &C) {
  std::string Format = C.N.attrString("pixel_format", "RGB");
  C.setDims(0, DType::UInt8, {Dim{}, Dim{}, Dim::known(Format == "Grayscale" ? 1 : 3)});
}

void ruleStringSplit(Ctx &C) {
  const Shape *X = C.shape(0);
  if (!X)
    return;
  Shape Y = *X;
  Y.Dims.push_back(Dim{});
  C.set(0, DType::String, std::move(Y));
  C.copy(1, 0, DType::Int64);
}

void ruleStringConcat(Ctx &C) { broadcastRule(C, 0, DType::String); }

//===----------------------------------------------------------------------===//
// com.microsoft (ONNX Runtime's contrib ops common in exported LLMs)
//===----------------------------------------------------------------------===//

void ruleMsBiasGelu(Ctx &C) { broadcastRule(C, 0, C.elem(0)); }

/// FusedMatMul: MatMul with the last two dims of A and/or B transposed.
void ruleMsFusedMatMul(Ctx &C) {
  DType T = C.elem(0);
  const Shape *A = C.shape(0), *B = C.shape(1);
  if (!A || !B || A->rank() < 2 || B->rank() < 2)
    return C.setType(0, T);
  Shape SA = *A, SB = *B;
  if (C.N.attrInt("transA", 0))
    std::swap(SA.Dims[SA.rank() - 1], SA.Dims[SA.rank() - 2]);
  if (C.N.attrInt("transB", 0))
    std::swap(SB.Dims[SB.rank() - 1], SB.Dims[SB.rank() - 2]);
  Shape Out;
  if (matmulShape(SA, SB, Out))
    C.set(0, T, std::move(Out));
  else
    C.setType(0, T);
}

/// MatMulNBits: A [..., K] times a packed [K, N] weight.
void ruleMsMatMulNBits(Ctx &C) {
  DType T = C.elem(0);
  const Shape *A = C.shape(0);
  const Attribute *N = C.N.attr("N");
  if (!A || A->rank() < 1 || !N)
    return C.setType(0, T);
  Shape Out = *A;
  Out.Dims.back() = Dim::known(N->I);
  C.set(0, T, std::move(Out));
}

/// SkipLayerNormalization, SkipSimplifiedLayerNormalization: output and the
/// input+skip+bias sum (output 3) have the input's shape; the optional mean
/// and inv_std_var (outputs 1, 2) hold one f32 per row of the last axis,
/// [..., 1] (the contrib op doc: float statistics).
void ruleMsSkipLayerNorm(Ctx &C) {
  C.copy(0, 0);
  const Shape *X = C.shape(0);
  for (unsigned O = 1; O < 3 && O < C.numOuts(); ++O) {
    if (!X || X->rank() == 0) {
      C.setType(O, DType::Float);
      continue;
    }
    Shape S = *X;
    S.Dims.back() = Dim::known(1);
    C.set(O, DType::Float, S);
  }
  if (C.numOuts() > 3)
    C.copy(3, 0);
}

/// Attention (com.microsoft): input [B, S, hidden] projected by weights
/// [hidden, 3 * hidden] (or qkv_hidden_sizes).
void ruleMsAttention(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *W = C.shape(1);
  if (!X || X->rank() != 3)
    return C.setType(0, T);
  Dim Hv;
  if (auto Sizes = C.N.attrInts("qkv_hidden_sizes"); Sizes && Sizes->size() == 3)
    Hv = Dim::known((*Sizes)[2]);
  else if (W && W->rank() == 2)
    Hv = divDim(W->Dims[1], 3);
  C.setDims(0, T, {X->Dims[0], X->Dims[1], Hv});
}

/// MultiHeadAttention, GroupQueryAttention: output [B, S, v_hidden].
void ruleMsMultiHeadAttention(Ctx &C) {
  DType T = C.elem(0);
  const Shape *Q = C.shape(0), *V = C.shape(2);
  if (!Q || Q->rank() != 3)
    return C.setType(0, T);
  Dim Hv;
  int64_t NumHeads = C.N.attrInt("num_heads", 0);
  if (V && V->rank() == 3) {
    if (C.N.OpType == "GroupQueryAttention") {
      int64_t KvHeads = C.N.attrInt("kv_num_heads", 0);
      Dim Head = KvHeads > 0 ? divDim(V->Dims[2], KvHeads) : Dim{};
      Hv = NumHeads > 0 ? mulDim(Head, NumHeads) : Dim{};
    } else {
      Hv = V->Dims[2];
    }
  } else if (V && V->rank() == 4 && NumHeads > 0) {
    Hv = mulDim(V->Dims[3], NumHeads);
  } else if (!C.has(1) && !C.has(2) && C.N.OpType == "GroupQueryAttention") {
    // Packed QKV: hidden = (num_heads + 2 * kv_num_heads) * head.
    int64_t KvHeads = C.N.attrInt("kv_num_heads", 0);
    Dim Head = divDim(Q->Dims[2], NumHeads + 2 * KvHeads);
    Hv = mulDim(Head, NumHeads);
  } else if (C.N.OpType == "MultiHeadAttention" && !C.has(2)) {
    Hv = Dim{};
  } else {
    Hv = Q->Dims[2];
  }
  C.setDims(0, T, {Q->Dims[0], Q->Dims[1], Hv});
}

//===----------------------------------------------------------------------===//
// The tables
//===----------------------------------------------------------------------===//

struct RuleEntry {
  const char *Name;
  RuleFn Fn;
};

const RuleEntry DefaultRules[] = {
    // Element-wise unary: the input's shape and type.
    {"Abs", ruleUnaryMath}, {"Acos", ruleUnary}, {"Acosh", ruleUnary},
    {"Asin", ruleUnary}, {"Asinh", ruleUnary}, {"Atan", ruleUnary},
    {"Atanh", ruleUnary}, {"BitwiseNot", ruleUnary}, {"Ceil", ruleUnaryMath},
    {"Celu", ruleUnary}, {"Clip", ruleClip}, {"Cos", ruleUnary},
    {"Cosh", ruleUnary}, {"CumSum", ruleUnary}, {"Elu", ruleUnary},
    {"Erf", ruleUnary}, {"Exp", ruleUnary}, {"Floor", ruleUnaryMath},
    {"Gelu", ruleUnary}, {"HardSigmoid", ruleUnary}, {"HardSwish", ruleUnary},
    {"Hardmax", ruleUnary}, {"Identity", ruleIdentity}, {"LeakyRelu", ruleUnary},
    {"Log", ruleUnary}, {"LogSoftmax", ruleUnary}, {"LpNormalization", ruleUnary},
    {"LRN", ruleUnary}, {"MeanVarianceNormalization", ruleUnary},
    {"Mish", ruleUnary}, {"Neg", ruleUnaryMath}, {"Reciprocal", ruleUnary},
    {"Relu", ruleUnaryMath}, {"Round", ruleUnaryMath}, {"Selu", ruleUnary},
    {"Shrink", ruleUnary}, {"Sigmoid", ruleUnary}, {"Sign", ruleUnary},
    {"Sin", ruleUnary}, {"Sinh", ruleUnary}, {"Softmax", ruleUnary},
    {"Softplus", ruleUnary}, {"Softsign", ruleUnary}, {"Sqrt", ruleUnaryMath},
    {"Swish", ruleUnary}, {"Tan", ruleUnary}, {"Tanh", ruleUnary},
    {"ThresholdedRelu", ruleUnary}, {"Trilu", ruleUnary},
    {"InstanceNormalization", ruleUnary}, {"GroupNormalization", ruleUnary},
    {"ReverseSequence", ruleUnary}, {"Scatter", ruleUnary},
    {"ScatterElements", ruleUnary}, {"ScatterND", ruleUnary},
    {"ImageScaler", ruleUnary}, {"Bernoulli", ruleRandomLike},
    {"IsNaN", ruleToBool}, {"IsInf", ruleToBool}, {"Not", ruleNot},
    {"Cast", ruleCast}, {"CastLike", ruleCastLike}, {"Dropout", ruleDropout},
    // Broadcasting.
    {"Add", ruleBroadcast}, {"Sub", ruleBroadcast}, {"Mul", ruleBroadcast},
    {"Div", ruleBroadcast}, {"Pow", ruleBroadcast}, {"Mod", ruleBroadcast},
    {"Max", ruleBroadcast}, {"Min", ruleBroadcast}, {"Sum", ruleBroadcast},
    {"Mean", ruleMean}, {"And", ruleBroadcast}, {"Or", ruleBroadcast},
    {"Xor", ruleBroadcast}, {"Equal", ruleBroadcast}, {"Less", ruleBroadcast},
    {"Greater", ruleBroadcast}, {"LessOrEqual", ruleBroadcast},
    {"GreaterOrEqual", ruleBroadcast}, {"BitShift", ruleBroadcast},
    {"BitwiseAnd", ruleBroadcast}, {"BitwiseOr", ruleBroadcast},
    {"BitwiseXor", ruleBroadcast}, {"PRelu", ruleUnary}, {"Where", ruleWhere},
    // Linear algebra, convolution, pooling, normalization.
    {"MatMul", ruleMatMul}, {"MatMulInteger", ruleMatMulInteger},
    {"QLinearMatMul", ruleQLinearMatMul}, {"Gemm", ruleGemm},
    {"Conv", ruleConv}, {"ConvInteger", ruleConvInteger},
    {"QLinearConv", ruleQLinearConv}, {"ConvTranspose", ruleConvTranspose},
    {"MaxPool", rulePool}, {"AveragePool", rulePool}, {"LpPool", rulePool},
    {"GlobalAveragePool", ruleGlobalPool}, {"GlobalMaxPool", ruleGlobalPool},
    {"GlobalLpPool", ruleGlobalPool}, {"MaxUnpool", ruleMaxUnpool},
    {"RoiAlign", ruleRoiPool}, {"MaxRoiPool", ruleRoiPool},
    {"BatchNormalization", ruleBatchNorm}, {"LayerNormalization", ruleLayerNorm},
    // onnxruntime's RMS norm, registered in the default domain: Y as X, the
    // optional inv_std_var as LayerNormalization's statistics.
    {"SimplifiedLayerNormalization", ruleLayerNorm},
    {"Einsum", ruleEinsum}, {"Det", ruleDet},
    // Reductions.
    {"ReduceSum", ruleReduce}, {"ReduceMean", ruleReduce},
    {"ReduceMax", ruleReduce}, {"ReduceMin", ruleReduce},
    {"ReduceProd", ruleReduce}, {"ReduceL1", ruleReduce},
    {"ReduceL2", ruleReduce}, {"ReduceLogSum", ruleReduce},
    {"ReduceLogSumExp", ruleReduce}, {"ReduceSumSquare", ruleReduce},
    {"ArgMax", ruleArgMinMax}, {"ArgMin", ruleArgMinMax},
    // Shape manipulation.
    {"Reshape", ruleReshape}, {"Flatten", ruleFlatten},
    {"Transpose", ruleTranspose}, {"Squeeze", ruleSqueeze},
    {"Unsqueeze", ruleUnsqueeze}, {"Concat", ruleConcat}, {"Split", ruleSplit},
    {"Slice", ruleSlice}, {"Gather", ruleGather},
    {"GatherElements", ruleGatherElements}, {"GatherND", ruleGatherND},
    {"Expand", ruleExpand}, {"Tile", ruleTile}, {"Pad", rulePad},
    {"Shape", ruleShape}, {"Size", ruleSize}, {"Constant", ruleConstant},
    {"ConstantOfShape", ruleConstantOfShape}, {"Range", ruleRange},
    {"Resize", ruleResize}, {"Upsample", ruleResize}, {"TopK", ruleTopK},
    {"OneHot", ruleOneHot}, {"NonZero", ruleNonZero}, {"Compress", ruleCompress},
    {"Unique", ruleUnique}, {"DepthToSpace", ruleDepthToSpace},
    {"SpaceToDepth", ruleDepthToSpace}, {"GridSample", ruleGridSample},
    {"CenterCropPad", ruleCenterCropPad},
    // Generators, random, quantization, losses, signal.
    {"EyeLike", ruleEyeLike}, {"RandomNormal", ruleRandom},
    {"RandomUniform", ruleRandom}, {"RandomNormalLike", ruleRandomLike},
    {"RandomUniformLike", ruleRandomLike}, {"Multinomial", ruleMultinomial},
    {"QuantizeLinear", ruleQuantize}, {"DequantizeLinear", ruleDequantize},
    {"DynamicQuantizeLinear", ruleDynamicQuantize},
    {"SoftmaxCrossEntropyLoss", ruleLoss},
    {"NegativeLogLikelihoodLoss", ruleLoss}, {"HannWindow", ruleWindow},
    {"HammingWindow", ruleWindow}, {"BlackmanWindow", ruleWindow},
    {"MelWeightMatrix", ruleMelWeightMatrix}, {"DFT", ruleDFT},
    {"STFT", ruleSTFT},
    // Recurrent networks, control flow, sequences and optionals.
    {"RNN", ruleRNN}, {"GRU", ruleRNN}, {"LSTM", ruleRNN},
    // Opset 23: attention and friends.
    {"Attention", ruleAttention}, {"RMSNormalization", ruleUnary},
    {"RotaryEmbedding", ruleUnary}, {"TensorScatter", ruleUnary},
    {"Col2Im", ruleCol2Im}, {"AffineGrid", ruleAffineGrid},
    {"DeformConv", ruleConv}, {"ImageDecoder", ruleImageDecoder},
    {"RegexFullMatch", ruleToBool}, {"StringSplit", ruleStringSplit},
    {"StringConcat", ruleStringConcat},
    {"If", ruleIf}, {"Loop", ruleLoop}, {"Scan", ruleScan},
    {"SequenceLength", ruleSequenceLength},
    {"OptionalHasElement", ruleOptionalHasElement},
    {"SequenceConstruct", ruleSequenceConstruct},
    {"SequenceEmpty", ruleSequenceEmpty}, {"SequenceInsert", ruleSequenceInsert},
    {"SequenceErase", ruleSequenceErase}, {"SequenceAt", ruleSequenceAt},
    {"SplitToSequence", ruleSplitToSequence},
    {"ConcatFromSequence", ruleConcatFromSequence},
    {"SequenceMap", ruleSequenceMap}, {"Optional", ruleOptional},
    {"OptionalGetElement", ruleOptionalGetElement},
    // Text, detection.
    {"NonMaxSuppression", ruleNonMaxSuppression},
    {"StringNormalizer", ruleStringNormalizer},
    {"TfIdfVectorizer", ruleTfIdfVectorizer},
};

const RuleEntry TrainingRules[] = {
    {"Adagrad", ruleOptimizer}, {"Adam", ruleOptimizer},
    {"Momentum", ruleOptimizer}, {"Gradient", ruleGradient},
};

const RuleEntry MicrosoftRules[] = {
    {"Gelu", ruleUnary}, {"FastGelu", ruleUnary}, {"QuickGelu", ruleUnary},
    {"BiasGelu", ruleMsBiasGelu}, {"BiasAdd", ruleMsBiasGelu},
    {"FusedMatMul", ruleMsFusedMatMul}, {"MatMulNBits", ruleMsMatMulNBits},
    {"SkipLayerNormalization", ruleMsSkipLayerNorm},
    {"SkipSimplifiedLayerNormalization", ruleMsSkipLayerNorm},
    // Y as X; the optional inv_std_var one f32 (stash_type) per row.
    {"SimplifiedLayerNormalization", ruleLayerNorm},
    {"LayerNormalization", ruleLayerNorm}, {"RotaryEmbedding", ruleUnary},
    {"Attention", ruleMsAttention},
    {"MultiHeadAttention", ruleMsMultiHeadAttention},
    {"GroupQueryAttention", ruleMsMultiHeadAttention},
    {"FusedConv", ruleConv},
};

const llvm::StringMap<RuleFn> &ruleMap(StringRef Domain) {
  static const llvm::StringMap<RuleFn> Default = [] {
    llvm::StringMap<RuleFn> M;
    for (const RuleEntry &E : DefaultRules)
      M[E.Name] = E.Fn;
    return M;
  }();
  static const llvm::StringMap<RuleFn> Microsoft = [] {
    llvm::StringMap<RuleFn> M;
    for (const RuleEntry &E : MicrosoftRules)
      M[E.Name] = E.Fn;
    return M;
  }();
  static const llvm::StringMap<RuleFn> Training = [] {
    llvm::StringMap<RuleFn> M;
    for (const RuleEntry &E : TrainingRules)
      M[E.Name] = E.Fn;
    return M;
  }();
  static const llvm::StringMap<RuleFn> None;
  if (Domain.empty() || Domain == "ai.onnx")
    return Default;
  if (Domain == "com.microsoft")
    return Microsoft;
  if (Domain == "ai.onnx.preview.training")
    return Training;
  return None;
}

RuleFn findRule(StringRef Domain, StringRef Op) {
  const auto &M = ruleMap(Domain);
  auto It = M.find(Op);
  return It == M.end() ? nullptr : It->second;
}

//===----------------------------------------------------------------------===//
// Driving
//===----------------------------------------------------------------------===//

void Inferencer::inferGraph(Graph &G) {
  for (const auto &N : G.Nodes)
    inferNode(*N);
}

void Inferencer::inferNode(Node &N) {
  if (RuleFn Fn = findRule(N.Domain, N.OpType)) {
    Ctx C(*this, N, N.OpsetVersion ? N.OpsetVersion : DefaultOpset);
    Fn(C);
    // Subgraphs of ops other than the control flow ones (which infer theirs).
    if (Fn != ruleIf && Fn != ruleLoop && Fn != ruleScan && Fn != ruleSequenceMap)
      for (const Attribute &A : N.Attrs)
        for (const auto &Sub : A.Graphs)
          inferGraph(*Sub);
    return;
  }
  if (const Function *F = M.findFunction(N.Domain, N.OpType)) {
    inferCall(N, *F);
    return;
  }
  UnknownOps.insert(N.Domain.empty() ? N.OpType.str()
                                     : (llvm::Twine(N.Domain) + ":" + N.OpType).str());
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

void snapshot(Graph &G, std::vector<ValueState> &Out) {
  for (Value &V : G.Values)
    Out.push_back({&V, V.Elem, V.Shp, V.IntData});
  for (const auto &N : G.Nodes)
    for (Graph *Sub : N->subgraphs())
      snapshot(*Sub, Out);
}

void Inferencer::inferBody(Graph &Body,
                           ArrayRef<std::pair<Value *, Value *>> Carried) {
  std::vector<ValueState> Saved;
  if (!Carried.empty())
    snapshot(Body, Saved);
  inferGraph(Body);
  // A state whose shape the body changes: generalize and infer again.
  SmallVector<std::optional<Shape>, 4> General;
  bool Again = false;
  for (const auto &[In, Out] : Carried) {
    std::optional<Shape> G = In->Shp;
    if (In->Shp) {
      if (!Out->Shp || Out->Shp->rank() != In->Shp->rank()) {
        G.reset();
        Again = true;
      } else {
        for (size_t I = 0; I < G->rank(); ++I)
          if (!(G->Dims[I] == Out->Shp->Dims[I])) {
            G->Dims[I] = Dim{};
            Again = true;
          }
      }
    }
    General.push_back(std::move(G));
  }
  if (!Again)
    return;
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
    // The declared type, if any, stays; else the generalized one.
    if (!In->Shp && General[K])
      In->Shp = General[K];
    else if (In->Shp && General[K] && In->Shp->rank() == General[K]->rank())
      for (size_t I = 0; I < In->Shp->rank(); ++I)
        if (!(In->Shp->Dims[I] == General[K]->Dims[I]))
          In->Shp->Dims[I] = Dim{};
  }
  inferGraph(Body);
}

void Inferencer::inferCall(Node &N, const Function &F) {
  Graph &B = *F.Body;
  if (CallDepth > 8)
    return;
  ++CallDepth;
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
void countStats(const Graph &G, const Inferencer &I, ShapeInferenceStats &S) {
  for (const auto &N : G.Nodes) {
    ++S.Nodes;
    bool All = true;
    for (Value *V : N->Outputs)
      if (V && !V->Shp && !I.Elems.count(V))
        All = false;
    ++(All ? S.Inferred : S.Unknown);
    for (const Attribute &A : N->Attrs)
      for (const auto &Sub : A.Graphs)
        countStats(*Sub, I, S);
  }
}

} // namespace

ShapeInferenceStats ridge::inferShapes(Graph &G, const Model &M) {
  Inferencer I(M);
  I.inferGraph(G);
  ShapeInferenceStats S;
  countStats(G, I, S);
  for (const auto &E : I.UnknownOps)
    S.UnknownOps.push_back(E.getKey().str());
  llvm::sort(S.UnknownOps);
  return S;
}

bool ridge::hasShapeRule(StringRef Domain, StringRef OpType) {
  return findRule(Domain, OpType) != nullptr;
}
