//===- Count.cpp - Numbers and exact rational formulas for costs ----------===//
#include "analyzer/symbolic/Count.h"
#include "llvm/Support/Format.h"
#include <algorithm>
#include <cmath>
#include <numeric>

using namespace ridge;
using namespace ridge::sym;

namespace {

thread_local CountScope *Current = nullptr;
thread_local ExprRef PolySymbol = nullptr;
using Terms = std::vector<CountTerm>;

/// V as an exact fraction Num / Den, Den a power of two (every finite double
/// of moderate size is one: 5 n log2 n FLOPs of an FFT of a fixed n times a
/// symbolic count of transforms is exact); false when it is not finite or
/// its numerator would not fit int64.
bool rational(double V, int64_t &Num, int64_t &Den) {
  if (!std::isfinite(V))
    return false;
  Den = 1;
  for (int K = 0; K <= 61; ++K, Den *= 2) {
    double X = V * double(Den);
    if (std::fabs(X) >= 4.6e18)
      return false;
    if (X == std::floor(X)) {
      Num = int64_t(X);
      return true;
    }
  }
  return false;
}

/// Monomials in the fixed order of their factors (atom address, exponent).
int compareMono(llvm::ArrayRef<Factor> X, llvm::ArrayRef<Factor> Y) {
  for (size_t I = 0; I < X.size() && I < Y.size(); ++I) {
    if (X[I].Atom != Y[I].Atom)
      return std::less<ExprRef>()(X[I].Atom, Y[I].Atom) ? -1 : 1;
    if (X[I].Exp != Y[I].Exp)
      return X[I].Exp < Y[I].Exp ? -1 : 1;
  }
  if (X.size() != Y.size())
    return X.size() < Y.size() ? -1 : 1;
  return 0;
}

llvm::SmallVector<Factor, 2> mulMono(llvm::ArrayRef<Factor> X, llvm::ArrayRef<Factor> Y) {
  llvm::SmallVector<Factor, 2> Out;
  size_t I = 0, J = 0;
  std::less<ExprRef> Before;
  while (I < X.size() || J < Y.size()) {
    if (J == Y.size() || (I < X.size() && Before(X[I].Atom, Y[J].Atom)))
      Out.push_back(X[I++]);
    else if (I == X.size() || Before(Y[J].Atom, X[I].Atom))
      Out.push_back(Y[J++]);
    else {
      Out.push_back({X[I].Atom, X[I].Exp + Y[J].Exp});
      ++I;
      ++J;
    }
  }
  return Out;
}

/// T sorted, like monomials merged, zero terms dropped; false on overflow.
bool canonical(Terms &T) {
  std::sort(T.begin(), T.end(),
            [](const CountTerm &A, const CountTerm &B) { return compareMono(A.Mono, B.Mono) < 0; });
  Terms Out;
  Out.reserve(T.size());
  for (CountTerm &X : T) {
    if (!Out.empty() && compareMono(Out.back().Mono, X.Mono) == 0) {
      if (__builtin_add_overflow(Out.back().Coef, X.Coef, &Out.back().Coef))
        return false;
    } else {
      Out.push_back(std::move(X));
    }
  }
  Out.erase(std::remove_if(Out.begin(), Out.end(), [](const CountTerm &X) { return X.Coef == 0; }),
            Out.end());
  T = std::move(Out);
  return true;
}

/// The terms of an Expr (an atom is 1 * atom), factors in address order.
Terms termsOf(ExprRef E) {
  Terms T;
  if (E->isAtom()) {
    T.push_back({1, {{E, 1}}});
    return T;
  }
  for (const Term &X : E->terms()) {
    CountTerm C{X.Coef, X.Mono};
    std::sort(C.Mono.begin(), C.Mono.end(),
              [](const Factor &A, const Factor &B) { return std::less<ExprRef>()(A.Atom, B.Atom); });
    T.push_back(std::move(C));
  }
  std::sort(T.begin(), T.end(),
            [](const CountTerm &A, const CountTerm &B) { return compareMono(A.Mono, B.Mono) < 0; });
  return T;
}

/// The interned Expr of a term list (canonical order), nullptr on overflow.
ExprRef exprOf(const Terms &T) {
  ExprRef Sum = constant(0);
  for (const CountTerm &X : T) {
    ExprRef M = constant(X.Coef);
    for (const Factor &F : X.Mono)
      M = mul(M, pow(F.Atom, F.Exp));
    Sum = add(Sum, M);
  }
  return Sum;
}

bool scaleTerms(Terms &T, int64_t K) {
  for (CountTerm &X : T)
    if (__builtin_mul_overflow(X.Coef, K, &X.Coef))
      return false;
  return true;
}

} // namespace

