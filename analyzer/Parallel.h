//===- Parallel.h - A pass's per-node work on two threads -------*- C++ -*-===//
//
// Costing a node and placing it on the roofline read the IR and write that
// node's row only, so a large graph's rows can be made on two threads (the
// machines ridge is measured on have two cores; a third would mostly wait
// for memory). Blocks of nodes go to whichever thread asks next: rows
// differ in cost (a Concat of many inputs, a GEMM's tiling search). The
// rows are the same whichever thread makes them; the passes sum them in
// graph order afterwards, so totals do not depend on the split either.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_PARALLEL_H
#define RIDGE_ANALYZER_PARALLEL_H

#include "analyzer/symbolic/Count.h"
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>
#include <thread>

namespace ridge {

/// Calls Work(I, Thread) for every I in [0, Count), Thread being 0 or 1,
/// on two threads when Count >= From (Config::TwoThreadsFrom) and the
/// machine has two cores, else on this thread (Thread 0). The second
/// thread formulas take this thread's fast form (sym::UnivariateScope).
template <typename Fn> void onTwoThreads(size_t Count, size_t From, Fn &&Work) {
  if (Count < From || std::thread::hardware_concurrency() < 2) {
    for (size_t I = 0; I < Count; ++I)
      Work(I, 0u);
    return;
  }
  constexpr size_t Block = 512;
  std::atomic<size_t> Next{0};
  auto Take = [&](unsigned Thread) {
    for (size_t B; (B = Next.fetch_add(Block, std::memory_order_relaxed)) < Count;)
      for (size_t I = B, E = std::min(B + Block, Count); I < E; ++I)
        Work(I, Thread);
  };
  std::thread Second([&, Poly = sym::UnivariateScope::current()] {
    std::optional<sym::UnivariateScope> SameForm;
    if (Poly)
      SameForm.emplace(Poly);
    Take(1);
  });
  Take(0);
  Second.join();
}

} // namespace ridge

#endif
