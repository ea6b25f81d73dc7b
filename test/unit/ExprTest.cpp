//===- ExprTest.cpp - The symbolic expression engine ----------------------===//
#include "analyzer/symbolic/Expr.h"
#include "gtest/gtest.h"
#include <map>
#include <thread>

using namespace ridge::sym;

namespace {

ExprRef P(llvm::StringRef Text) {
  auto E = parse(Text);
  if (!E) {
    ADD_FAILURE() << llvm::toString(E.takeError());
    return nullptr;
  }
  return *E;
}

std::string S(ExprRef E) { return E ? E->str() : "<unknown>"; }

Binding bind(std::map<std::string, int64_t> M) {
  return [M](llvm::StringRef N) -> std::optional<int64_t> {
    auto It = M.find(N.str());
    return It == M.end() ? std::nullopt : std::optional<int64_t>(It->second);
  };
}

int64_t eval(ExprRef E, std::map<std::string, int64_t> M) {
  auto V = evaluate(E, bind(M));
  if (!V) {
    ADD_FAILURE() << llvm::toString(V.takeError());
    return -999;
  }
  return *V;
}

TEST(ExprTest, ConstantsAndSymbolsIntern) {
  EXPECT_EQ(constant(3), constant(3));
  EXPECT_NE(constant(3), constant(4));
  EXPECT_EQ(symbol("seq"), symbol("seq"));
  EXPECT_NE(symbol("seq"), symbol("batch"));
  EXPECT_EQ(constant(7)->constant(), std::optional<int64_t>(7));
  EXPECT_EQ(constant(0)->constant(), std::optional<int64_t>(0));
  EXPECT_FALSE(symbol("n")->isConstant());
}

TEST(ExprTest, CanonicalFormsCommuteAndDistribute) {
  ExprRef A = symbol("a"), B = symbol("b"), C = symbol("c");
  // Commutativity and associativity: one pointer.
  EXPECT_EQ(add(A, B), add(B, A));
  EXPECT_EQ(mul(A, B), mul(B, A));
  EXPECT_EQ(add(add(A, B), C), add(A, add(B, C)));
  EXPECT_EQ(mul(mul(A, B), C), mul(A, mul(B, C)));
  // Distribution and like terms.
  EXPECT_EQ(mul(A, add(B, C)), add(mul(A, B), mul(A, C)));
  EXPECT_EQ(add(A, A), mul(constant(2), A));
  EXPECT_EQ(sub(A, A), constant(0));
  EXPECT_EQ(S(mul(add(A, constant(1)), add(A, constant(-1)))), "a^2 - 1");
  EXPECT_EQ(S(pow(add(A, B), 2)), "a^2 + 2*a*b + b^2");
  // A lone atom is the atom itself.
  EXPECT_EQ(mul(constant(1), A), A);
  EXPECT_EQ(add(A, constant(0)), A);
  EXPECT_EQ(P("batch*heads"), P("heads * batch"));
  EXPECT_EQ(P("2*(seq + 1) - 2"), P("2*seq"));
}

TEST(ExprTest, PrintsHigherDegreeFirst) {
  EXPECT_EQ(S(P("4*b*s + 24*b*s*h^2*L")), "24*L*b*h^2*s + 4*b*s");
  EXPECT_EQ(S(P("3 - n")), "-n + 3");
  EXPECT_EQ(S(P("\"p2o.DynamicDimension.0\" * 2")), "2*\"p2o.DynamicDimension.0\"");
  EXPECT_EQ(S(P("unk__314")), "unk__314");
}

TEST(ExprTest, FloorDivisionIdentities) {
  ExprRef W = symbol("W");
  // Exact division.
  EXPECT_EQ(floorDiv(mul(constant(2), W), constant(2)), W);
  EXPECT_EQ(P("(2*seq)/2"), symbol("seq"));
  EXPECT_EQ(P("(batch*heads)/heads"), symbol("batch"));
  EXPECT_EQ(P("(4*n + 8)/4"), P("n + 2"));
  // floor((c Q + R)/c) = Q + floor(R/c), R's coefficients in [0, c).
  EXPECT_EQ(S(P("floor((2*n + 1)/2)")), "n");
  EXPECT_EQ(S(P("floor((W - 3)/2) + 1")), "floor((W + 1)/2) - 1");
  EXPECT_EQ(P("floor((W - 3)/2) + 1"), P("floor((W + 1)/2) - 1"));
  // The common factor of R and c cancels: floor(2n/4) = floor(n/2).
  EXPECT_EQ(P("floor(2*n/4)"), P("floor(n/2)"));
  EXPECT_EQ(S(P("seq/2")), "floor(seq/2)");
  // Nested floors are one: floor((floor((H + 1)/2) + 1)/2) = floor((H + 3)/4).
  ExprRef Nested = P("floor((floor((H + 1)/2) + 1)/2)");
  EXPECT_EQ(S(Nested), "floor((H + 3)/4)");
  for (int64_t X = 0; X < 40; ++X)
    EXPECT_EQ(eval(Nested, {{"H", X}}), ((X + 1) / 2 + 1) / 2) << X;
  // Negative divisors: floor(A / -c) = floor(-A / c).
  EXPECT_EQ(eval(P("floor(n/(-2))"), {{"n", 5}}), -3);
  // ceil(a/b) = -floor(-a/b), exact at every binding.
  ExprRef Ceil = ceilDiv(sub(W, constant(3)), constant(2));
  for (int64_t X = 3; X < 12; ++X)
    EXPECT_EQ(eval(Ceil, {{"W", X}}), (X - 3 + 1) / 2) << X;
  // divideExactly: the quotient only when nothing is left over.
  EXPECT_EQ(divideExactly(P("batch*seq*768"), P("seq*12")), P("64*batch"));
  EXPECT_EQ(divideExactly(P("seq"), constant(2)), nullptr);
  EXPECT_EQ(divideExactly(P("2*seq + 2"), constant(2)), P("seq + 1"));
  // By a polynomial of several terms: long division, exact or nothing
  // (attention over a KV cache: scores of [b*h, s, p + s] over softmax rows).
  EXPECT_EQ(divideExactly(P("32*b*p*s + 32*b*s^2"), P("p*s + s^2")), P("32*b"));
  EXPECT_EQ(divideExactly(P("x^2 - 1"), P("x + 1")), P("x - 1"));
  EXPECT_EQ(divideExactly(P("x^3 + y^3"), P("x + y")), P("x^2 - x*y + y^2"));
  EXPECT_EQ(divideExactly(P("x^2 + 1"), P("x + 1")), nullptr);  // remainder 2
  EXPECT_EQ(divideExactly(P("x^2 + x*y"), P("2*x + 2*y")), nullptr); // x/2: not integral
  EXPECT_EQ(divideExactly(P("x*y + y"), P("x + y")), nullptr);
  // Division by zero is unknown, not an answer.
  EXPECT_EQ(floorDiv(W, constant(0)), nullptr);
}

TEST(ExprTest, ModIdentities) {
  EXPECT_EQ(P("mod(2*n + 5, 2)"), constant(1));
  EXPECT_EQ(P("mod(n*k, k)"), constant(0));
  EXPECT_EQ(S(P("mod(n + 4, 4)")), "mod(n, 4)");
  EXPECT_EQ(S(P("mod(2*n, 4)")), "2*mod(n, 2)");
  // a = b*floor(a/b) + mod(a, b), at every binding.
  ExprRef A = P("3*n + 7"), B = constant(5);
  ExprRef Back = add(mul(B, floorDiv(A, B)), mod(A, B));
  for (int64_t X = 0; X < 20; ++X)
    EXPECT_EQ(eval(Back, {{"n", X}}), 3 * X + 7) << X;
  // A mod inside a mod of the same divisor: (7 - W mod 7) mod 7 = 6W mod 7.
  ExprRef Pad = P("mod(7 - mod(W, 7), 7)");
  EXPECT_EQ(S(Pad), "mod(6*W, 7)");
  for (int64_t X = 1; X < 30; ++X)
    EXPECT_EQ(eval(Pad, {{"W", X}}), (7 - X % 7) % 7) << X;
  EXPECT_EQ(eval(P("mod(-7, 3)"), {}), 2); // the sign of the divisor
  EXPECT_EQ(eval(P("mod(7, -3)"), {}), -2);
}

TEST(ExprTest, MinMaxDecideOnlyWhatIsProvable) {
  ExprRef N = symbol("n"), M = symbol("m");
  EXPECT_EQ(min(N, add(N, constant(3))), N);
  EXPECT_EQ(max(N, add(N, constant(3))), add(N, constant(3)));
  EXPECT_EQ(max(constant(1), N), N);    // a symbolic dim is >= 1
  EXPECT_EQ(min(constant(1), N), constant(1));
  EXPECT_EQ(min(N, mul(N, M)), N);      // n*m - n = n*m + m at n, m >= 1
  EXPECT_EQ(min(N, add(N, M)), N);      // n <= n + m
  EXPECT_EQ(max(sub(N, constant(1)), constant(0)), sub(N, constant(1)));
  EXPECT_NE(max(sub(N, constant(2)), constant(0)), sub(N, constant(2))); // n = 1
  // Two unrelated symbols stay unrelated, in canonical order.
  EXPECT_EQ(S(min(N, M)), "min(m, n)");
  EXPECT_EQ(min(N, M), min(M, N));
  EXPECT_EQ(eval(min(N, M), {{"n", 3}, {"m", 9}}), 3);
  EXPECT_EQ(eval(max(N, M), {{"n", 3}, {"m", 9}}), 9);
}

TEST(ExprTest, CeilLog2IsAnIntegerAtom) {
  ExprRef K = symbol("k");
  // Constants fold: ceil(log2(x)) is 0 at x <= 1, then the bits of x - 1.
  EXPECT_EQ(ceilLog2(constant(1)), constant(0));
  EXPECT_EQ(ceilLog2(constant(2)), constant(1));
  EXPECT_EQ(ceilLog2(constant(6)), constant(3));
  EXPECT_EQ(ceilLog2(constant(1024)), constant(10));
  EXPECT_EQ(ceilLog2(constant(1025)), constant(11));
  EXPECT_EQ(ceilLog2Int(0), 0);
  EXPECT_EQ(ceilLog2Int(INT64_MAX), 63);
  // A symbol's stays an atom, interned, non-negative, printed and parsed.
  ExprRef L = ceilLog2(add(K, constant(1)));
  EXPECT_EQ(L, ceilLog2(add(constant(1), K)));
  EXPECT_EQ(S(L), "ceil(log2(k + 1))");
  EXPECT_EQ(P("ceil(log2(k + 1))"), L);
  EXPECT_TRUE(L->nonNegative());
  EXPECT_NE(L, ceilLog2(K));
  EXPECT_EQ(symbols(mul(L, symbol("n"))), (std::vector<std::string>{"k", "n"}));
  // Evaluation after binding and substitution (k = 5: log2(6) = 2.58 -> 3).
  EXPECT_EQ(eval(mul(L, constant(100)), {{"k", 5}}), 300);
  EXPECT_EQ(substitute(L, bind({{"k", 7}})), constant(3));
  // "log2" alone is a name, not a function: only ceil(log2(.)) is an integer.
  EXPECT_EQ(P("log2"), symbol("log2"));
  EXPECT_FALSE(bool(parse("ceil(log2(k)")) ? true : false);
}

TEST(ExprTest, NoFalseEqualities) {
  ExprRef A = symbol("a"), B = symbol("b");
  EXPECT_NE(A, B);
  EXPECT_NE(add(A, constant(1)), add(B, constant(1)));
  EXPECT_NE(mul(A, A), mul(A, B));
  EXPECT_NE(P("floor(a/2)"), P("floor(b/2)"));
  EXPECT_NE(P("floor(a/2)*2"), A); // a may be odd
  EXPECT_NE(P("mod(a, 3)"), constant(0));
  EXPECT_NE(sub(A, B), constant(0));
  EXPECT_FALSE(provablyLE(A, B));
  EXPECT_FALSE(provablyLE(B, A));
  EXPECT_FALSE(provablyLE(sub(A, constant(2)), constant(0)));
  EXPECT_FALSE(provablyLE(A, constant(1)));
}

TEST(ExprTest, EvaluationAfterBinding) {
  ExprRef Conv = P("floor((H + 2*1 - 3)/2) + 1"); // 3x3, pad 1, stride 2
  EXPECT_EQ(eval(Conv, {{"H", 224}}), 112);
  EXPECT_EQ(eval(Conv, {{"H", 7}}), 4);
  ExprRef Gpt = P("24*batch*seq*h^2*L + 4*batch*seq^2*h*L");
  EXPECT_EQ(eval(Gpt, {{"batch", 8}, {"seq", 2048}, {"h", 2304}, {"L", 24}}),
            24LL * 8 * 2048 * 2304 * 2304 * 24 + 4LL * 8 * 2048 * 2048 * 2304 * 24);
  // substitute binds a subset and keeps the rest symbolic.
  ExprRef Part = substitute(Gpt, bind({{"h", 2304}, {"L", 24}}));
  EXPECT_EQ(symbols(Part), (std::vector<std::string>{"batch", "seq"}));
  EXPECT_EQ(eval(Part, {{"batch", 8}, {"seq", 2048}}),
            eval(Gpt, {{"batch", 8}, {"seq", 2048}, {"h", 2304}, {"L", 24}}));
  EXPECT_EQ(symbols(Gpt), (std::vector<std::string>{"L", "batch", "h", "seq"}));
}

TEST(ExprTest, ErrorsNameTheCause) {
  auto Unbound = evaluate(P("n + m"), bind({{"n", 1}}));
  ASSERT_FALSE(Unbound);
  EXPECT_EQ(llvm::toString(Unbound.takeError()), "symbol 'm' is not bound");
  auto Over = evaluate(P("n^3"), bind({{"n", int64_t(1) << 30}}));
  ASSERT_FALSE(Over);
  EXPECT_EQ(llvm::toString(Over.takeError()), "'n^3' overflows int64 at this binding");
  auto Zero = evaluate(P("floor(a/b)"), bind({{"a", 1}, {"b", 0}}));
  ASSERT_FALSE(Zero);
  EXPECT_EQ(llvm::toString(Zero.takeError()), "'floor(a/b)' divides by zero at this binding");
  // A coefficient that overflows makes the expression unknown, not wrapped.
  EXPECT_EQ(mul(constant(INT64_MAX), constant(2)), nullptr);
  EXPECT_EQ(mul(P("4611686018427387904*n"), constant(2)), nullptr);
  // Coefficients at the ends of int64 divide without overflowing
  // (A - C * floor(A / C) would): -2^63 * n over 3 and mod 3.
  ExprRef Min = mul(constant(INT64_MIN), symbol("n"));
  ExprRef Q = floorDiv(Min, constant(3)), R = mod(Min, constant(3));
  ASSERT_NE(Q, nullptr);
  ASSERT_NE(R, nullptr);
  EXPECT_EQ(eval(R, {{"n", 1}}), 1); // -2^63 = 3 * (-3074457345618258603) + 1
  EXPECT_EQ(eval(Q, {{"n", 1}}), -3074457345618258603LL);
  EXPECT_EQ(floorDiv(Min, constant(-1)), nullptr); // would be 2^63 * n
  auto Bad = parse("n +");
  ASSERT_FALSE(Bad);
  EXPECT_NE(llvm::toString(Bad.takeError()).find("cannot parse expression 'n +'"),
            std::string::npos);
  EXPECT_FALSE(bool(parse("99999999999999999999")) ? true : false);
}

TEST(ExprTest, UntrustedNamesAreQuotedAndEscaped) {
  ExprRef E = symbol("a\"b\\c.nnz");
  EXPECT_EQ(S(E), "\"a\\\"b\\\\c.nnz\"");
  EXPECT_EQ(P(S(E)), E);
  EXPECT_EQ(P(S(mul(E, constant(3)))), mul(E, constant(3)));
}

TEST(ExprTest, PrintParsesBack) {
  for (const char *T : {"24*L*b*h^2*s + 4*b*s", "floor((W + 1)/2) - 1", "2*mod(n, 2)",
                        "min(m, n) + max(a, 3*b)", "-n + 3", "floor(seq/2)",
                        "2*\"p2o.DynamicDimension.0\"", "floor((a*b + 1)/c)",
                        "3*ceil(log2(min(k, 300) + 1))"}) {
    ExprRef E = P(T);
    EXPECT_EQ(S(E), T);
    EXPECT_EQ(P(S(E)), E) << T;
  }
}

TEST(ExprTest, InterningIsThreadSafeAndOrderIndependent) {
  // Two threads build the same expressions in opposite orders: the same
  // pointers, and the printed form does not depend on who interned first.
  ExprRef Got[2];
  auto Build = [&](int I) {
    ExprRef X = symbol(I ? "zeta" : "alpha"), Y = symbol(I ? "alpha" : "zeta");
    Got[I] = add(mul(X, Y), add(X, Y));
  };
  std::thread T0(Build, 0), T1(Build, 1);
  T0.join();
  T1.join();
  EXPECT_EQ(Got[0], Got[1]);
  EXPECT_EQ(S(Got[0]), "alpha*zeta + alpha + zeta");
}

} // namespace