Count Count::make(Terms T, int64_t Den) {
  EngineScope InEngine;
  Count C;
  if (Den < 1) {
    C.Unknown = true;
    return C;
  }
  // Lowest terms: the gcd of the coefficients and the denominator.
  int64_t G = Den;
  for (const CountTerm &X : T)
    G = std::gcd(G, X.Coef < 0 ? -X.Coef : X.Coef);
  if (G > 1) {
    for (CountTerm &X : T)
      X.Coef /= G;
    Den /= G;
  }
  if (T.empty())
    return Count(0);
  if (T.size() == 1 && T[0].Mono.empty())
    return Count(double(T[0].Coef) / double(Den));
  C.P = std::make_shared<const Terms>(std::move(T));
  C.Den = Den;
  return C;
}

Count Count::of(ExprRef E, int64_t Den) {
  EngineScope InEngine;
  if (!E || Den < 1) {
    Count C;
    C.Unknown = true;
    return C;
  }
  if (std::optional<int64_t> K = E->constant())
    return Count(double(*K) / double(Den));
  if (PolySymbol) {
    // In the planner's batch symbol alone: the fast form.
    std::array<double, 4> C{};
    bool Ok = true;
    auto Take = [&](int64_t Coef, llvm::ArrayRef<Factor> Mono) {
      if (Mono.empty())
        C[0] += double(Coef);
      else if (Mono.size() == 1 && Mono[0].Atom == PolySymbol && Mono[0].Exp <= 3)
        C[Mono[0].Exp] += double(Coef);
      else
        Ok = false;
    };
    if (E->isAtom())
      Take(1, Factor{E, 1});
    else
      for (const Term &T : E->terms())
        Take(T.Coef, T.Mono);
    if (Ok) {
      for (double &X : C)
        X /= double(Den);
      return univariate(PolySymbol, C[0], {C[1], C[2], C[3]});
    }
  }
  return make(termsOf(E), Den);
}

Count Count::univariate(ExprRef Sym, double C0, std::array<double, 3> C) {
  EngineScope InEngine;
  Count R(C0);
  if (C[0] == 0 && C[1] == 0 && C[2] == 0)
    return R;
  R.IsU = true;
  R.U = C;
  R.Sym = Sym;
  return R;
}

const std::shared_ptr<const Terms> &Count::termsPtr() const {
  EngineScope InEngine;
  if (IsU && !P) {
    // The general form of the univariate one: exact fractions over one
    // denominator (every double is one: a power of two).
    int64_t Dens[4], Nums[4], D = 1;
    double Cs[4] = {V, U[0], U[1], U[2]};
    bool Ok = true;
    for (int K = 0; K < 4; ++K)
      Ok &= rational(Cs[K], Nums[K], Dens[K]);
    for (int K = 0; K < 4 && Ok; ++K)
      D = std::max(D, Dens[K]); // powers of two: the largest is their lcm
    Terms T;
    for (int K = 0; K < 4 && Ok; ++K) {
      int64_t N;
      if (__builtin_mul_overflow(Nums[K], D / Dens[K], &N))
        Ok = false;
      else if (N)
        T.push_back({N, K ? llvm::SmallVector<Factor, 2>{{Sym, unsigned(K)}}
                          : llvm::SmallVector<Factor, 2>{}});
    }
    if (Ok) {
      Count G = make(std::move(T), D);
      P = G.P;
      Den = G.Den;
    }
  }
  return P;
}

Count Count::undecided(const llvm::Twine &Why) {
  EngineScope InEngine;
  if (Current)
    Current->note(Why);
  Count C;
  C.Unknown = true;
  return C;
}

