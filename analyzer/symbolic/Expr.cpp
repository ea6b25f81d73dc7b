//===- Expr.cpp - Symbolic integer expressions for dims and values --------===//
#include "analyzer/symbolic/Expr.h"
#include "analyzer/symbolic/EngineProfile.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <unordered_map>

using namespace ridge;
using namespace ridge::sym;
using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::StringRef;

namespace ridge::sym {

bool profile::Enabled = false;

/// The run's one table of expressions: each distinct one allocated once and
/// never freed (reachable from this pool, so not a leak to LeakSanitizer).
class Pool {
public:
  static Pool &get() {
    static Pool *P = new Pool;
    return *P;
  }
  ExprRef intern(Expr &&E) {
    uint64_t H = hash(E);
    std::lock_guard<std::mutex> Hold(Lock);
    auto &Bucket = Table[H];
    for (const Expr *X : Bucket)
      if (same(*X, E))
        return X;
    E.NonNeg = nonNegative(E);
    Owned.push_back(std::unique_ptr<Expr>(new Expr(std::move(E))));
    Bucket.push_back(Owned.back().get());
    return Owned.back().get();
  }
  static Expr make(Expr::Kind K) {
    Expr E;
    E.K = K;
    return E;
  }
  static void setName(Expr &E, StringRef N) { E.Name = N.str(); }
  static void setTerms(Expr &E, SmallVector<Term, 1> &&T) { E.Terms = std::move(T); }
  static void setOperands(Expr &E, ExprRef A, ExprRef B) {
    E.A = A;
    E.B = B;
  }

private:
  static uint64_t mix(uint64_t H, uint64_t X) {
    H ^= X + 0x9e3779b97f4a7c15ULL + (H << 6) + (H >> 2);
    return H;
  }
  static uint64_t hash(const Expr &E) {
    uint64_t H = uint64_t(E.K);
    H = mix(H, std::hash<std::string>()(E.Name));
    for (const Term &T : E.Terms) {
      H = mix(H, uint64_t(T.Coef));
      for (const Factor &F : T.Mono)
        H = mix(mix(H, reinterpret_cast<uintptr_t>(F.Atom)), F.Exp);
    }
    H = mix(H, reinterpret_cast<uintptr_t>(E.A));
    return mix(H, reinterpret_cast<uintptr_t>(E.B));
  }
  static bool same(const Expr &X, const Expr &Y) {
    return X.K == Y.K && X.Name == Y.Name && X.Terms == Y.Terms && X.A == Y.A && X.B == Y.B;
  }
  static bool nonNegative(const Expr &E) {
    switch (E.K) {
    case Expr::Kind::Symbol:
      return true;
    case Expr::Kind::Poly:
      for (const Term &T : E.Terms) {
        if (T.Coef < 0)
          return false;
        for (const Factor &F : T.Mono)
          if (F.Exp % 2 && !F.Atom->nonNegative())
            return false;
      }
      return true;
    case Expr::Kind::FloorDiv:
      return E.A->nonNegative() && E.B->nonNegative();
    case Expr::Kind::Mod:
      return E.B->nonNegative();
    case Expr::Kind::Min:
      return E.A->nonNegative() && E.B->nonNegative();
    case Expr::Kind::Max:
      return E.A->nonNegative() || E.B->nonNegative();
    case Expr::Kind::CeilLog2:
      return true;
    }
    return false;
  }

  std::mutex Lock;
  std::unordered_map<uint64_t, SmallVector<const Expr *, 1>> Table;
  std::vector<std::unique_ptr<Expr>> Owned;
};

} // namespace ridge::sym

