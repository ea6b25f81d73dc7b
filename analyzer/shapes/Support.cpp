//===- Support.cpp - Shape rules' support: dims, small values, attributes ---===//
#include "analyzer/shapes/Rules.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSwitch.h"
#include <algorithm>
#include <cmath>

namespace ridge::shapes {

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

static int64_t floorDiv(int64_t A, int64_t B) {
  int64_t Q = A / B;
  if ((A % B != 0) && ((A < 0) != (B < 0)))
    --Q;
  return Q;
}

int64_t ceilDiv(int64_t A, int64_t B) { return -floorDiv(-A, B); }


/// A computed extent as a dim; false when negative or absurdly large.
bool extentOk(i128 V) { return V >= 0 && V <= MaxExtent; }

/// A op B for non-negative dims; false on overflow.
thread_local bool DimOverflow = false;

bool mulOk(int64_t A, int64_t B, int64_t &R) {
  bool Ok = !__builtin_mul_overflow(A, B, &R);
  DimOverflow |= !Ok;
  return Ok;
}
bool addOk(int64_t A, int64_t B, int64_t &R) {
  bool Ok = !__builtin_add_overflow(A, B, &R);
  DimOverflow |= !Ok;
  return Ok;
}

/// Product of dims: anything times a known 0 is 0; otherwise unknown when a
/// dim is, else the product (batch * 1 = batch, batch * heads).
Dim productDim(ArrayRef<Dim> Ds) {
  bool AllKnown = true;
  for (const Dim &D : Ds) {
    if (D.isKnown() && D.extent() == 0)
      return Dim::known(0);
    AllKnown &= D.isKnown();
  }
  if (AllKnown) { // the common case, without interning
    int64_t N = 1;
    for (const Dim &D : Ds)
      if (!mulOk(N, D.extent(), N))
        return Dim{};
    return Dim::known(N);
  }
  sym::ExprRef P = sym::constant(1);
  for (const Dim &D : Ds) {
    if (!D.isDetermined())
      return Dim{};
    P = sym::mul(P, D.expr());
  }
  DimOverflow |= !P;
  return Dim::of(P);
}

/// Sum of two dims (batch + 0 = batch, seq + 1).
Dim addDims(const Dim &A, const Dim &B) {
  if (A.isKnown() && B.isKnown()) {
    bool Ok = extentOk(i128(A.extent()) + B.extent());
    DimOverflow |= !Ok;
    return Ok ? Dim::known(A.extent() + B.extent()) : Dim{};
  }
  return Dim::of(sym::add(A.expr(), B.expr()));
}

/// A dim divided by a known factor: the quotient when it divides exactly
/// (2*seq / 2 = seq), else unknown.
Dim divDim(const Dim &A, int64_t F) {
  if (F == 1)
    return A;
  if (F <= 0 || !A.isDetermined())
    return Dim{};
  return Dim::of(sym::divideExactly(A.expr(), sym::constant(F)));
}

Dim mulDim(const Dim &A, int64_t F) {
  if (F == 1)
    return A;
  if (A.isKnown())
    return F >= 0 && extentOk(i128(A.extent()) * F) ? Dim::known(A.extent() * F) : Dim{};
  return F >= 0 ? Dim::of(sym::mul(A.expr(), sym::constant(F))) : Dim{};
}

/// Two dims that must be equal: the more specific one.
const Dim &mergeDim(const Dim &A, const Dim &B) {
  if (A.isKnown())
    return A;
  if (B.isKnown())
    return B;
  return A.isSymbolic() ? A : B;
}

/// A dim that may be either: itself when both agree, else unknown.
Dim unionDim(const Dim &A, const Dim &B) { return A == B ? A : Dim{}; }

/// One axis of multidirectional broadcasting (ONNX's rule: a known dim other
/// than 1 wins; two different symbols give an unknown dim).
thread_local SmallVector<std::pair<sym::ExprRef, int64_t>, 2> AssumedBroadcasts;

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
    if (A.extent() > 1 && B.isSymbolic())
      AssumedBroadcasts.push_back({B.expr(), A.extent()});
    return true;
  }
  if (B.isKnown()) {
    Out = B.extent() == 1 ? A : B;
    if (B.extent() > 1 && A.isSymbolic())
      AssumedBroadcasts.push_back({A.expr(), B.extent()});
    return true;
  }
  // Two symbolic extents: ONNX broadcasting needs them equal or one of them
  // 1, and the result is then the larger in every case: max(A, B), exact
  // (no guess that unrelated symbols are equal; A itself when they are).
  if (A.isSymbolic() && B.isSymbolic())
    Out = Dim::of(sym::max(A.expr(), B.expr()));
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

