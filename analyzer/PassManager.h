//===- PassManager.h - Passes, cached analyses, pipelines -------*- C++ -*-===//
//
// The vocabulary of LLVM's new pass manager on ridge's Model, with run()
// returning llvm::Error (MLIR's signalPassFailure, in Error form):
//  - an analysis is a type with `using Result` and a static
//    `Expected<Result> run(Model &, AnalysisManager &)`; getResult<A>()
//    computes it on first use and caches it, getCachedResult<A>() never
//    computes;
//  - a pass is a named object whose run() may read analyses and print.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_PASSMANAGER_H
#define RIDGE_ANALYZER_PASSMANAGER_H

#include "analyzer/Config.h"
#include "analyzer/Diagnostics.h"
#include "analyzer/ir/IR.h"
#include "analyzer/ir/IRPrinter.h"
#include "analyzer/Timing.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <vector>

namespace ridge {

class AnalysisManager {
public:
  AnalysisManager(Model &M, const Config &C, DiagnosticEngine &D,
                  Timing *T = nullptr)
      : M(M), C(C), D(D), T(T) {}

  /// The analysis' result, computed now if not cached.
  template <typename A> llvm::Expected<typename A::Result &> getResult() {
    if (auto *R = getCachedResult<A>())
      return *R;
    llvm::Expected<typename A::Result> R = [&] {
      Timing::Scope S(T, A::Name);
      return A::run(M, *this);
    }();
    if (!R)
      return R.takeError();
    auto *Holder = new ResultHolder<typename A::Result>(std::move(*R));
    Results[key<A>()].reset(Holder);
    return Holder->Value;
  }

  /// The cached result, or nullptr: never computes.
  template <typename A> typename A::Result *getCachedResult() {
    auto It = Results.find(key<A>());
    if (It == Results.end())
      return nullptr;
    return &static_cast<ResultHolder<typename A::Result> *>(It->second.get())->Value;
  }

  void invalidateAll() { Results.clear(); }

  Model &model() { return M; }
  const Config &config() const { return C; }
  DiagnosticEngine &diags() { return D; }

  Timing *timing() { return T; }

private:
  struct ResultBase {
    virtual ~ResultBase() = default;
  };
  template <typename R> struct ResultHolder : ResultBase {
    explicit ResultHolder(R &&V) : Value(std::move(V)) {}
    R Value;
  };
  template <typename A> static const void *key() {
    static char K;
    return &K;
  }

  Model &M;
  const Config &C;
  DiagnosticEngine &D;
  Timing *T;
  llvm::DenseMap<const void *, std::unique_ptr<ResultBase>> Results;
};

class Pass {
public:
  virtual ~Pass();
  virtual llvm::Error run(Model &M, AnalysisManager &AM) = 0;
};

/// Declares a pass class next to the analysis it prints; its name and
/// description are in passes/PassRegistry.def, the one table of passes.
#define RIDGE_DECLARE_PASS(Class)                                              \
  class Class : public Pass {                                                  \
  public:                                                                      \
    llvm::Error run(Model &M, AnalysisManager &AM) override;                   \
  };

class PassManager {
public:
  /// Appends P, run and timed (and printed after, --print-after) as Name.
  void addPass(llvm::StringRef Name, std::unique_ptr<Pass> P) {
    Passes.push_back({Name.str(), std::move(P)});
  }
  /// Runs the passes in order; stops at the first error. Honors
  /// Config::PrintAfter.
  llvm::Error run(Model &M, AnalysisManager &AM);
  bool empty() const { return Passes.empty(); }

private:
  std::vector<std::pair<std::string, std::unique_ptr<Pass>>> Passes;
};

} // namespace ridge

#endif