namespace {

using Terms = SmallVector<Term, 1>;

// Floor division and the divisor-signed remainder of int64s, B != 0 and not
// (INT64_MIN, -1) (callers check): truncating division adjusted, so that no
// intermediate overflows (A - B * floor(A / B) would near INT64_MIN).
int64_t floorDivInt(int64_t A, int64_t B) {
  int64_t Q = A / B;
  if ((A % B != 0) && ((A < 0) != (B < 0)))
    --Q;
  return Q;
}

int64_t modInt(int64_t A, int64_t B) {
  int64_t R = A % B;
  if (R != 0 && ((R < 0) != (B < 0)))
    R += B;
  return R;
}

/// The terms of E: its own, or 1 * E for an atom.
Terms termsOf(ExprRef E) {
  if (!E->isAtom())
    return Terms(E->terms().begin(), E->terms().end());
  Terms T;
  T.push_back({1, {{E, 1}}});
  return T;
}

unsigned monoDegree(ArrayRef<Factor> M) {
  unsigned D = 0;
  for (const Factor &F : M)
    D += F.Exp;
  return D;
}

/// Canonical order of monomials: higher degree first, then by their atoms
/// and exponents.
int compareMono(ArrayRef<Factor> X, ArrayRef<Factor> Y) {
  unsigned DX = monoDegree(X), DY = monoDegree(Y);
  if (DX != DY)
    return DX > DY ? -1 : 1;
  for (size_t I = 0; I < X.size() && I < Y.size(); ++I) {
    if (int C = compareAtoms(X[I].Atom, Y[I].Atom))
      return C;
    if (X[I].Exp != Y[I].Exp)
      return X[I].Exp > Y[I].Exp ? -1 : 1;
  }
  if (X.size() != Y.size())
    return X.size() < Y.size() ? -1 : 1;
  return 0;
}

int compareExpr(ExprRef X, ExprRef Y) {
  if (X == Y)
    return 0;
  if (X->isAtom() && Y->isAtom())
    return compareAtoms(X, Y);
  Terms TX = termsOf(X), TY = termsOf(Y);
  for (size_t I = 0; I < TX.size() && I < TY.size(); ++I) {
    if (int C = compareMono(TX[I].Mono, TY[I].Mono))
      return C;
    if (TX[I].Coef != TY[I].Coef)
      return TX[I].Coef < TY[I].Coef ? -1 : 1;
  }
  if (TX.size() != TY.size())
    return TX.size() < TY.size() ? -1 : 1;
  return 0;
}

/// X * Y of two canonical monomials.
SmallVector<Factor, 2> mulMono(ArrayRef<Factor> X, ArrayRef<Factor> Y) {
  SmallVector<Factor, 2> Out;
  size_t I = 0, J = 0;
  while (I < X.size() || J < Y.size()) {
    if (J == Y.size() || (I < X.size() && compareAtoms(X[I].Atom, Y[J].Atom) < 0)) {
      Out.push_back(X[I++]);
    } else if (I == X.size() || compareAtoms(Y[J].Atom, X[I].Atom) < 0) {
      Out.push_back(Y[J++]);
    } else {
      Out.push_back({X[I].Atom, X[I].Exp + Y[J].Exp});
      ++I;
      ++J;
    }
  }
  return Out;
}

/// X / Y when Y's monomial divides X's.
std::optional<SmallVector<Factor, 2>> divMono(ArrayRef<Factor> X, ArrayRef<Factor> Y) {
  SmallVector<Factor, 2> Out;
  size_t J = 0;
  for (const Factor &F : X) {
    if (J < Y.size() && Y[J].Atom == F.Atom) {
      if (Y[J].Exp > F.Exp)
        return std::nullopt;
      if (Y[J].Exp < F.Exp)
        Out.push_back({F.Atom, F.Exp - Y[J].Exp});
      ++J;
    } else {
      Out.push_back(F);
    }
  }
  if (J != Y.size())
    return std::nullopt;
  return Out;
}

/// The interned polynomial of T: sorted, like monomials merged, zero terms
/// dropped, a lone 1 * atom returned as the atom. nullptr on overflow.
ExprRef makePoly(Terms T) {
  llvm::sort(T, [](const Term &X, const Term &Y) { return compareMono(X.Mono, Y.Mono) < 0; });
  Terms Out;
  for (Term &X : T) {
    if (!Out.empty() && compareMono(Out.back().Mono, X.Mono) == 0) {
      if (__builtin_add_overflow(Out.back().Coef, X.Coef, &Out.back().Coef))
        return nullptr;
    } else {
      Out.push_back(std::move(X));
    }
  }
  Out.erase(std::remove_if(Out.begin(), Out.end(), [](const Term &X) { return X.Coef == 0; }),
            Out.end());
  if (Out.size() == 1 && Out[0].Coef == 1 && Out[0].Mono.size() == 1 && Out[0].Mono[0].Exp == 1)
    return Out[0].Mono[0].Atom;
  Expr E = Pool::make(Expr::Kind::Poly);
  Pool::setTerms(E, std::move(Out));
  return Pool::get().intern(std::move(E));
}

ExprRef makeAtom(Expr::Kind K, ExprRef A, ExprRef B) {
  Expr E = Pool::make(K);
  Pool::setOperands(E, A, B);
  return Pool::get().intern(std::move(E));
}

/// C * E; nullptr on overflow.
ExprRef scale(ExprRef E, int64_t C) {
  Terms T = termsOf(E);
  for (Term &X : T)
    if (__builtin_mul_overflow(X.Coef, C, &X.Coef))
      return nullptr;
  return makePoly(std::move(T));
}

/// The gcd of E's coefficients (0 for the zero polynomial).
int64_t coefGcd(ExprRef E) {
  uint64_t G = 0;
  for (const Term &T : termsOf(E)) // |INT64_MIN| as an unsigned
    G = std::gcd(G, T.Coef < 0 ? uint64_t(0) - uint64_t(T.Coef) : uint64_t(T.Coef));
  return G > uint64_t(INT64_MAX) ? 0 : int64_t(G);
}

/// The gcd g of R's coefficients and C > 1, with R replaced by R / g
/// (exact); 1 when they share no factor.
int64_t divideByCommonFactor(ExprRef &R, int64_t C) {
  int64_t G = std::gcd(coefGcd(R), C);
  if (G <= 1)
    return 1;
  Terms T = termsOf(R);
  for (Term &X : T)
    X.Coef /= G;
  R = makePoly(std::move(T));
  return G;
}

/// Splits A's terms over the constant C > 1: A = C * Q + R with every
/// coefficient of R in [0, C).
bool splitByConstant(ExprRef A, int64_t C, ExprRef &Q, ExprRef &R) {
  Terms TQ, TR;
  for (const Term &T : termsOf(A)) {
    int64_t Qc = floorDivInt(T.Coef, C), Rc = modInt(T.Coef, C);
    if (Qc)
      TQ.push_back({Qc, T.Mono});
    if (Rc)
      TR.push_back({Rc, T.Mono});
  }
  Q = makePoly(std::move(TQ));
  R = makePoly(std::move(TR));
  return Q && R;
}

/// Splits A over the single-term divisor B = b * m (b > 0): the terms that
/// b * m divides go to Q (divided), the others to R.
bool splitByMonomial(ExprRef A, const Term &B, ExprRef &Q, ExprRef &R) {
  Terms TQ, TR;
  for (const Term &T : termsOf(A)) {
    auto M = T.Coef % B.Coef == 0 ? divMono(T.Mono, B.Mono) : std::nullopt;
    if (M)
      TQ.push_back({T.Coef / B.Coef, *M});
    else
      TR.push_back(T);
  }
  Q = makePoly(std::move(TQ));
  R = makePoly(std::move(TR));
  return Q && R;
}

/// K when A = K * B for a constant K.
std::optional<int64_t> constantMultiple(ExprRef A, ExprRef B) {
  Terms TA = termsOf(A), TB = termsOf(B);
  if (TA.size() != TB.size() || TB.empty())
    return std::nullopt;
  if ((TA[0].Coef == INT64_MIN && TB[0].Coef == -1) || TA[0].Coef % TB[0].Coef)
    return std::nullopt;
  int64_t K = TA[0].Coef / TB[0].Coef;
  for (size_t I = 0; I < TA.size(); ++I) {
    int64_t P;
    if (compareMono(TA[I].Mono, TB[I].Mono) || __builtin_mul_overflow(TB[I].Coef, K, &P) ||
        P != TA[I].Coef)
      return std::nullopt;
  }
  return K;
}

/// R with each mod(X, C) of the same constant C replaced by X, when R has
/// one (mod(R, C) is then the same); nullptr otherwise.
ExprRef innerMod(ExprRef R, int64_t C) {
  bool Any = false;
  Terms Out;
  for (const Term &T : termsOf(R)) {
    if (T.Mono.size() == 1 && T.Mono[0].Exp == 1 && T.Mono[0].Atom->kind() == Expr::Kind::Mod &&
        T.Mono[0].Atom->rhs()->constant() == std::optional<int64_t>(C)) {
      Any = true;
      for (Term &X : termsOf(scale(T.Mono[0].Atom->lhs(), T.Coef)))
        Out.push_back(std::move(X));
    } else {
      Out.push_back(T);
    }
  }
  return Any ? makePoly(std::move(Out)) : nullptr;
}

/// floor(R / C) when R is k + floor(X/b) with constants k and b > 0: the
/// nested floor as one, floor((X + k b) / (b C)); nullptr otherwise.
ExprRef nestedFloor(ExprRef R, int64_t C) {
  int64_t K = 0;
  ExprRef Inner = nullptr;
  for (const Term &T : termsOf(R)) {
    if (T.Mono.empty()) {
      K = T.Coef;
    } else if (T.Coef == 1 && T.Mono.size() == 1 && T.Mono[0].Exp == 1 &&
               T.Mono[0].Atom->kind() == Expr::Kind::FloorDiv &&
               T.Mono[0].Atom->rhs()->isConstant() && !Inner) {
      Inner = T.Mono[0].Atom;
    } else {
      return nullptr;
    }
  }
  if (!Inner)
    return nullptr;
  int64_t B = *Inner->rhs()->constant(), KB, BC;
  if (B <= 0 || __builtin_mul_overflow(K, B, &KB) || __builtin_mul_overflow(B, C, &BC))
    return nullptr;
  return floorDiv(add(Inner->lhs(), constant(KB)), constant(BC));
}

} // namespace