bool knownDims(const Shape *S, SmallVectorImpl<int64_t> &Out) {
  Out.clear();
  if (!S)
    return false;
  for (const Dim &D : S->Dims) {
    if (!D.isKnown())
      return false;
    Out.push_back(D.extent());
  }
  return true;
}

size_t broadcastSource(ArrayRef<int64_t> Out, ArrayRef<int64_t> In, size_t K) {
  size_t Src = 0, Stride = 1;
  size_t Off = Out.size() - In.size();
  for (size_t I = Out.size(); I-- > 0;) {
    size_t Coord = K % size_t(Out[I]);
    K /= size_t(Out[I]);
    if (I < Off)
      continue;
    int64_t D = In[I - Off];
    if (D != 1)
      Src += Coord * Stride;
    Stride *= size_t(D);
  }
  return Src;
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
  // A symbolic dim an exporter wrote for a value inside the graph (torch's
  // "Concatres_append.3_dim_0", "unk__314": a dim its own inference lost)
  // gives way to the one inferred from the graph's inputs. A graph's inputs
  // and outputs keep their names (they are its signature), except the
  // outputs of a Loop body (the state after one iteration, whose growth
  // ridge follows: loop-growth.onnxtxt) and of an If branch (the If's value:
  // torch names the batch of x.squeeze(1) under `if x.shape[1] == 1`).
  auto InBody = [&] {
    const Graph *G = V.producer() ? V.producer()->Parent : nullptr;
    return G && G->ParentNode && G->ParentNode->Domain.empty() &&
           (G->ParentNode->OpType == "Loop" || G->ParentNode->OpType == "If");
  };
  bool Inner = V.Kind == ValueKind::Intermediate && (!V.IsGraphOutput || InBody());
  Shape Merged = *V.Shp;
  for (size_t I = 0; I < S.rank(); ++I) {
    Dim &Old = Merged.Dims[I];
    const Dim &New = S.Dims[I];
    if (Old.isKnown())
      continue;
    if (New.isKnown() || (!Old.isDetermined() && New.isSymbolic()) ||
        (Inner && New.isSymbolic()))
      Old = New;
  }
  V.Shp = Merged;
}

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
  return evalSymbolic(Op, A, B, FMod);
}

