//===- Count.h - A count that is a number or a formula in the symbols -*- C++ -*-===//
//
// FLOPs, bytes and element counts of a graph whose dims are symbolic are
// formulas in its symbols. A Count is either a number (a double: the fast
// path, every concrete graph takes only it) or P / Den: a polynomial with
// integer coefficients over the model's atoms (symbols, floor, mod, min, max:
// the dims' interned Expr atoms) divided by a positive integer (int4 tensors
// are half a byte an element). The polynomial is a plain sorted term list,
// not interned: a cost rule makes dozens of them per node, and only what is
// printed or compared is turned into an Expr.
// Arithmetic on formulas is exact: +, -, * always; / when the divisor
// divides (a constant always does: it joins Den); min and max become atoms
// when the order is not provable.
//
// What has no exact formula (a comparison whose outcome depends on the
// binding, a division that leaves a remainder, log2 of a symbol, a
// coefficient that overflows int64) gives an unknown Count, and the reason is
// kept by the innermost CountScope of the thread: a cost rule runs inside
// one, and a node whose rule met such an operation is left unmodeled until
// its symbols are bound, with that reason, never given a wrong formula.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_SYMBOLIC_COUNT_H
#define RIDGE_ANALYZER_SYMBOLIC_COUNT_H

#include "analyzer/symbolic/EngineProfile.h"
#include "analyzer/symbolic/Expr.h"
#include "llvm/ADT/Twine.h"
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace ridge::sym {

/// A term of a Count's polynomial: Coef times a product of atoms, factors
/// sorted by atom address (any fixed order: printing goes through Expr).
struct CountTerm {
  int64_t Coef;
  llvm::SmallVector<Factor, 2> Mono;
};

class Count {
public:
  Count() = default;
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Count(T X) : V(double(X)) {}
  /// E / Den (Den >= 1); a constant is a number; nullptr is unknown.
  static Count of(ExprRef E, int64_t Den = 1);
  /// The unknown count, with the reason noted in the current CountScope.
  static Count undecided(const llvm::Twine &Why);

  bool isNumber() const { return !P && !IsU && !Unknown; }
  bool isFormula() const { return P || IsU; }
  bool isUnknown() const { return Unknown; }
  /// The number; only for isNumber().
  double number() const { return V; }
  /// The formula's numerator (terms, or the interned Expr) and
  /// denominator; only for isFormula().
  llvm::ArrayRef<CountTerm> terms() const { return *termsPtr(); }
  const std::shared_ptr<const std::vector<CountTerm>> &termsPtr() const;
  ExprRef numerator() const;
  int64_t denominator() const {
    termsPtr();
    return Den;
  }
  /// A formula in UnivariateScope's symbol alone: its coefficients of b^0
  /// .. b^3 (the fast form the planner's costs take); none otherwise.
  std::optional<std::array<double, 4>> univariate() const {
    if (!IsU)
      return std::nullopt;
    return std::array<double, 4>{V, U[0], U[1], U[2]};
  }
  /// The univariate form's symbol (null for any other count).
  ExprRef univariateSymbol() const { return IsU ? Sym : nullptr; }
  /// The count of univariate() C in Symbol: what a Count in that form
  /// holds, made again from its coefficients (a number when C's b terms
  /// vanish).
  static Count univariateOf(ExprRef Symbol, const std::array<double, 4> &C) {
    return fastForm(Symbol, C[0], {C[1], C[2], C[3]});
  }

  /// "24*batch*seq + 128", "(3*n + 1)/2"; a number as %.17g would print it
  /// exactly (integers without a fraction); "?" when unknown.
  std::string str() const;
  /// The value with every free symbol bound; an error names the unbound
  /// symbol (or a division by zero in an atom).
  llvm::Expected<double> evaluate(const Binding &Bind) const;
  /// The count with the bound symbols replaced (a number once none is left).
  Count substitute(const Binding &Bind) const;
  /// The free symbols, sorted, each once.
  std::vector<std::string> symbols() const;

  Count &operator+=(const Count &O) { return *this = *this + O; }
  Count &operator-=(const Count &O) { return *this = *this - O; }
  Count &operator*=(const Count &O) { return *this = *this * O; }
  Count &operator/=(const Count &O) { return *this = *this / O; }

  friend Count operator+(const Count &A, const Count &B) {
    if (A.isNumber() && B.isNumber())
      return A.V + B.V;
    EngineScope InEngine;
    if (fastPair(A, B))
      return fastForm(A.IsU ? A.Sym : B.Sym, A.V + B.V,
                      {A.U[0] + B.U[0], A.U[1] + B.U[1], A.U[2] + B.U[2]});
    return combine('+', A, B);
  }
  friend Count operator-(const Count &A, const Count &B) {
    if (A.isNumber() && B.isNumber())
      return A.V - B.V;
    EngineScope InEngine;
    if (fastPair(A, B))
      return fastForm(A.IsU ? A.Sym : B.Sym, A.V - B.V,
                      {A.U[0] - B.U[0], A.U[1] - B.U[1], A.U[2] - B.U[2]});
    return combine('-', A, B);
  }
  friend Count operator*(const Count &A, const Count &B) {
    if (A.isNumber() && B.isNumber())
      return A.V * B.V;
    EngineScope InEngine;
    if (fastPair(A, B) && (!A.IsU || !B.IsU)) { // a polynomial scaled by a number
      const Count &F = A.IsU ? A : B;
      double K = A.IsU ? B.V : A.V;
      return fastForm(F.Sym, F.V * K, {F.U[0] * K, F.U[1] * K, F.U[2] * K});
    }
    return combine('*', A, B);
  }
  /// Exact: a formula divided by a formula that does not divide it is
  /// undecided.
  friend Count operator/(const Count &A, const Count &B) {
    if (A.isNumber() && B.isNumber())
      return A.V / B.V;
    EngineScope InEngine;
    return combine('/', A, B);
  }
  friend Count operator-(const Count &A) { return Count(0) - A; }

  /// Comparisons decide on numbers, and on formulas when the sign of the
  /// difference is provable for every binding (each symbol >= 1); otherwise
  /// undecided (false, and the reason noted).
  friend bool operator<(const Count &A, const Count &B) {
    return A.isNumber() && B.isNumber() ? A.V < B.V : compare(A, B, /*Strict=*/true);
  }
  friend bool operator<=(const Count &A, const Count &B) {
    return A.isNumber() && B.isNumber() ? A.V <= B.V : compare(A, B, /*Strict=*/false);
  }
  friend bool operator>(const Count &A, const Count &B) { return B < A; }
  /// Equality is exact (formulas are canonical): a formula never equals a
  /// number; an unknown count equals nothing.
  friend bool operator==(const Count &A, const Count &B) {
    if (A.Unknown || B.Unknown)
      return false;
    if (A.IsU && B.IsU)
      return A.V == B.V && A.U == B.U && A.Sym == B.Sym;
    if (!A.isFormula() || !B.isFormula())
      return !A.isFormula() && !B.isFormula() && A.V == B.V;
    return A.denominator() == B.denominator() && sameTerms(*A.termsPtr(), *B.termsPtr());
  }
  friend bool operator!=(const Count &A, const Count &B) { return !(A == B); }
  /// Whether A <= B for every binding, when numbers or the univariate form
  /// decide it from their coefficients alone (nothing is noted when they do
  /// not: none).
  static std::optional<bool> provablyAtMost(const Count &A, const Count &B);
  friend bool operator>=(const Count &A, const Count &B) { return B <= A; }

private:
  using Terms = std::vector<CountTerm>;
  /// A number or the univariate form (no general terms are needed).
  bool isFast() const { return !Unknown && (IsU || !P); }
  /// Both fast, and in one symbol when both are polynomials.
  static bool fastPair(const Count &A, const Count &B) {
    return A.isFast() && B.isFast() && (!A.IsU || !B.IsU || A.Sym == B.Sym);
  }
  /// C0 + C[0] b + C[1] b^2 + C[2] b^3 in symbol Sym; a number when the
  /// b terms vanish (as univariate() makes it, inline: the planner's costs
  /// take this path for nearly every operation).
  static Count fastForm(ExprRef Sym, double C0, std::array<double, 3> C) {
    Count R(C0);
    if (C[0] != 0 || C[1] != 0 || C[2] != 0) {
      R.IsU = true;
      R.U = C;
      R.Sym = Sym;
    }
    return R;
  }
  static Count combine(char Op, const Count &A, const Count &B);
  static bool compare(const Count &A, const Count &B, bool Strict);
  /// The order 0 < D (Strict) or 0 <= D of the univariate form D for every
  /// b >= 1, when its coefficients in b - 1 decide it.
  static std::optional<bool> univariateOrder(const Count &D, bool Strict);
  static bool sameTerms(const Terms &A, const Terms &B);
  /// T / Den in lowest terms (a constant is a number).
  static Count make(Terms T, int64_t Den);

  /// The univariate form's arithmetic (both operands numbers or in Sym).
  static std::optional<Count> univariateOp(char Op, const Count &A, const Count &B);
  static Count univariate(ExprRef Sym, double C0, std::array<double, 3> C);

  double V = 0; ///< a number; the univariate form's constant term
  /// The numerator's terms: a formula (made on demand for the univariate
  /// form).
  mutable std::shared_ptr<const Terms> P;
  mutable int64_t Den = 1;
  bool Unknown = false;
  bool IsU = false;             ///< the univariate form: V + U[0] b + U[1] b^2 + U[2] b^3
  std::array<double, 3> U{};
  ExprRef Sym = nullptr;        ///< its symbol b
};

/// max and min: numbers directly; formulas exact (an atom when the order is
/// not provable).
Count minMax(bool IsMax, const Count &A, const Count &B);
Count max(const Count &A, const Count &B);
Count min(const Count &A, const Count &B);
/// floor(A / B) and ceil(A / B) for a positive integer B.
Count floorDiv(const Count &A, int64_t B);
Count ceilDiv(const Count &A, int64_t B);
/// log2(A) for a number; undecided for a formula.
Count log2(const Count &A);
/// ceil(log2(A)) (0 where A <= 1): a number, or the atom of an integer
/// formula; undecided for a fraction.
Count ceilLog2(const Count &A);
/// A^N for a number or a formula and a non-negative integer N.
Count pow(const Count &A, unsigned N);

/// While one lives, formulas in Symbol alone of degree <= 3 take a fast
/// form on this thread (four coefficients, no allocation): the planner's
/// costs in its batch symbol. Exactness is a double's, as for numbers.
class UnivariateScope {
public:
  explicit UnivariateScope(ExprRef Symbol);
  ~UnivariateScope();
  /// The innermost scope's symbol on this thread (null outside any): what
  /// decides the form Count::of gives a formula.
  static ExprRef current();
  UnivariateScope(const UnivariateScope &) = delete;
  UnivariateScope &operator=(const UnivariateScope &) = delete;

private:
  ExprRef Outer;
};

/// Collects the reason of the first undecided operation on this thread
/// while it is the innermost scope.
class CountScope {
public:
  CountScope();
  ~CountScope();
  CountScope(const CountScope &) = delete;
  CountScope &operator=(const CountScope &) = delete;
  bool failed() const { return !Reason.empty(); }
  const std::string &reason() const { return Reason; }
  void note(const llvm::Twine &Why);

private:
  CountScope *Outer;
  std::string Reason;
};

} // namespace ridge::sym

#endif