//===----------------------------------------------------------------------===//
// Expr
//===----------------------------------------------------------------------===//

std::optional<int64_t> Expr::constant() const {
  if (K != Kind::Poly)
    return std::nullopt;
  if (Terms.empty())
    return 0;
  if (Terms.size() == 1 && Terms[0].Mono.empty())
    return Terms[0].Coef;
  return std::nullopt;
}

unsigned Expr::degree() const {
  if (isAtom())
    return 1;
  unsigned D = 0;
  for (const Term &T : Terms)
    D = std::max(D, monoDegree(T.Mono));
  return D;
}

static bool isIdentifier(StringRef S) {
  if (S.empty() || !(llvm::isAlpha(S[0]) || S[0] == '_'))
    return false;
  return llvm::all_of(S, [](char C) { return llvm::isAlnum(C) || C == '_'; });
}

/// Operand of floor(a/b): parenthesized unless an atom or a constant >= 0.
static void printOperand(ExprRef E, llvm::raw_ostream &OS) {
  std::optional<int64_t> C = E->constant();
  bool Bare = E->isAtom() || (C && *C >= 0) ||
              (E->terms().size() == 1 && E->terms()[0].Coef > 0);
  if (!Bare)
    OS << '(';
  E->print(OS);
  if (!Bare)
    OS << ')';
}