ExprRef Count::numerator() const {
  EngineScope InEngine;
  return termsPtr() ? exprOf(*P) : nullptr;
}

bool Count::sameTerms(const Terms &A, const Terms &B) {
  EngineScope InEngine;
  if (A.size() != B.size())
    return false;
  for (size_t I = 0; I < A.size(); ++I)
    if (A[I].Coef != B[I].Coef || compareMono(A[I].Mono, B[I].Mono) != 0)
      return false;
  return true;
}

namespace {

/// The terms of a formula, or of a number with an exact fraction (one
/// constant term), without copying a formula's list.
struct View {
  const Terms *T = nullptr;
  Terms Own; ///< a number's one term
  int64_t Den = 1;
  bool ok(const Count &C) {
    if (C.isFormula()) {
      if (!C.termsPtr())
        return false;
      T = &*C.termsPtr();
      Den = C.denominator();
      return true;
    }
    int64_t Num;
    if (!rational(C.number(), Num, Den))
      return false;
    if (Num)
      Own.push_back({Num, {}});
    T = &Own;
    return true;
  }
};

} // namespace

std::optional<Count> Count::univariateOp(char Op, const Count &A, const Count &B) {
  EngineScope InEngine;
  ExprRef S = A.IsU ? A.Sym : B.Sym;
  if ((A.IsU && A.Sym != S) || (B.IsU && B.Sym != S))
    return std::nullopt;
  std::array<double, 4> X{A.V, A.U[0], A.U[1], A.U[2]}, Y{B.V, B.U[0], B.U[1], B.U[2]}, R{};
  auto Degree = [](const std::array<double, 4> &C) {
    int D = 3;
    while (D > 0 && C[D] == 0)
      --D;
    return D;
  };
  switch (Op) {
  case '+':
  case '-':
    for (int K = 0; K < 4; ++K)
      R[K] = Op == '+' ? X[K] + Y[K] : X[K] - Y[K];
    break;
  case '*': {
    if (!A.IsU || !B.IsU) { // by a number: each coefficient scaled
      const Count &F = A.IsU ? A : B;
      double K = A.IsU ? B.V : A.V;
      return univariate(S, F.V * K, {F.U[0] * K, F.U[1] * K, F.U[2] * K});
    }
    int DX = Degree(X), DY = Degree(Y);
    if (DX + DY > 3)
      return std::nullopt;
    for (int I = 0; I <= DX; ++I)
      for (int J = 0; J <= DY; ++J)
        R[I + J] += X[I] * Y[J];
    break;
  }
  default: {
    // Exact polynomial division: by a constant, or a divisor whose
    // quotient leaves no remainder.
    int DY = Degree(Y), DX = Degree(X);
    if (Y[DY] == 0 || DX < DY)
      return std::nullopt;
    std::array<double, 4> Rem = X;
    for (int K = DX - DY; K >= 0; --K) {
      R[K] = Rem[K + DY] / Y[DY];
      for (int J = 0; J <= DY; ++J)
        Rem[K + J] -= R[K] * Y[J];
    }
    for (int K = 0; K < DY; ++K)
      if (Rem[K] != 0)
        return std::nullopt;
    break;
  }
  }
  return univariate(S, R[0], {R[1], R[2], R[3]});
}

