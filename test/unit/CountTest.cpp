//===- CountTest.cpp - Counts: numbers and exact formulas for costs -------===//
#include "analyzer/symbolic/Count.h"
#include "analyzer/Parallel.h"
#include "gtest/gtest.h"
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <vector>

using namespace ridge::sym;

namespace {

Count sym(llvm::StringRef Name) { return Count::of(symbol(Name)); }

Binding bind(std::map<std::string, int64_t> M) {
  return [M](llvm::StringRef N) -> std::optional<int64_t> {
    auto It = M.find(N.str());
    return It == M.end() ? std::nullopt : std::optional<int64_t>(It->second);
  };
}

double eval(const Count &C, std::map<std::string, int64_t> M) {
  auto V = C.evaluate(bind(M));
  if (!V) {
    ADD_FAILURE() << llvm::toString(V.takeError());
    return -999;
  }
  return *V;
}

TEST(CountTest, NumbersStayNumbers) {
  Count A = 3, B = 0.5;
  EXPECT_TRUE((A * B + 1).isNumber());
  EXPECT_EQ((A * B + 1).number(), 2.5);
  EXPECT_EQ((A / 4).number(), 0.75);
  EXPECT_TRUE(A > B);
  EXPECT_EQ(max(A, B).number(), 3);
}

// Canonical forms: like terms merge, products distribute, and a formula
// that cancels to a constant is a number again.
TEST(CountTest, CanonicalForms) {
  Count N = sym("n"), M = sym("m");
  EXPECT_EQ((N * M).str(), (M * N).str());
  EXPECT_EQ((N + M).str(), "m + n");
  EXPECT_EQ(((N + 1) * (N + 1)).str(), "n^2 + 2*n + 1");
  Count One = (N + 1) * (N + 1) - N * N - 2 * N;
  ASSERT_TRUE(One.isNumber());
  EXPECT_EQ(One.number(), 1);
  EXPECT_EQ((2 * N * 3 - N).str(), "5*n");
  EXPECT_TRUE(N * M == M * N);
  EXPECT_FALSE(N == M);
  EXPECT_FALSE(N == Count(1));
}

// Rational coefficients: an int4 tensor's bytes are half its elements.
TEST(CountTest, ExactFractions) {
  Count N = sym("n");
  Count Half = N * 0.5;
  EXPECT_EQ(Half.str(), "1/2*n");
  EXPECT_EQ((Half + Half).str(), "n");
  EXPECT_EQ((N / 3 + 1).str(), "1/3*n + 1");
  EXPECT_EQ(eval((3 * N + 1) / 2, {{"n", 5}}), 8);
}

// Division is exact: by a constant always, by a formula when it divides.
TEST(CountTest, ExactDivision) {
  Count B = sym("batch"), S = sym("seq"), H = sym("h");
  EXPECT_EQ((B * S * H * 4 / (S * H)).str(), "4*batch");
  CountScope Scope;
  Count Bad = (B + 1) / S;
  EXPECT_TRUE(Bad.isUnknown());
  ASSERT_TRUE(Scope.failed());
  EXPECT_NE(Scope.reason().find("does not divide"), std::string::npos) << Scope.reason();
  // Unknown is sticky: what is computed from it is unknown too.
  EXPECT_TRUE((Bad * 2 + S).isUnknown());
}

// Comparisons decide only what holds at every binding (each symbol >= 1).
TEST(CountTest, ComparisonsAreProvableOrUndecided) {
  Count N = sym("n"), M = sym("m");
  {
    CountScope Scope;
    EXPECT_TRUE(N < N + 1);
    EXPECT_TRUE(N * M >= N);
    EXPECT_FALSE(N + 1 <= N);
    EXPECT_TRUE(N * M > 0);
    EXPECT_FALSE(Scope.failed());
  }
  CountScope Scope;
  EXPECT_FALSE(N < M); // neither provable: no false equality or order
  EXPECT_TRUE(Scope.failed());
  // max/min stay exact as atoms when the order is not provable.
  EXPECT_EQ(max(N, N + 2).str(), "n + 2");
  EXPECT_EQ(eval(max(N, M) * 2, {{"n", 3}, {"m", 7}}), 14);
}

// Floor division keeps its atom; evaluation follows floor semantics.
TEST(CountTest, FloorAndEvaluation) {
  Count W = sym("W");
  Count Out = floorDiv(W - 3, 2) + 1; // a 3x3 stride-2 conv's output width
  EXPECT_EQ(eval(Out, {{"W", 224}}), 111);
  EXPECT_EQ(eval(Out, {{"W", 225}}), 112);
  EXPECT_EQ(eval(Out * Out * 64, {{"W", 7}}), 64 * 3 * 3);
  // Double evaluation: a step's FLOPs past int64.
  Count Big = sym("b") * 1e12;
  EXPECT_EQ(eval(Big, {{"b", 100000000}}), 1e20);
  auto Unbound = Out.evaluate(bind({}));
  ASSERT_FALSE(Unbound);
  EXPECT_NE(llvm::toString(Unbound.takeError()).find("'W' is not bound"), std::string::npos);
  EXPECT_TRUE(Out.substitute(bind({{"W", 9}})).isNumber());
  EXPECT_EQ(Out.symbols(), std::vector<std::string>{"W"});
}

// The planner's fast form: formulas in one symbol (degree <= 3) as four
// coefficients; the same values, text and decisions as the general form,
// which a second symbol falls back to.
TEST(CountTest, UnivariateFormMatchesTheGeneralForm) {
  Count General = (sym("b") * 3 + 1) * (sym("b") - 2) + sym("b") * 0.5;
  UnivariateScope InB(symbol("b"));
  Count B = sym("b");
  ASSERT_TRUE(B.univariate().has_value());
  Count Fast = (B * 3 + 1) * (B - 2) + B * 0.5;
  ASSERT_TRUE(Fast.univariate().has_value());
  EXPECT_EQ((*Fast.univariate())[2], 3);
  EXPECT_EQ(Fast.str(), General.str());
  EXPECT_EQ(eval(Fast, {{"b", 7}}), eval(General, {{"b", 7}}));
  EXPECT_TRUE(Fast == Fast * 1);
  EXPECT_EQ(((B * B - 1) / (B + 1)).str(), "b - 1"); // exact division
  {
    CountScope Scope;
    EXPECT_TRUE(B * B >= B);
    EXPECT_FALSE(B - 1 > B);
    EXPECT_FALSE(Scope.failed());
  }
  Count Mixed = B * sym("n") + 1; // another symbol: the general form
  EXPECT_FALSE(Mixed.univariate().has_value());
  EXPECT_EQ(Mixed.str(), "b*n + 1");
  EXPECT_EQ(Mixed.symbols(), (std::vector<std::string>{"b", "n"}));
  Count Quartic = B * B * B * B; // past degree 3: the general form
  EXPECT_FALSE(Quartic.univariate().has_value());
  EXPECT_EQ(Quartic.str(), "b^4");
  // min and max decided from the coefficients (b >= 1: max(b, 1) = b), the
  // same as the general form decides them; an order no binding fixes stays
  // an atom, as there.
  {
    CountScope Scope;
    EXPECT_EQ(max(B, Count(1)).str(), "b");
    EXPECT_EQ(min(B * 2, B + 1).str(), "b + 1");
    EXPECT_EQ(max(B * B, B * 3).str(), max(sym("b") * sym("b"), sym("b") * 3).str());
    EXPECT_FALSE(Scope.failed());
  }
  EXPECT_EQ(max(B * 2, Count(3)).str(), "max(2*b, 3)");
}

TEST(CountTest, UndecidedOutsideFormulas) {
  CountScope Scope;
  EXPECT_TRUE(log2(sym("n")).isUnknown());
  EXPECT_TRUE(Scope.failed());
  EXPECT_EQ(log2(Count(8)).number(), 3);
}

} // namespace

