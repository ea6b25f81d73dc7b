//===- Timing.h - Wall time per loader phase, pass and analysis -*- C++ -*-===//
//
// One timer group for the whole run (--timing), shared by the loader and the
// analysis manager, so a profile shows where time goes end to end.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_TIMING_H
#define RIDGE_ANALYZER_TIMING_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Timer.h"
#include <memory>

namespace ridge {

class Timing {
public:
  explicit Timing(bool Enabled);
  ~Timing();
  bool enabled() const { return Group != nullptr; }

  /// Accumulates wall time under Name while alive; no-op when disabled.
  class Scope {
  public:
    Scope(Timing *T, llvm::StringRef Name);
    ~Scope();

  private:
    llvm::Timer *Tm = nullptr;
  };

private:
  std::unique_ptr<llvm::TimerGroup> Group;
  llvm::StringMap<std::unique_ptr<llvm::Timer>> Timers;
};

} // namespace ridge

#endif
