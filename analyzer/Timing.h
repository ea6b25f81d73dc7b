//===- Timing.h - Wall time per loader phase, pass and analysis -*- C++ -*-===//
//
// One timer group for the whole run (--timing), shared by the loader and the
// analysis manager, so a profile shows where time goes end to end.
// Timers are exclusive: a scope opened inside another (an analysis a pass
// asks for, a loader phase inside `plan: load`) pauses the enclosing one, so
// each row is time spent in that phase alone and the rows add up to the
// total. Scopes are opened and closed on the main thread only.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_TIMING_H
#define RIDGE_ANALYZER_TIMING_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Timer.h"
#include <memory>
#include <optional>

namespace ridge {

class Timing {
public:
  explicit Timing(bool Enabled);
  ~Timing();
  bool enabled() const { return Group != nullptr; }
  /// The wall seconds accumulated under Name so far (its own time, nested
  /// scopes excluded); none when no scope of that name has run.
  std::optional<double> wallSeconds(llvm::StringRef Name) const;

  /// Accumulates wall time under Name while alive; no-op when disabled.
  class Scope {
  public:
    Scope(Timing *T, llvm::StringRef Name);
    ~Scope();

  private:
    Timing *Owner = nullptr;
    llvm::Timer *Tm = nullptr;
  };

private:
  std::unique_ptr<llvm::TimerGroup> Group;
  llvm::StringMap<std::unique_ptr<llvm::Timer>> Timers;
  /// The open scopes' timers, innermost last (only it is running).
  llvm::SmallVector<llvm::Timer *, 8> Open;
};

} // namespace ridge

#endif