Count Count::combine(char Op, const Count &A, const Count &B) {
  EngineScope InEngine;
  if (A.Unknown || B.Unknown)
    return of(nullptr);
  if ((A.IsU || A.isNumber()) && (B.IsU || B.isNumber()))
    if (std::optional<Count> R = univariateOp(Op, A, B))
      return *R;
  View VA, VB;
  if (!VA.ok(A) || !VB.ok(B))
    return undecided("a number with no exact fraction meets a formula (" + A.str() + " " +
                     llvm::Twine(Op) + " " + B.str() + ")");
  const Terms &TA = *VA.T, &TB = *VB.T;
  int64_t DA = VA.Den, DB = VB.Den, Den;
  auto Overflow = [] { return undecided("a coefficient overflows int64"); };
  switch (Op) {
  case '+':
  case '-': {
    // Over the least common denominator (powers of two stay one): the two
    // sorted term lists merged, each scaled to it.
    int64_t G = std::gcd(DA, DB);
    if (__builtin_mul_overflow(DA / G, DB, &Den))
      return undecided("a denominator overflows int64");
    int64_t KA = Den / DA, KB = Op == '+' ? Den / DB : -(Den / DB);
    Terms Out;
    Out.reserve(TA.size() + TB.size());
    size_t I = 0, J = 0;
    while (I < TA.size() || J < TB.size()) {
      int C = I == TA.size() ? 1 : J == TB.size() ? -1 : compareMono(TA[I].Mono, TB[J].Mono);
      int64_t X = 0, Y = 0, Sum;
      if (C <= 0 && __builtin_mul_overflow(TA[I].Coef, KA, &X))
        return Overflow();
      if (C >= 0 && __builtin_mul_overflow(TB[J].Coef, KB, &Y))
        return Overflow();
      if (__builtin_add_overflow(X, Y, &Sum))
        return Overflow();
      if (Sum)
        Out.push_back({Sum, C <= 0 ? TA[I].Mono : TB[J].Mono});
      I += C <= 0;
      J += C >= 0;
    }
    return make(std::move(Out), Den);
  }
  case '*': {
    if (__builtin_mul_overflow(DA, DB, &Den))
      return undecided("a denominator overflows int64");
    Terms Out;
    Out.reserve(TA.size() * TB.size());
    for (const CountTerm &X : TA)
      for (const CountTerm &Y : TB) {
        int64_t C;
        if (__builtin_mul_overflow(X.Coef, Y.Coef, &C))
          return Overflow();
        Out.push_back({C, X.Mono.empty()   ? Y.Mono
                          : Y.Mono.empty() ? X.Mono
                                           : mulMono(X.Mono, Y.Mono)});
      }
    // A constant factor keeps the order; a product of formulas is sorted.
    bool Sorted = TA.size() == 1 && TA[0].Mono.empty();
    Sorted |= TB.size() == 1 && TB[0].Mono.empty();
    if (!Sorted && !canonical(Out))
      return Overflow();
    return make(std::move(Out), Den);
  }
  default: {
    // (TA / DA) / (TB / DB) = TA * DB / (TB * DA).
    if (TB.empty())
      return undecided("division by zero in " + A.str() + " / " + B.str());
    Terms Num(TA.begin(), TA.end());
    if (!scaleTerms(Num, DB))
      return Overflow();
    if (TB.size() == 1 && TB[0].Mono.empty()) {
      int64_t K = TB[0].Coef;
      if (K < 0) {
        if (!scaleTerms(Num, -1))
          return Overflow();
        K = -K;
      }
      if (__builtin_mul_overflow(DA, K, &Den))
        return undecided("a denominator overflows int64");
      return make(std::move(Num), Den);
    }
    // By a formula: exact polynomial division, on the interned forms.
    ExprRef Q = divideExactly(exprOf(Num), exprOf(TB));
    if (!Q)
      return undecided("'" + B.str() + "' does not divide '" + A.str() + "' exactly");
    return of(Q, DA);
  }
  }
}

std::optional<bool> Count::univariateOrder(const Count &D, bool Strict) {
  EngineScope InEngine;
  if (!D.IsU)
    return std::nullopt;
  // D(b) for b >= 1: with b = t + 1 (t >= 0), D's coefficients in t all
  // >= 0 make D >= D(1) >= 0 (> 0 when D(1) > 0); all <= 0 the reverse.
  double C0 = D.V, C1 = D.U[0], C2 = D.U[1], C3 = D.U[2];
  double T[4] = {C0 + C1 + C2 + C3, C1 + 2 * C2 + 3 * C3, C2 + 3 * C3, C3};
  bool NonNeg = T[0] >= 0 && T[1] >= 0 && T[2] >= 0 && T[3] >= 0;
  bool NonPos = T[0] <= 0 && T[1] <= 0 && T[2] <= 0 && T[3] <= 0;
  if (NonNeg && (!Strict || T[0] > 0))
    return true;
  if (NonPos && (Strict || T[0] < 0))
    return false;
  return std::nullopt;
}

