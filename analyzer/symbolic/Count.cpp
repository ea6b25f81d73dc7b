//===- Count.cpp - Numbers and exact rational formulas for costs ----------===//
#include "analyzer/symbolic/Count.h"
#include "llvm/Support/Format.h"
#include <cmath>
#include <numeric>

using namespace ridge;
using namespace ridge::sym;

namespace {

thread_local CountScope *Current = nullptr;

/// V as an exact fraction P / Den, Den a power of two (every finite double
/// of moderate size is one); false when it is not finite or too large.
bool rational(double V, ExprRef &P, int64_t &Den) {
  if (!std::isfinite(V))
    return false;
  Den = 1;
  for (int K = 0; K <= 30; ++K, Den *= 2) {
    double X = V * double(Den);
    if (std::fabs(X) >= 4.6e18)
      return false;
    if (X == std::floor(X)) {
      P = constant(int64_t(X));
      return true;
    }
  }
  return false;
}

int64_t coefGcd(ExprRef E, int64_t G) {
  if (E->isAtom()) // 1 * atom
    return 1;
  for (const Term &T : E->terms())
    G = std::gcd(G, T.Coef < 0 ? -T.Coef : T.Coef);
  return G;
}

/// E / Den in lowest terms.
Count normalized(ExprRef E, int64_t Den) {
  if (!E)
    return Count::undecided("a coefficient overflows int64");
  if (Den != 1) {
    int64_t G = coefGcd(E, Den);
    if (G > 1) {
      E = divideExactly(E, constant(G));
      Den /= G;
    }
  }
  return Count::of(E, Den);
}

bool parts(const Count &C, ExprRef &E, int64_t &Den) {
  if (C.isFormula()) {
    E = C.numerator();
    Den = C.denominator();
    return true;
  }
  return rational(C.number(), E, Den);
}

ExprRef times(ExprRef E, int64_t K) { return mul(E, constant(K)); }

} // namespace

Count Count::of(ExprRef E, int64_t Den) {
  Count C;
  if (!E || Den < 1) {
    C.Unknown = true;
    return C;
  }
  if (std::optional<int64_t> K = E->constant()) {
    C.V = double(*K) / double(Den);
    return C;
  }
  C.E = E;
  C.Den = Den;
  return C;
}

Count Count::undecided(const llvm::Twine &Why) {
  if (Current)
    Current->note(Why);
  Count C;
  C.Unknown = true;
  return C;
}

Count Count::combine(char Op, const Count &A, const Count &B) {
  if (A.Unknown || B.Unknown)
    return of(nullptr);
  ExprRef EA, EB;
  int64_t DA, DB, Den;
  if (!parts(A, EA, DA) || !parts(B, EB, DB))
    return undecided("a number with no exact fraction meets a formula (" + A.str() + " " +
                     llvm::Twine(Op) + " " + B.str() + ")");
  switch (Op) {
  case '+':
  case '-':
    if (__builtin_mul_overflow(DA, DB, &Den))
      return undecided("a denominator overflows int64");
    return normalized(Op == '+' ? add(times(EA, DB), times(EB, DA))
                                : sub(times(EA, DB), times(EB, DA)),
                      Den);
  case '*':
    if (__builtin_mul_overflow(DA, DB, &Den))
      return undecided("a denominator overflows int64");
    return normalized(mul(EA, EB), Den);
  default: {
    // (EA / DA) / (EB / DB) = EA * DB / (EB * DA).
    ExprRef Num = times(EA, DB);
    if (std::optional<int64_t> K = EB->constant()) {
      if (*K == 0)
        return undecided("division by zero in " + A.str() + " / " + B.str());
      if (*K < 0) {
        Num = neg(Num);
        *K = -*K;
      }
      if (__builtin_mul_overflow(DA, *K, &Den))
        return undecided("a denominator overflows int64");
      return normalized(Num, Den);
    }
    ExprRef Q = Num ? divideExactly(Num, EB) : nullptr;
    if (!Q)
      return undecided("'" + B.str() + "' does not divide '" + A.str() + "' exactly");
    return normalized(Q, DA);
  }
  }
}

