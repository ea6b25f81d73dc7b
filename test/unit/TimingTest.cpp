//===- TimingTest.cpp - --timing's rows are exclusive ---------------------===//
#include "analyzer/Timing.h"
#include "gtest/gtest.h"
#include <chrono>
#include <thread>

using namespace ridge;

namespace {
void sleepMs(int Ms) { std::this_thread::sleep_for(std::chrono::milliseconds(Ms)); }
} // namespace

// A scope opened inside another pauses it: the outer row holds its own
// 20 ms, not the 200 ms its inner scope slept (margins wide enough for a
// loaded machine: the outer row would be >= 220 ms if nested time counted).
TEST(TimingTest, NestedScopesAreExclusive) {
  Timing T(/*Enabled=*/true);
  {
    Timing::Scope Outer(&T, "outer");
    sleepMs(10);
    {
      Timing::Scope Inner(&T, "inner");
      sleepMs(200);
    }
    sleepMs(10);
  }
  std::optional<double> O = T.wallSeconds("outer"), I = T.wallSeconds("inner");
  ASSERT_TRUE(O && I);
  EXPECT_GE(*I, 0.2);
  EXPECT_GE(*O, 0.02);
  EXPECT_LT(*O, 0.15);
  EXPECT_FALSE(T.wallSeconds("never opened"));
}

// A phase that re-enters itself (a recursive analysis) is timed once, and
// the scope around it resumes when it ends.
TEST(TimingTest, ReenteredScopeCountsOnce) {
  Timing T(/*Enabled=*/true);
  {
    Timing::Scope A(&T, "a");
    {
      Timing::Scope Again(&T, "a");
      sleepMs(50);
    }
    sleepMs(50);
  }
  std::optional<double> A = T.wallSeconds("a");
  ASSERT_TRUE(A);
  EXPECT_GE(*A, 0.1);
  EXPECT_LT(*A, 0.19); // not 150 ms counted as 200
}

// Disabled timing records nothing.
TEST(TimingTest, DisabledRecordsNothing) {
  Timing T(/*Enabled=*/false);
  { Timing::Scope S(&T, "x"); }
  EXPECT_FALSE(T.wallSeconds("x"));
}