std::optional<bool> Count::provablyAtMost(const Count &A, const Count &B) {
  EngineScope InEngine;
  if (!fastPair(A, B))
    return std::nullopt;
  Count D = B - A;
  if (D.isNumber())
    return D.V >= 0;
  return univariateOrder(D, /*Strict=*/false);
}

bool Count::compare(const Count &A, const Count &B, bool Strict) {
  EngineScope InEngine;
  if (A.Unknown || B.Unknown)
    return false;
  Count D = B - A;
  if (D.isNumber())
    return Strict ? D.V > 0 : D.V >= 0;
  if (D.Unknown)
    return false;
  if (std::optional<bool> R = univariateOrder(D, Strict))
    return *R;
  // D = E / Den with Den >= 1 and E integer-valued: A < B iff E >= 1, A <= B
  // iff E >= 0.
  ExprRef E = D.numerator();
  ExprRef Zero = constant(0), One = constant(1), MinusOne = constant(-1);
  if (E && provablyLE(Strict ? One : Zero, E))
    return true;
  if (E && provablyLE(E, Strict ? Zero : MinusOne))
    return false;
  undecided("whether " + A.str() + (Strict ? " < " : " <= ") + B.str() +
            " depends on the symbols' values");
  return false;
}

Count sym::minMax(bool IsMax, const Count &A, const Count &B) {
  EngineScope InEngine;
  if (A.isNumber() && B.isNumber())
    return IsMax ? std::max(A.number(), B.number()) : std::min(A.number(), B.number());
  if (A.isUnknown() || B.isUnknown())
    return Count::of(nullptr);
  // The univariate form's order, when its coefficients decide it (the
  // planner's broadcast batch dims: max(b, 1)).
  if (Count::provablyAtMost(A, B).value_or(false))
    return IsMax ? B : A;
  if (Count::provablyAtMost(B, A).value_or(false))
    return IsMax ? A : B;
  // Over a common denominator: max(EA/DA, EB/DB) = max(EA*DB, EB*DA) / (DA*DB).
  View VA, VB;
  int64_t Den;
  bool Ok = VA.ok(A) && VB.ok(B) && !__builtin_mul_overflow(VA.Den, VB.Den, &Den);
  Terms TA, TB;
  if (Ok) {
    TA.assign(VA.T->begin(), VA.T->end());
    TB.assign(VB.T->begin(), VB.T->end());
  }
  if (!Ok || !scaleTerms(TA, VB.Den) || !scaleTerms(TB, VA.Den))
    return Count::undecided(llvm::Twine(IsMax ? "max" : "min") + " of " + A.str() + " and " +
                            B.str() + " has no exact formula");
  ExprRef X = exprOf(TA), Y = exprOf(TB);
  return Count::of(IsMax ? sym::max(X, Y) : sym::min(X, Y), Den);
}

Count sym::max(const Count &A, const Count &B) { return minMax(true, A, B); }
Count sym::min(const Count &A, const Count &B) { return minMax(false, A, B); }

Count sym::floorDiv(const Count &A, int64_t B) {
  EngineScope InEngine;
  if (A.isNumber())
    return std::floor(A.number() / double(B));
  if (A.isUnknown() || B < 1)
    return Count::undecided("floor division by " + llvm::Twine(B));
  int64_t D;
  if (__builtin_mul_overflow(A.denominator(), B, &D))
    return Count::undecided("a denominator overflows int64");
  return Count::of(sym::floorDiv(A.numerator(), constant(D)));
}

Count sym::ceilDiv(const Count &A, int64_t B) { return -sym::floorDiv(-A, B); }

Count sym::log2(const Count &A) {
  if (A.isNumber())
    return std::log2(A.number());
  return Count::undecided("log2(" + A.str() + ") is not a polynomial in the symbols");
}

Count sym::ceilLog2(const Count &A) {
  if (A.isNumber())
    return A.number() <= 1 ? 0.0 : std::ceil(std::log2(A.number()));
  if (A.isUnknown() || A.denominator() != 1)
    return Count::undecided("ceil(log2(" + A.str() + ")) of a fraction");
  return Count::of(sym::ceilLog2(A.numerator()));
}