void Expr::print(llvm::raw_ostream &OS) const {
  EngineScope InEngine;
  switch (K) {
  case Kind::Symbol:
    if (isIdentifier(Name)) {
      OS << Name;
      return;
    }
    OS << '"';
    for (char C : Name) // a model's names are untrusted: quotes escaped
      OS << (C == '"' || C == '\\' ? "\\" : "") << C;
    OS << '"';
    return;
  case Kind::FloorDiv:
    OS << "floor(";
    printOperand(A, OS);
    OS << '/';
    printOperand(B, OS);
    OS << ')';
    return;
  case Kind::Mod:
  case Kind::Min:
  case Kind::Max:
    OS << (K == Kind::Mod ? "mod(" : K == Kind::Min ? "min(" : "max(");
    A->print(OS);
    OS << ", ";
    B->print(OS);
    OS << ')';
    return;
  case Kind::CeilLog2:
    OS << "ceil(log2(";
    A->print(OS);
    OS << "))";
    return;
  case Kind::Poly:
    break;
  }
  if (Terms.empty()) {
    OS << '0';
    return;
  }
  for (size_t I = 0; I < Terms.size(); ++I) {
    const Term &T = Terms[I];
    int64_t C = T.Coef;
    // |C| without overflow for INT64_MIN: printed from its unsigned value.
    uint64_t Mag = C < 0 ? uint64_t(0) - uint64_t(C) : uint64_t(C);
    if (I)
      OS << (C < 0 ? " - " : " + ");
    else if (C < 0)
      OS << '-';
    bool One = Mag == 1 && !T.Mono.empty();
    if (!One)
      OS << Mag;
    for (size_t J = 0; J < T.Mono.size(); ++J) {
      if (J || !One)
        OS << '*';
      const Factor &F = T.Mono[J];
      F.Atom->print(OS);
      if (F.Exp > 1)
        OS << '^' << F.Exp;
    }
  }
}