/// A op B when one is symbolic: exact expressions where ONNX's integer
/// semantics allow (Div truncates toward zero: floor division when exact or
/// both operands are >= 0; Mod with fmod=0 is the divisor's sign, as the
/// expression's mod, and fmod=1 agrees with it for a dividend >= 0 and a
/// positive divisor), comparisons when provable.
IV evalSymbolic(BinOp Op, const IV &A, const IV &B, bool FMod) {
  if (Op == BinOp::Mul && (A.is(0) || B.is(0)))
    return IV::known(0); // even when the other is unknown
  sym::ExprRef X = A.expr(), Y = B.expr();
  if (!X || !Y)
    return IV{};
  auto NonNeg = [](sym::ExprRef E) { return sym::provablyLE(sym::constant(0), E); };
  switch (Op) {
  case BinOp::Add: return IV::of(sym::add(X, Y));
  case BinOp::Sub: return IV::of(sym::sub(X, Y));
  case BinOp::Mul: return IV::of(sym::mul(X, Y));
  case BinOp::Div: {
    if (B.is(0))
      return IV{};
    if (sym::ExprRef Q = sym::divideExactly(X, Y))
      return IV::of(Q);
    return NonNeg(X) && NonNeg(Y) ? IV::of(sym::floorDiv(X, Y)) : IV{};
  }
  case BinOp::Mod:
    if (B.is(0))
      return IV{};
    if (!FMod || (NonNeg(X) && B.Known && B.V > 0))
      return IV::of(sym::mod(X, Y));
    return IV{};
  case BinOp::Max: return IV::of(sym::max(X, Y));
  case BinOp::Min: return IV::of(sym::min(X, Y));
  case BinOp::Pow:
    return B.Known && B.V >= 0 && B.V <= 64 ? IV::of(sym::pow(X, unsigned(B.V))) : IV{};
  case BinOp::Equal:
    if (X == Y)
      return IV::known(1);
    if (sym::ExprRef D = sym::sub(X, Y); D && D->isConstant())
      return IV::known(0); // a non-zero constant apart
    // Provably ordered (batch against -1: every symbol is >= 1).
    if (sym::provablyLE(sym::add(X, sym::constant(1)), Y) ||
        sym::provablyLE(sym::add(Y, sym::constant(1)), X))
      return IV::known(0);
    return IV{};
  case BinOp::Less:
  case BinOp::GreaterEq: {
    // X < Y: X + 1 <= Y; X >= Y: Y <= X.
    bool Lt = sym::provablyLE(sym::add(X, sym::constant(1)), Y), Ge = sym::provablyLE(Y, X);
    if (!Lt && !Ge)
      return IV{};
    return IV::known((Op == BinOp::Less) == Lt);
  }
  case BinOp::Greater:
  case BinOp::LessEq: {
    bool Gt = sym::provablyLE(sym::add(Y, sym::constant(1)), X), Le = sym::provablyLE(X, Y);
    if (!Gt && !Le)
      return IV{};
    return IV::known((Op == BinOp::Greater) == Gt);
  }
  default:
    return IV{};
  }
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

/// Shape of a value that may be either A or B.
static std::optional<Shape> unionShape(const std::optional<Shape> &A,
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

Dim dataSymbol(Ctx &C, StringRef What, StringRef Desc, sym::ExprRef Bound) {
  std::string Node = C.N.Name.empty() ? C.N.OpType.str() : C.N.Name.str();
  std::string Name = Node + "." + What.str();
  DataSymbol &S = C.Inf.DataSymbols[Name];
  S.Name = Name;
  S.Node = Node;
  S.What = Desc.str();
  S.Bound = Bound;
  auto It = C.Inf.M.DimBindings.find(Name);
  if (It != C.Inf.M.DimBindings.end())
    return Dim::known(It->second);
  return Dim::symbolic(Name);
}

/// Whether V's value is unknown because a shape upstream of it is (a Shape
/// or Size of a tensor with an unknown dim), not because the run computes
/// it: a lost shape, which a data symbol would hide. Every value upstream
/// is looked at, once per inference (memoized in Memo: a detection head's
/// box coordinates lie past the whole backbone).
static bool fromLostShape(const Value *V, llvm::DenseMap<const Value *, bool> &Memo) {
  if (!V)
    return false;
  // Depth-first, post-order, without recursion (a chain of a million nodes).
  struct Frame {
    const Value *V;
    unsigned Next; ///< the producer's input to look at next
    bool Lost;
  };
  llvm::SmallVector<Frame, 32> Stack;
  auto Push = [&](const Value *X) -> std::optional<bool> {
    if (!X || !X->producer())
      return false;
    if (auto It = Memo.find(X); It != Memo.end())
      return It->second;
    const Node &P = *X->producer();
    if (P.Domain.empty() && (P.OpType == "Shape" || P.OpType == "Size")) {
      const Value *In = P.input(0);
      bool Lost = !In || !In->Shp || !In->Shp->isDetermined();
      Memo[X] = Lost;
      return Lost;
    }
    Memo[X] = false; // (a graph has no cycles; this only guards)
    Stack.push_back({X, 0, false});
    return std::nullopt;
  };
  if (std::optional<bool> R = Push(V))
    return *R;
  bool Result = false;
  while (!Stack.empty()) {
    Frame &F = Stack.back();
    const Node &P = *F.V->producer();
    if (!F.Lost && F.Next < P.Inputs.size()) {
      const Value *In = P.Inputs[F.Next++];
      if (std::optional<bool> R = Push(In))
        Stack.back().Lost |= *R; // (Push may have grown the stack: re-fetch)
      continue;
    }
    Frame Done = F;
    Stack.pop_back();
    Memo[Done.V] = Done.Lost;
    if (Stack.empty())
      Result = Done.Lost;
    else
      Stack.back().Lost |= Done.Lost;
  }
  return Result;
}

/// The tensor element I of V comes from, through Cast, Identity and the
/// Concat of 1-D pieces that builds a shape vector ([1, 3] and a box's
/// [h, w] as a Resize's sizes): only that piece's origin decides whether
/// the element is a run-time value or a lost shape.
static const Value *elementSource(const Value *V, size_t I) {
  for (int Depth = 0; Depth < 32 && V && V->producer(); ++Depth) {
    const Node &P = *V->producer();
    if (!P.Domain.empty())
      break;
    if (P.OpType == "Cast" || P.OpType == "Identity") {
      V = P.input(0);
      continue;
    }
    if (P.OpType != "Concat")
      break;
    const Value *Next = nullptr;
    size_t Off = 0;
    for (const Value *In : P.Inputs) {
      if (!In || !In->Shp || In->Shp->rank() != 1 || !In->Shp->Dims[0].isKnown())
        return V;
      size_t L = size_t(In->Shp->Dims[0].extent());
      if (I < Off + L) {
        Next = In;
        I -= Off;
        break;
      }
      Off += L;
    }
    if (!Next)
      break;
    V = Next;
  }
  return V;
}

Dim runtimeExtent(Ctx &C, unsigned O, size_t Axis, unsigned From, size_t Elem, StringRef Op,
                  sym::ExprRef Bound) {
  const Value *V = C.in(From);
  if (fromLostShape(elementSource(V, Elem), C.Inf.LostShapes))
    return Dim{};
  std::string Desc =
      (Op + " extent from the run-time value '" + (V ? V->Name.str() : std::string("?")) + "'")
          .str();
  return dataSymbol(C, ("out" + llvm::Twine(O) + "_dim" + llvm::Twine(Axis)).str(), Desc, Bound);
}

bool shapedVals(Ctx &C, unsigned I, IVec &V, SmallVectorImpl<int64_t> &Dims) {
  if (!C.vals(I, V) || !knownDims(C.shape(I), Dims))
    return false;
  size_t N = 1;
  for (int64_t D : Dims)
    N *= size_t(D);
  return V.size() == N;
}

bool shapedInts(Ctx &C, unsigned I, SmallVectorImpl<int64_t> &V, SmallVectorImpl<int64_t> &Dims) {
  IVec X;
  if (!shapedVals(C, I, X, Dims))
    return false;
  V.clear();
  for (const IV &E : X) {
    if (!E.Known)
      return false;
    V.push_back(E.V);
  }
  return true;
}

bool valueDims(Ctx &C, unsigned O, SmallVectorImpl<int64_t> &Dims, size_t &N) {
  Value *Out = C.out(O);
  if (!Out || !knownDims(Out->Shp ? &*Out->Shp : nullptr, Dims))
    return false;
  N = 1;
  for (int64_t D : Dims)
    if (__builtin_mul_overflow(N, size_t(D), &N) || N > MaxValueElems)
      return false;
  return true;
}

void unravel(size_t K, ArrayRef<int64_t> Dims, SmallVectorImpl<int64_t> &Idx) {
  Idx.assign(Dims.size(), 0);
  for (size_t I = Dims.size(); I-- > 0;) {
    Idx[I] = int64_t(K % size_t(Dims[I]));
    K /= size_t(Dims[I]);
  }
}

size_t ravel(ArrayRef<int64_t> Idx, ArrayRef<int64_t> Dims) {
  size_t K = 0;
  for (size_t I = 0; I < Dims.size(); ++I)
    K = K * size_t(Dims[I]) + size_t(Idx[I]);
  return K;
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
  return A && !A->graphs().empty() ? A->graphs()[0].get() : nullptr;
}

} // namespace ridge::shapes