bool Count::compare(const Count &A, const Count &B, bool Strict) {
  if (A.Unknown || B.Unknown)
    return false;
  Count D = B - A;
  if (D.isNumber())
    return Strict ? D.V > 0 : D.V >= 0;
  if (D.Unknown)
    return false;
  // D = E / Den with Den >= 1 and E integer-valued: A < B iff E >= 1, A <= B
  // iff E >= 0.
  ExprRef Zero = constant(0), One = constant(1), MinusOne = constant(-1);
  if (provablyLE(Strict ? One : Zero, D.E))
    return true;
  if (provablyLE(D.E, Strict ? Zero : MinusOne))
    return false;
  undecided("whether " + A.str() + (Strict ? " < " : " <= ") + B.str() +
            " depends on the symbols' values");
  return false;
}

static Count minMax(bool IsMax, const Count &A, const Count &B) {
  if (A.isNumber() && B.isNumber())
    return IsMax ? std::max(A.number(), B.number()) : std::min(A.number(), B.number());
  if (A.isUnknown() || B.isUnknown())
    return Count::of(nullptr);
  // Over a common denominator: max(EA/DA, EB/DB) = max(EA*DB, EB*DA) / (DA*DB).
  ExprRef EA, EB;
  int64_t DA, DB, Den;
  if (!parts(A, EA, DA) || !parts(B, EB, DB) || __builtin_mul_overflow(DA, DB, &Den))
    return Count::undecided(llvm::Twine(IsMax ? "max" : "min") + " of " + A.str() + " and " +
                            B.str() + " has no exact formula");
  ExprRef X = times(EA, DB), Y = times(EB, DA);
  return normalized(IsMax ? sym::max(X, Y) : sym::min(X, Y), Den);
}

Count sym::max(const Count &A, const Count &B) { return minMax(true, A, B); }
Count sym::min(const Count &A, const Count &B) { return minMax(false, A, B); }

Count sym::floorDiv(const Count &A, int64_t B) {
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

Count sym::pow(const Count &A, unsigned N) {
  Count R = 1;
  for (unsigned I = 0; I < N; ++I)
    R *= A;
  return R;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

std::string Count::str() const {
  if (Unknown)
    return "?";
  std::string S;
  llvm::raw_string_ostream OS(S);
  if (!E) {
    if (V == std::floor(V) && std::fabs(V) < 1e18)
      OS << int64_t(V);
    else
      OS << llvm::format("%.17g", V);
    return OS.str();
  }
  // Per term: its coefficient as a reduced fraction c/d, then its monomial
  // ("3/2*n", "n^2/4" is printed "1/4*n^2").
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
  if (Unknown)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "the count is unknown");
  if (!E)
    return V;
  // In double, term by term: a formula bound to a large batch may exceed
  // int64 (a step's FLOPs), its atoms (dims) do not.
  double Sum = 0;
  auto Add = [&](const Term &T) -> llvm::Error {
    double P = double(T.Coef);
    for (const Factor &F : T.Mono) {
      llvm::Expected<int64_t> X = sym::evaluate(F.Atom, Bind);
      if (!X)
        return X.takeError();
      P *= std::pow(double(*X), double(F.Exp));
    }
    Sum += P;
    return llvm::Error::success();
  };
  if (E->isAtom()) {
    if (llvm::Error Err = Add(Term{1, {{E, 1}}}))
      return std::move(Err);
  } else {
    for (const Term &T : E->terms())
      if (llvm::Error Err = Add(T))
        return std::move(Err);
  }
  return Sum / double(Den);
}

Count Count::substitute(const Binding &Bind) const {
  if (!E)
    return *this;
  return normalized(sym::substitute(E, Bind), Den);
}

std::vector<std::string> Count::symbols() const { return E ? sym::symbols(E) : std::vector<std::string>(); }

//===----------------------------------------------------------------------===//
// CountScope
//===----------------------------------------------------------------------===//

CountScope::CountScope() : Outer(Current) { Current = this; }
CountScope::~CountScope() { Current = Outer; }

void CountScope::note(const llvm::Twine &Why) {
  if (Reason.empty())
    Reason = Why.str();
}