std::string Expr::str() const {
  EngineScope InEngine;
  std::string S;
  llvm::raw_string_ostream OS(S);
  print(OS);
  return OS.str();
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

int sym::compareAtoms(ExprRef A, ExprRef B) {
  EngineScope InEngine;
  if (A == B)
    return 0;
  if (A->kind() != B->kind())
    return A->kind() < B->kind() ? -1 : 1;
  if (A->kind() == Expr::Kind::Symbol)
    return A->name().compare(B->name());
  if (int C = compareExpr(A->lhs(), B->lhs()))
    return C;
  return A->rhs() ? compareExpr(A->rhs(), B->rhs()) : 0; // (kinds equal: both unary)
}

ExprRef sym::constant(int64_t C) {
  EngineScope InEngine;
  Terms T;
  if (C)
    T.push_back({C, {}});
  return makePoly(std::move(T));
}

ExprRef sym::symbol(StringRef S) {
  EngineScope InEngine;
  assert(!S.empty() && "a symbol has a name");
  Expr E = Pool::make(Expr::Kind::Symbol);
  Pool::setName(E, S);
  return Pool::get().intern(std::move(E));
}

ExprRef sym::add(ExprRef A, ExprRef B) {
  EngineScope InEngine;
  if (!A || !B)
    return nullptr;
  Terms T = termsOf(A);
  for (Term &X : termsOf(B))
    T.push_back(std::move(X));
  return makePoly(std::move(T));
}

ExprRef sym::neg(ExprRef A) {
  EngineScope InEngine;
  return A ? scale(A, -1) : nullptr;
}

ExprRef sym::sub(ExprRef A, ExprRef B) { return add(A, neg(B)); }

ExprRef sym::mul(ExprRef A, ExprRef B) {
  EngineScope InEngine;
  if (!A || !B)
    return nullptr;
  Terms T;
  for (const Term &X : termsOf(A))
    for (const Term &Y : termsOf(B)) {
      int64_t C;
      if (__builtin_mul_overflow(X.Coef, Y.Coef, &C))
        return nullptr;
      T.push_back({C, mulMono(X.Mono, Y.Mono)});
    }
  return makePoly(std::move(T));
}

ExprRef sym::pow(ExprRef A, unsigned N) {
  EngineScope InEngine;
  ExprRef R = constant(1);
  for (unsigned I = 0; I < N && R; ++I)
    R = mul(R, A);
  return R;
}

ExprRef sym::floorDiv(ExprRef A, ExprRef B) {
  EngineScope InEngine;
  if (!A || !B)
    return nullptr;
  std::optional<int64_t> CA = A->constant(), CB = B->constant();
  if (CB) {
    int64_t C = *CB;
    if (C == 0 || (CA && *CA == INT64_MIN && C == -1))
      return nullptr;
    if (CA)
      return constant(floorDivInt(*CA, C));
    if (C == 1)
      return A;
    if (C < 0) // floor(A / C) = floor(-A / -C)
      return C == INT64_MIN ? nullptr : floorDiv(neg(A), constant(-C));
    ExprRef Q, R;
    if (!splitByConstant(A, C, Q, R))
      return nullptr;
    if (R->isConstant()) // 0 <= R < C
      return Q;
    // floor((k + floor(X/b)) / C) = floor((X + k b) / (b C)) for b > 0.
    if (ExprRef Nested = nestedFloor(R, C))
      return add(Q, Nested);
    // floor(g R' / g C') = floor(R' / C'): R' is integer-valued.
    int64_t G = divideByCommonFactor(R, C);
    return add(Q, makeAtom(Expr::Kind::FloorDiv, R, constant(C / G)));
  }
  if (CA && *CA == 0)
    return A;
  if (std::optional<int64_t> K = constantMultiple(A, B))
    return constant(*K);
  Terms TB = termsOf(B);
  if (TB.size() == 1 && TB[0].Coef > 0) {
    // floor((B Q + R) / B) = Q + floor(R / B) for B > 0.
    ExprRef Q, R;
    if (!splitByMonomial(A, TB[0], Q, R))
      return nullptr;
    if (R->constant() == std::optional<int64_t>(0))
      return Q;
    return add(Q, makeAtom(Expr::Kind::FloorDiv, R, B));
  }
  return makeAtom(Expr::Kind::FloorDiv, A, B);
}

ExprRef sym::divideExactly(ExprRef A, ExprRef B) {
  EngineScope InEngine;
  ExprRef Q = floorDiv(A, B);
  if (Q && mul(Q, B) == A)
    return Q;
  if (!A || !B || B->isAtom() || B->terms().size() < 2)
    return nullptr;
  // By a polynomial of several terms ((p*s + s^2) divides 32*b*p*s + 32*b*s^2):
  // long division in the monomial order, each step dividing the remainder's
  // leading term by B's (A = Q B makes A's leading term Q's times B's); exact
  // when nothing remains. Atoms (floor, mod, ...) are treated as variables,
  // so a quotient is only ever one that multiplies back to A.
  constexpr int MaxSteps = 1024;
  const Term &LB = B->terms()[0];
  Terms Quot;
  ExprRef R = A;
  for (int Step = 0; !(R->constant() == std::optional<int64_t>(0)); ++Step) {
    if (Step == MaxSteps || R->isConstant())
      return nullptr;
    Terms TR = termsOf(R);
    std::optional<SmallVector<Factor, 2>> M = divMono(TR[0].Mono, LB.Mono);
    if (!M || TR[0].Coef % LB.Coef != 0)
      return nullptr;
    Terms One;
    One.push_back({TR[0].Coef / LB.Coef, *M});
    Quot.push_back(One[0]);
    R = sub(R, mul(makePoly(std::move(One)), B));
    if (!R)
      return nullptr; // overflow
  }
  Q = makePoly(std::move(Quot));
  return Q && mul(Q, B) == A ? Q : nullptr;
}

ExprRef sym::ceilDiv(ExprRef A, ExprRef B) { return neg(floorDiv(neg(A), B)); }

ExprRef sym::mod(ExprRef A, ExprRef B) {
  EngineScope InEngine;
  if (!A || !B)
    return nullptr;
  std::optional<int64_t> CA = A->constant(), CB = B->constant();
  if (CB) {
    int64_t C = *CB;
    if (C == 0 || (CA && *CA == INT64_MIN && C == -1))
      return nullptr;
    if (CA)
      return constant(modInt(*CA, C));
    if (C == 1 || C == -1)
      return constant(0);
    if (C < 0) // mod(A, C) = -mod(-A, -C)
      return C == INT64_MIN ? nullptr : neg(mod(neg(A), constant(-C)));
    ExprRef Q, R;
    if (!splitByConstant(A, C, Q, R))
      return nullptr;
    if (R->isConstant()) // 0 <= R < C
      return R;
    // mod(k + j mod(X, C), C) = mod(k + j X, C): the inner mod is X - C q.
    if (ExprRef Inner = innerMod(R, C))
      return mod(Inner, B);
    // mod(g R', g C') = g mod(R', C').
    int64_t G = divideByCommonFactor(R, C);
    return scale(makeAtom(Expr::Kind::Mod, R, constant(C / G)), G);
  }
  if (CA && *CA == 0)
    return A;
  if (constantMultiple(A, B))
    return constant(0);
  Terms TB = termsOf(B);
  if (TB.size() == 1 && TB[0].Coef > 0) {
    // mod(B Q + R, B) = mod(R, B).
    ExprRef Q, R;
    if (!splitByMonomial(A, TB[0], Q, R))
      return nullptr;
    if (R->constant() == std::optional<int64_t>(0))
      return R;
    return makeAtom(Expr::Kind::Mod, R, B);
  }
  return makeAtom(Expr::Kind::Mod, A, B);
}

bool sym::provablyLE(ExprRef A, ExprRef B) {
  EngineScope InEngine;
  ExprRef D = sub(B, A);
  if (!D)
    return false;
  if (std::optional<int64_t> C = D->constant())
    return *C >= 0;
  if (D->nonNegative())
    return true;
  // Every symbol is >= 1: with s = t + 1 (t >= 0), B - A >= 0 when its
  // terms in t are ((n + 1) - 1 = n, n*m - n = n*m + m at n, m >= 1).
  ExprRef Shifted = substitute(D, [](StringRef Name) { return add(symbol(Name), constant(1)); });
  if (!Shifted)
    return false;
  if (std::optional<int64_t> C = Shifted->constant())
    return *C >= 0;
  return Shifted->nonNegative();
}

static ExprRef minMax(Expr::Kind K, ExprRef A, ExprRef B) {
  if (!A || !B)
    return nullptr;
  if (A == B)
    return A;
  bool IsMin = K == Expr::Kind::Min;
  if (provablyLE(A, B))
    return IsMin ? A : B;
  if (provablyLE(B, A))
    return IsMin ? B : A;
  if (compareExpr(B, A) < 0)
    std::swap(A, B);
  return makeAtom(K, A, B);
}

ExprRef sym::min(ExprRef A, ExprRef B) { return minMax(Expr::Kind::Min, A, B); }
ExprRef sym::max(ExprRef A, ExprRef B) { return minMax(Expr::Kind::Max, A, B); }

int64_t sym::ceilLog2Int(int64_t A) {
  return A <= 1 ? 0 : 64 - __builtin_clzll(uint64_t(A - 1));
}

ExprRef sym::ceilLog2(ExprRef A) {
  if (!A)
    return nullptr;
  if (std::optional<int64_t> C = A->constant())
    return constant(ceilLog2Int(*C));
  return makeAtom(Expr::Kind::CeilLog2, A, nullptr);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

static void collectSymbols(ExprRef E, std::vector<std::string> &Out) {
  switch (E->kind()) {
  case Expr::Kind::Symbol:
    Out.push_back(E->name().str());
    return;
  case Expr::Kind::Poly:
    for (const Term &T : E->terms())
      for (const Factor &F : T.Mono)
        collectSymbols(F.Atom, Out);
    return;
  default:
    collectSymbols(E->lhs(), Out);
    if (E->rhs())
      collectSymbols(E->rhs(), Out);
  }
}

std::vector<std::string> sym::symbols(ExprRef E) {
  EngineScope InEngine;
  std::vector<std::string> Out;
  if (E)
    collectSymbols(E, Out);
  llvm::sort(Out);
  Out.erase(std::unique(Out.begin(), Out.end()), Out.end());
  return Out;
}

namespace {

/// Evaluates with every symbol bound; the first failure is kept.
struct Evaluator {
  const Binding &Bind;
  ExprRef Root;
  std::string Error;

  bool fail(const llvm::Twine &Why) {
    if (Error.empty())
      Error = Why.str();
    return false;
  }
  bool overflow() { return fail("'" + Root->str() + "' overflows int64 at this binding"); }

  bool eval(ExprRef E, int64_t &Out) {
    switch (E->kind()) {
    case Expr::Kind::Symbol: {
      std::optional<int64_t> V = Bind(E->name());
      if (!V)
        return fail("symbol '" + E->name() + "' is not bound");
      Out = *V;
      return true;
    }
    case Expr::Kind::Poly:
      return evalPoly(E, Out);
    default:
      break;
    }
    int64_t A, B = 0;
    if (!eval(E->lhs(), A) || (E->rhs() && !eval(E->rhs(), B)))
      return false;
    switch (E->kind()) {
    case Expr::Kind::FloorDiv:
    case Expr::Kind::Mod:
      if (B == 0)
        return fail("'" + E->str() + "' divides by zero at this binding");
      if (A == INT64_MIN && B == -1)
        return overflow();
      Out = E->kind() == Expr::Kind::FloorDiv ? floorDivInt(A, B) : modInt(A, B);
      return true;
    case Expr::Kind::Min:
      Out = std::min(A, B);
      return true;
    case Expr::Kind::CeilLog2:
      Out = ceilLog2Int(A);
      return true;
    default:
      Out = std::max(A, B);
      return true;
    }
  }

  bool evalPoly(ExprRef E, int64_t &Out) {
    int64_t Sum = 0;
    for (const Term &T : E->terms()) {
      int64_t P = T.Coef;
      for (const Factor &F : T.Mono) {
        int64_t X;
        if (!eval(F.Atom, X))
          return false;
        for (unsigned I = 0; I < F.Exp; ++I)
          if (__builtin_mul_overflow(P, X, &P))
            return overflow();
      }
      if (__builtin_add_overflow(Sum, P, &Sum))
        return overflow();
    }
    Out = Sum;
    return true;
  }
};

} // namespace

llvm::Expected<int64_t> sym::evaluate(ExprRef E, const Binding &Bind) {
  EngineScope InEngine;
  if (!E)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "the expression is unknown");
  Evaluator Ev{Bind, E, {}};
  int64_t V;
  if (!Ev.eval(E, V))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), Ev.Error);
  return V;
}

