//===- Count.h - A count that is a number or a formula in the symbols -*- C++ -*-===//
//
// FLOPs, bytes and element counts of a graph whose dims are symbolic are
// formulas in its symbols. A Count is either a number (a double: the fast
// path, every concrete graph takes only it) or E / Den: an Expr with integer
// coefficients over the model's atoms (symbols, floor, mod, min, max)
// divided by a positive integer (int4 tensors are half a byte an element).
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

#include "analyzer/symbolic/Expr.h"
#include "llvm/ADT/Twine.h"
#include <string>
#include <type_traits>
#include <vector>

namespace ridge::sym {

class Count {
public:
  Count() = default;
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  Count(T X) : V(double(X)) {}
  /// E / Den (Den >= 1); a constant is a number; nullptr is unknown.
  static Count of(ExprRef E, int64_t Den = 1);
  /// The unknown count, with the reason noted in the current CountScope.
  static Count undecided(const llvm::Twine &Why);

  bool isNumber() const { return !E && !Unknown; }
  bool isFormula() const { return E != nullptr; }
  bool isUnknown() const { return Unknown; }
  /// The number; only for isNumber().
  double number() const { return V; }
  /// The formula's numerator and denominator; only for isFormula().
  ExprRef numerator() const { return E; }
  int64_t denominator() const { return Den; }

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
    return combine('+', A, B);
  }
  friend Count operator-(const Count &A, const Count &B) {
    if (A.isNumber() && B.isNumber())
      return A.V - B.V;
    return combine('-', A, B);
  }
  friend Count operator*(const Count &A, const Count &B) {
    if (A.isNumber() && B.isNumber())
      return A.V * B.V;
    return combine('*', A, B);
  }
  /// Exact: a formula divided by a formula that does not divide it is
  /// undecided.
  friend Count operator/(const Count &A, const Count &B) {
    if (A.isNumber() && B.isNumber())
      return A.V / B.V;
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
    return A.E ? A.E == B.E && A.Den == B.Den : !B.E && A.V == B.V;
  }
  friend bool operator!=(const Count &A, const Count &B) { return !(A == B); }
  friend bool operator>=(const Count &A, const Count &B) { return B <= A; }

private:
  static Count combine(char Op, const Count &A, const Count &B);
  static bool compare(const Count &A, const Count &B, bool Strict);

  double V = 0;
  ExprRef E = nullptr;
  int64_t Den = 1;
  bool Unknown = false;
};

/// max and min: numbers directly; formulas exact (an atom when the order is
/// not provable).
Count max(const Count &A, const Count &B);
Count min(const Count &A, const Count &B);
/// floor(A / B) and ceil(A / B) for a positive integer B.
Count floorDiv(const Count &A, int64_t B);
Count ceilDiv(const Count &A, int64_t B);
/// log2(A) for a number; undecided for a formula.
Count log2(const Count &A);
/// A^N for a number or a formula and a non-negative integer N.
Count pow(const Count &A, unsigned N);

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