Count sym::pow(const Count &A, unsigned N) {
  EngineScope InEngine;
  Count R = 1;
  for (unsigned I = 0; I < N; ++I)
    R *= A;
  return R;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

std::string Count::str() const {
  EngineScope InEngine;
  if (Unknown)
    return "?";
  std::string S;
  llvm::raw_string_ostream OS(S);
  if (!isFormula()) {
    if (V == std::floor(V) && std::fabs(V) < 1e18)
      OS << int64_t(V);
    else
      OS << llvm::format("%.17g", V);
    return OS.str();
  }
  // In the canonical order of the interned form; per term its coefficient as
  // a reduced fraction c/d, then its monomial ("3/2*n", "1/4*n^2").
  ExprRef E = numerator();
  if (!E)
    return "?";
  llvm::ArrayRef<Term> Ts = E->terms();
  Term Single{1, {{E, 1}}};
  if (E->isAtom())
    Ts = llvm::ArrayRef<Term>(Single);
  for (size_t I = 0; I < Ts.size(); ++I) {
    const Term &T = Ts[I];
    int64_t C = T.Coef, D = Den;
    int64_t G = std::gcd(C < 0 ? -C : C, D);
    C /= G;
    D /= G;
    uint64_t Mag = C < 0 ? uint64_t(0) - uint64_t(C) : uint64_t(C);
    if (I)
      OS << (C < 0 ? " - " : " + ");
    else if (C < 0)
      OS << '-';
    bool One = Mag == 1 && D == 1 && !T.Mono.empty();
    if (!One) {
      OS << Mag;
      if (D != 1)
        OS << '/' << D;
    }
    for (size_t J = 0; J < T.Mono.size(); ++J) {
      if (J || !One)
        OS << '*';
      T.Mono[J].Atom->print(OS);
      if (T.Mono[J].Exp > 1)
        OS << '^' << T.Mono[J].Exp;
    }
  }
  return OS.str();
}

llvm::Expected<double> Count::evaluate(const Binding &Bind) const {
  EngineScope InEngine;
  if (Unknown)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "the count is unknown");
  if (!isFormula())
    return V;
  // The univariate form directly (no general terms made: the planner
  // evaluates every node's costs at micro-batch 1).
  if (IsU && !P)
    if (std::optional<int64_t> B = Bind(Sym->name())) {
      double X = double(*B);
      return V + X * (U[0] + X * (U[1] + X * U[2]));
    }
  if (!termsPtr())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "the count is unknown");
  // In double, term by term: a formula bound to a large batch may exceed
  // int64 (a step's FLOPs), its atoms (dims) do not.
  double Sum = 0;
  for (const CountTerm &T : *P) {
    double X = double(T.Coef);
    for (const Factor &F : T.Mono) {
      llvm::Expected<int64_t> A = sym::evaluate(F.Atom, Bind);
      if (!A)
        return A.takeError();
      X *= std::pow(double(*A), double(F.Exp));
    }
    Sum += X;
  }
  return Sum / double(Den);
}

Count Count::substitute(const Binding &Bind) const {
  EngineScope InEngine;
  if (!isFormula())
    return *this;
  return of(sym::substitute(numerator(), Bind), Den);
}

std::vector<std::string> Count::symbols() const {
  EngineScope InEngine;
  std::vector<std::string> Out;
  if (IsU)
    return {Sym->name().str()};
  if (!P)
    return Out;
  for (const CountTerm &T : *P)
    for (const Factor &F : T.Mono)
      for (std::string &S : sym::symbols(F.Atom))
        Out.push_back(std::move(S));
  std::sort(Out.begin(), Out.end());
  Out.erase(std::unique(Out.begin(), Out.end()), Out.end());
  return Out;
}

//===----------------------------------------------------------------------===//
// CountScope
//===----------------------------------------------------------------------===//

UnivariateScope::UnivariateScope(ExprRef Symbol) : Outer(PolySymbol) { PolySymbol = Symbol; }
UnivariateScope::~UnivariateScope() { PolySymbol = Outer; }
ExprRef UnivariateScope::current() { return PolySymbol; }

CountScope::CountScope() : Outer(Current) { Current = this; }
CountScope::~CountScope() { Current = Outer; }

void CountScope::note(const llvm::Twine &Why) {
  if (Reason.empty())
    Reason = Why.str();
}