// onTwoThreads (analyzer/Parallel.h): every index once, on both threads
// when the count reaches the threshold (one below it), and the second
// thread's formulas in the caller's fast form. (The first thread waits in
// its first index for the second to take a block, so both surely work.)
TEST(CountTest, TwoThreadsVisitEveryIndexOnceInTheCallersForm) {
  UnivariateScope InB(symbol("b"));
  constexpr size_t N = 5000;
  bool Two = std::thread::hardware_concurrency() >= 2;
  std::vector<int> Seen(N);
  std::vector<uint8_t> Fast(N);
  std::array<size_t, 2> PerThread{};
  std::atomic<bool> SecondRan{false};
  ridge::onTwoThreads(N, N, [&](size_t I, unsigned Thread) {
    if (Thread == 1)
      SecondRan = true;
    else if (I == 0 && Two)
      for (int Wait = 0; !SecondRan && Wait < 5000; ++Wait)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++Seen[I];
    Fast[I] = (sym("b") * double(I + 1)).univariate().has_value();
    ++PerThread[Thread];
  });
  EXPECT_EQ(std::count(Seen.begin(), Seen.end(), 1), ptrdiff_t(N));
  EXPECT_EQ(std::count(Fast.begin(), Fast.end(), 1), ptrdiff_t(N));
  EXPECT_EQ(PerThread[0] + PerThread[1], N);
  if (Two)
    EXPECT_GT(PerThread[1], 0u);
  PerThread = {};
  ridge::onTwoThreads(N, N + 1, [&](size_t, unsigned Thread) { ++PerThread[Thread]; });
  EXPECT_EQ(PerThread[0], N);
  EXPECT_EQ(PerThread[1], 0u);
}
