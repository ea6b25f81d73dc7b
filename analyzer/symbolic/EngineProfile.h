//===- EngineProfile.h - Marks the time spent in the expression engine -*- C++ -*-===//
//
// --timing gives the expression engine (this folder's Expr and Count, and
// the packed formula costs and sums built on them in passes/cost) a row of
// its own. Its work is spread over every shape and cost rule in calls of a
// few nanoseconds each, too short to time one by one (reading a clock twice
// costs more than most calls), so the row is sampled, as a profiler does:
// while profiling is on, each entry point marks its thread as inside the
// engine for as long as it runs, and Timing's sampler reads the main
// thread's mark at a fixed interval (analyzer/Timing.h). With profiling off
// (every run without --timing), an entry point costs a load and a branch.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_SYMBOLIC_ENGINEPROFILE_H
#define RIDGE_ANALYZER_SYMBOLIC_ENGINEPROFILE_H

#include <csignal>

namespace ridge::sym {

namespace profile {
/// Whether entry points mark their thread; set by the sampler before the
/// run starts its threads, and not changed while they run.
extern bool Enabled;
/// This thread's nesting depth of entry points: what the signal handler
/// reads (hence volatile sig_atomic_t).
inline thread_local volatile std::sig_atomic_t Depth = 0;
} // namespace profile

/// Marks this thread as inside the expression engine while alive.
class EngineScope {
public:
  EngineScope() : On(profile::Enabled) {
    if (On)
      profile::Depth = profile::Depth + 1;
  }
  ~EngineScope() {
    if (On)
      profile::Depth = profile::Depth - 1;
  }
  EngineScope(const EngineScope &) = delete;
  EngineScope &operator=(const EngineScope &) = delete;

private:
  bool On;
};

/// Whether this thread is inside an EngineScope now (async-signal-safe).
inline bool insideEngine() { return profile::Depth > 0; }

} // namespace ridge::sym

#endif