ExprRef sym::substitute(ExprRef E, const Binding &Bind) {
  EngineScope InEngine;
  return substitute(E, [&](StringRef Name) -> ExprRef {
    std::optional<int64_t> V = Bind(Name);
    return V ? constant(*V) : nullptr;
  });
}

ExprRef sym::substitute(ExprRef E, const ExprBinding &Bind) {
  EngineScope InEngine;
  if (!E)
    return nullptr;
  switch (E->kind()) {
  case Expr::Kind::Symbol: {
    ExprRef V = Bind(E->name());
    return V ? V : E;
  }
  case Expr::Kind::Poly: {
    ExprRef Sum = constant(0);
    for (const Term &T : E->terms()) {
      ExprRef P = constant(T.Coef);
      for (const Factor &F : T.Mono)
        P = mul(P, pow(substitute(F.Atom, Bind), F.Exp));
      Sum = add(Sum, P);
    }
    return Sum;
  }
  case Expr::Kind::FloorDiv:
    return floorDiv(substitute(E->lhs(), Bind), substitute(E->rhs(), Bind));
  case Expr::Kind::Mod:
    return mod(substitute(E->lhs(), Bind), substitute(E->rhs(), Bind));
  case Expr::Kind::Min:
    return min(substitute(E->lhs(), Bind), substitute(E->rhs(), Bind));
  case Expr::Kind::Max:
    return max(substitute(E->lhs(), Bind), substitute(E->rhs(), Bind));
  case Expr::Kind::CeilLog2:
    return ceilLog2(substitute(E->lhs(), Bind));
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

struct Token {
  enum Kind { Int, Name, Punct, End } K;
  std::string Text;
  int64_t Value = 0;
};

class Parser {
public:
  explicit Parser(StringRef Text) : Src(Text) {}

  llvm::Expected<ExprRef> run() {
    if (!lex())
      return error();
    ExprRef E = sum();
    if (!E && Why.empty())
      Why = "a coefficient overflows int64, or a division by zero";
    if (E && peek().K != Token::End)
      Why = "unexpected '" + peek().Text + "'";
    if (!Why.empty())
      return error();
    return E;
  }

private:
  llvm::Error error() {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot parse expression '" + Src.str() + "': " + Why);
  }
  bool lex() {
    size_t I = 0;
    while (I < Src.size()) {
      char C = Src[I];
      if (C == ' ') {
        ++I;
      } else if (llvm::isDigit(C)) {
        size_t J = I;
        while (J < Src.size() && llvm::isDigit(Src[J]))
          ++J;
        Token T{Token::Int, Src.substr(I, J - I).str()};
        if (StringRef(T.Text).getAsInteger(10, T.Value))
          return (Why = "integer '" + T.Text + "' overflows int64", false);
        Toks.push_back(T);
        I = J;
      } else if (llvm::isAlpha(C) || C == '_') {
        size_t J = I;
        while (J < Src.size() && (llvm::isAlnum(Src[J]) || Src[J] == '_'))
          ++J;
        Toks.push_back({Token::Name, Src.substr(I, J - I).str()});
        I = J;
      } else if (C == '"') {
        std::string Name;
        size_t J = I + 1;
        for (; J < Src.size() && Src[J] != '"'; ++J) {
          if (Src[J] == '\\' && J + 1 < Src.size())
            ++J;
          Name += Src[J];
        }
        if (J == Src.size() || Name.empty())
          return (Why = "unterminated or empty quoted name", false);
        Toks.push_back({Token::Name, Name});
        Toks.back().Value = 1; // quoted: never a function name
        I = J + 1;
      } else if (StringRef("+-*/^(),").contains(C)) {
        Toks.push_back({Token::Punct, std::string(1, C)});
        ++I;
      } else {
        return (Why = std::string("unexpected character '") + C + "'", false);
      }
    }
    Toks.push_back({Token::End, "end of input"});
    return true;
  }
  const Token &peek() const { return Toks[Pos]; }
  bool accept(StringRef P) {
    if (peek().K == Token::Punct && peek().Text == P) {
      ++Pos;
      return true;
    }
    return false;
  }
  bool expect(StringRef P) {
    if (accept(P))
      return true;
    if (Why.empty())
      Why = "expected '" + P.str() + "' before '" + peek().Text + "'";
    return false;
  }
  using BinFn = ExprRef (*)(ExprRef, ExprRef);
  /// Next (Op Next)*, left-associative, for the operators given (OpB may be
  /// empty).
  ExprRef chain(ExprRef (Parser::*Next)(), StringRef OpA, BinFn FA, StringRef OpB, BinFn FB) {
    ExprRef E = (this->*Next)();
    while (E) {
      if (accept(OpA))
        E = FA(E, (this->*Next)());
      else if (!OpB.empty() && accept(OpB))
        E = FB(E, (this->*Next)());
      else
        break;
    }
    return E;
  }
  ExprRef sum() { return chain(&Parser::product, "+", add, "-", sub); }
  ExprRef product() { return chain(&Parser::unary, "*", mul, "/", floorDiv); }
  ExprRef unary() {
    if (accept("-"))
      return neg(unary());
    ExprRef E = primary();
    if (E && accept("^")) {
      if (peek().K != Token::Int)
        return (Why = "'^' takes an integer exponent", nullptr);
      int64_t N = Toks[Pos++].Value;
      if (N > 64)
        return (Why = "exponent above 64", nullptr);
      E = pow(E, unsigned(N));
    }
    return E;
  }
  ExprRef primary() {
    const Token &T = peek();
    if (T.K == Token::Int) {
      ++Pos;
      return constant(T.Value);
    }
    if (accept("(")) {
      ExprRef E = sum();
      return E && expect(")") ? E : nullptr;
    }
    if (T.K != Token::Name) {
      if (Why.empty())
        Why = "unexpected '" + T.Text + "'";
      return nullptr;
    }
    ++Pos;
    bool Quoted = T.Value == 1;
    StringRef F = T.Text;
    if (Quoted || !(F == "floor" || F == "ceil" || F == "mod" || F == "min" || F == "max") ||
        !(peek().K == Token::Punct && peek().Text == "("))
      return symbol(F);
    ++Pos; // '('
    if (F == "ceil" && peek().K == Token::Name && peek().Value != 1 && peek().Text == "log2" &&
        Toks[Pos + 1].K == Token::Punct && Toks[Pos + 1].Text == "(") {
      Pos += 2; // log2 (
      ExprRef A = sum();
      return A && expect(")") && expect(")") ? ceilLog2(A) : nullptr;
    }
    if (F == "floor" || F == "ceil") {
      ExprRef A = product1();
      if (!A || !expect("/"))
        return nullptr;
      ExprRef B = unary();
      if (!B || !expect(")"))
        return nullptr;
      return F == "floor" ? floorDiv(A, B) : ceilDiv(A, B);
    }
    ExprRef A = sum();
    if (!A || !expect(","))
      return nullptr;
    ExprRef B = sum();
    if (!B || !expect(")"))
      return nullptr;
    return F == "mod" ? mod(A, B) : F == "min" ? min(A, B) : max(A, B);
  }
  /// floor's and ceil's numerator: a product without a top-level '/'.
  ExprRef product1() { return chain(&Parser::unary, "*", mul, "", nullptr); }

  StringRef Src;
  std::vector<Token> Toks;
  size_t Pos = 0;
  std::string Why;
};

} // namespace

llvm::Expected<ExprRef> sym::parse(StringRef Text) {
  EngineScope InEngine;
  return Parser(Text).run();
}
