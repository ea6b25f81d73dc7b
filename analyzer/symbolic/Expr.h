//===- Expr.h - Symbolic integer expressions for dims and values -*- C++ -*-===//
//
// A dim or a small integer value that is not a number is an Expr: a
// canonical polynomial with int64 coefficients over atoms, where an atom is
// a named symbol or one of floor(a/b), mod(a,b), min(a,b), max(a,b) that
// could not be simplified away. Every Expr is interned for the whole run
// (thread-safe, never freed): two equal expressions are one pointer, so
// equality is a pointer compare and an Expr fits in a Dim's one word.
//
// Simplification is exact: it never assumes two different symbols are equal.
// It does assume what a symbolic dim is: an extent of at least 1 (a dim of
// 0, an empty tensor, is bound with --dim). That decides min(n, n + 3) = n,
// max(1, n) = n, min(n, n*m) = n, and nothing that would need more: min(a, b)
// of two symbols stays as is.
//
// Canonical form:
//  - a polynomial is a sum of terms c * m, c != 0, each monomial m a product
//    of atoms with exponents >= 1, atoms in canonical order; terms in
//    canonical order (higher degree first, then by their atoms);
//  - a polynomial of one term 1 * a^1 is the atom a itself;
//  - floor(P/c) and mod(P, c) with a constant c > 1 keep only what c does not
//    divide: floor((c Q + R)/c) = Q + floor(R/c) with every coefficient of R
//    in [0, c), mod(c Q + R, c) = mod(R, c); division by a monomial or a
//    constant multiple that divides exactly is exact;
//  - min and max order their operands canonically; decided when the
//    difference of the operands is provably of one sign (provablyLE).
//
// Overflow of an int64 coefficient makes the result unknown (nullptr), never
// wrong; evaluate() reports an overflow once symbols are bound.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_SYMBOLIC_EXPR_H
#define RIDGE_ANALYZER_SYMBOLIC_EXPR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ridge::sym {

class Expr;
/// An interned expression; nullptr is "unknown" (not representable).
using ExprRef = const Expr *;

/// An atom raised to a power >= 1.
struct Factor {
  ExprRef Atom;
  unsigned Exp;
  bool operator==(const Factor &O) const { return Atom == O.Atom && Exp == O.Exp; }
};

/// Coefficient times a product of factors (empty: the constant term).
struct Term {
  int64_t Coef;
  llvm::SmallVector<Factor, 2> Mono;
  bool operator==(const Term &O) const { return Coef == O.Coef && Mono == O.Mono; }
};

class Expr {
public:
  enum class Kind : uint8_t { Poly, Symbol, FloorDiv, Mod, Min, Max, CeilLog2 };

  Kind kind() const { return K; }
  bool isAtom() const { return K != Kind::Poly; }
  /// The polynomial's terms; an atom is its own single term 1 * atom.
  llvm::ArrayRef<Term> terms() const { return Terms; }
  /// Symbol: its name.
  llvm::StringRef name() const { return Name; }
  /// FloorDiv, Mod, Min, Max: the operands; CeilLog2: lhs() alone (rhs()
  /// is nullptr).
  ExprRef lhs() const { return A; }
  ExprRef rhs() const { return B; }

  /// The value when constant.
  std::optional<int64_t> constant() const;
  bool isConstant() const { return constant().has_value(); }
  /// Certainly >= 0 for every binding of the symbols (each >= 1), from the
  /// signs of its terms.
  bool nonNegative() const { return NonNeg; }
  /// The total degree (an atom counts 1).
  unsigned degree() const;

  /// Canonical text, e.g. "2*seq + 1", "floor((W + 1)/2)", "batch*heads".
  std::string str() const;
  void print(llvm::raw_ostream &OS) const;

private:
  friend class Pool;
  Expr() = default;
  Kind K = Kind::Poly;
  bool NonNeg = false;
  std::string Name;
  llvm::SmallVector<Term, 1> Terms;
  ExprRef A = nullptr, B = nullptr;
};

//===----------------------------------------------------------------------===//
// Building expressions (each returns the interned canonical form; nullptr
// when an operand is nullptr or a coefficient overflows)
//===----------------------------------------------------------------------===//

ExprRef constant(int64_t C);
/// The symbol named S (an integer >= 1); S must not be empty.
ExprRef symbol(llvm::StringRef S);
ExprRef add(ExprRef A, ExprRef B);
ExprRef sub(ExprRef A, ExprRef B);
ExprRef neg(ExprRef A);
ExprRef mul(ExprRef A, ExprRef B);
/// A^N for N >= 0.
ExprRef pow(ExprRef A, unsigned N);
/// floor(A / B); nullptr when B is the constant 0 or a negative constant
/// divides a symbolic A (ONNX's shape arithmetic never does).
ExprRef floorDiv(ExprRef A, ExprRef B);
/// A / B when B divides A exactly (floor(A / B) * B is A); nullptr otherwise.
ExprRef divideExactly(ExprRef A, ExprRef B);
/// ceil(A / B) = -floor(-A / B).
ExprRef ceilDiv(ExprRef A, ExprRef B);
/// A - B * floor(A / B): the sign of B (Python's %, ONNX Mod with fmod=0).
ExprRef mod(ExprRef A, ExprRef B);
ExprRef min(ExprRef A, ExprRef B);
ExprRef max(ExprRef A, ExprRef B);
/// ceil(log2(A)), 0 where A <= 1: the depth of a heap or a tree of A (TopK's
/// comparisons per element, a tree reduction's steps).
ExprRef ceilLog2(ExprRef A);
/// The same on a number.
int64_t ceilLog2Int(int64_t A);

/// A <= B for every binding (each symbol >= 1), when that can be shown:
/// B - A is a constant >= 0, or every term of it, once each symbol s is
/// written t + 1 with t >= 0, has a positive coefficient and non-negative
/// atoms.
bool provablyLE(ExprRef A, ExprRef B);

//===----------------------------------------------------------------------===//
// Reading expressions
//===----------------------------------------------------------------------===//

/// The free symbols of E, sorted by name, each once.
std::vector<std::string> symbols(ExprRef E);

/// A symbol's value, or none when unbound.
using Binding = std::function<std::optional<int64_t>(llvm::StringRef)>;

/// E's value with every symbol bound; an error names the unbound symbol, a
/// division by zero, or the int64 overflow and the expression.
llvm::Expected<int64_t> evaluate(ExprRef E, const Binding &Bind);

/// E with the bound symbols replaced by their values (the others stay).
ExprRef substitute(ExprRef E, const Binding &Bind);
/// A symbol's replacement, or nullptr to keep it.
using ExprBinding = std::function<ExprRef(llvm::StringRef)>;
/// E with symbols replaced by expressions.
ExprRef substitute(ExprRef E, const ExprBinding &Bind);

/// Parses the syntax str() prints: integers, symbol names (double-quoted
/// when not identifiers: "p2o.DynamicDimension.0"), + - *, ^ with an
/// integer exponent, parentheses, floor(a/b), ceil(a/b), mod(a,b), min(a,b),
/// max(a,b), ceil(log2(a)), and / for exact or floor division.
llvm::Expected<ExprRef> parse(llvm::StringRef Text);

/// Canonical order of atoms (by kind, then name or operands): what printing
/// and term order follow, independent of the order of interning.
int compareAtoms(ExprRef A, ExprRef B);

} // namespace ridge::sym

#endif
