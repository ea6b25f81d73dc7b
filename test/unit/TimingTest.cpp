//===- TimingTest.cpp - --timing's rows are exclusive ---------------------===//
#include "analyzer/Timing.h"
#include "analyzer/symbolic/EngineProfile.h"
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

// The engine's sampler, ticked by hand: a tick counts for the running
// phase, and as the engine's when an EngineScope is alive on this thread.
TEST(TimingTest, TicksCountForTheRunningPhaseAndTheEngine) {
  Timing T(/*Enabled=*/true, /*SampleTimer=*/false);
  T.sampleNow(); // no phase open: not counted
  {
    Timing::Scope A(&T, "a");
    {
      sym::EngineScope InEngine;
      T.sampleNow();
      {
        sym::EngineScope Nested;
        T.sampleNow();
      }
      T.sampleNow(); // still inside the outer scope
    }
    T.sampleNow();
    Timing::Scope B(&T, "b");
    T.sampleNow();
  }
  std::vector<Timing::Samples> S = T.samples();
  ASSERT_EQ(S.size(), 2u);
  EXPECT_EQ(S[0].All, 4u);
  EXPECT_EQ(S[0].InEngine, 3u);
  EXPECT_EQ(S[1].All, 1u);
  EXPECT_EQ(S[1].InEngine, 0u);
}

// Without --timing an EngineScope marks nothing.
TEST(TimingTest, EngineScopeIsInertWhenDisabled) {
  sym::EngineScope InEngine;
  EXPECT_FALSE(sym::insideEngine());
}

// Each phase gives the engine its sampled share: a, 1 s wall with 1 tick in
// 4 inside the engine, keeps 0.75 s and the engine gets 0.25 s; b had no
// engine tick and keeps its 0.5 s; c was never ticked (shorter than a tick)
// and keeps its time. The rows still add up to the 1.6 s the phases took.
TEST(TimingTest, RowsGiveTheEngineItsSampledShare) {
  std::vector<std::pair<std::string, Timing::Times>> Phases = {
      {"a", {1.0, 0.8, 0.2}}, {"b", {0.5, 0.5, 0}}, {"c", {0.1, 0.1, 0}}};
  std::vector<Timing::Samples> S = {{4, 1}, {2, 0}, {0, 0}};
  std::vector<Timing::Row> R = Timing::rows(Phases, S);
  ASSERT_EQ(R.size(), 4u);
  EXPECT_EQ(R[0].Name, "a");
  EXPECT_DOUBLE_EQ(R[0].T.Wall, 0.75);
  EXPECT_DOUBLE_EQ(R[0].T.User, 0.6);
  EXPECT_DOUBLE_EQ(R[0].T.System, 0.15);
  EXPECT_EQ(R[1].Name, "b");
  EXPECT_DOUBLE_EQ(R[1].T.Wall, 0.5);
  EXPECT_EQ(R[2].Name, Timing::EngineRow);
  EXPECT_DOUBLE_EQ(R[2].T.Wall, 0.25);
  EXPECT_DOUBLE_EQ(R[2].T.User, 0.2);
  EXPECT_EQ(R[3].Name, "c");
  double Sum = 0;
  for (const Timing::Row &X : R)
    Sum += X.T.Wall;
  EXPECT_DOUBLE_EQ(Sum, 1.6);
  // No engine tick anywhere: no engine row.
  EXPECT_EQ(Timing::rows(Phases, {{4, 0}, {2, 0}, {0, 0}}).size(), 3u);
}

// The real timer ticks the main thread: a phase spent wholly inside the
// engine for 100 ms of busy work is ticked (one every SampleMicros; the
// margin allows a loaded machine that runs this thread a tenth of the time),
// and every tick but one at the phase's edges finds the engine running.
TEST(TimingTest, TimerTicksTheMainThread) {
  Timing T(/*Enabled=*/true);
  {
    Timing::Scope A(&T, "busy");
    sym::EngineScope InEngine;
    auto End = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    volatile uint64_t Spin = 0;
    while (std::chrono::steady_clock::now() < End)
      Spin = Spin + 1;
  }
  std::vector<Timing::Samples> S = T.samples();
  ASSERT_EQ(S.size(), 1u);
  EXPECT_GE(S[0].All, uint64_t(100000 / Timing::SampleMicros / 10));
  EXPECT_GE(S[0].InEngine + 1, S[0].All);
}
