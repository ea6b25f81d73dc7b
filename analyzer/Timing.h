//===- Timing.h - Wall time per loader phase, pass and analysis -*- C++ -*-===//
//
// One timing table for the whole run (--timing), shared by the loader and
// the analysis manager, so a profile shows where time goes end to end.
// Rows are exclusive: a scope opened inside another (an analysis a pass
// asks for, a loader phase inside `plan: load`) pauses the enclosing one, so
// each row is time spent in that phase alone and the rows add up to the
// total. Scopes are opened and closed on the main thread only.
//
// The expression engine (analyzer/symbolic/EngineProfile.h) is a row of its
// own, sampled: every SampleMicros of wall time a timer signal on the main
// thread notes which phase is running and whether the engine is, and each
// phase gives the engine its sampled share of that phase's time. The table
// says how many samples that rests on.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_TIMING_H
#define RIDGE_ANALYZER_TIMING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ridge {

class Timing {
public:
  /// Interval of the expression engine's sampling.
  static constexpr long SampleMicros = 500;
  /// The engine's row.
  static constexpr const char *EngineRow = "expression engine (sampled)";

  /// Enabled: the scopes time, and the engine is sampled from now on, by a
  /// timer unless SampleTimer is false (tests then tick with sampleNow()).
  explicit Timing(bool Enabled, bool SampleTimer = true);
  /// Prints the table to stderr (when enabled).
  ~Timing();
  Timing(const Timing &) = delete;
  Timing &operator=(const Timing &) = delete;
  bool enabled() const { return Enabled; }

  /// The wall seconds accumulated under Name so far (its own time, nested
  /// scopes excluded, the engine's share not taken off); none when no scope
  /// of that name has run.
  std::optional<double> wallSeconds(llvm::StringRef Name) const;

  /// Accumulates time under Name while alive; no-op when disabled.
  class Scope {
  public:
    Scope(Timing *T, llvm::StringRef Name);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    Timing *Owner = nullptr; ///< set when this scope opened a phase
  };

  /// One row's times in seconds.
  struct Times {
    double Wall = 0, User = 0, System = 0;
    Times &operator+=(const Times &O);
    Times scaled(double K) const { return {Wall * K, User * K, System * K}; }
  };
  /// A phase's samples: all of them and those taken inside the engine.
  struct Samples {
    uint64_t All = 0, InEngine = 0;
  };
  /// The table: each phase's time less its engine share, the engine's row
  /// (when a sample saw it), most wall time first; and the total.
  struct Row {
    std::string Name;
    Times T;
  };
  static std::vector<Row> rows(llvm::ArrayRef<std::pair<std::string, Times>> Phases,
                               llvm::ArrayRef<Samples> PhaseSamples);
  /// Prints rows as LLVM's -time-passes tables look, with Note under them.
  static void print(llvm::ArrayRef<Row> Rows, llvm::StringRef Note, llvm::raw_ostream &OS);

  /// The sampler's counts per phase, in the order phases were first opened
  /// (for tests; the sampler must be stopped, or the run single-threaded).
  std::vector<Samples> samples() const;
  /// What the sampler does on each tick, callable directly (tests).
  void sampleNow();

private:
  struct Phase;
  bool Enabled;
  llvm::StringMap<unsigned> Index;
  std::vector<std::unique_ptr<Phase>> Phases;
  /// The open scopes' phases, innermost last (only it is running).
  llvm::SmallVector<unsigned, 8> Open;
  class Sampler;
  std::unique_ptr<Sampler> Sampling;
  void start(unsigned P);
  void stop(unsigned P);
};

} // namespace ridge

#endif
