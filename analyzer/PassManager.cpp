//===- PassManager.cpp - Passes, cached analyses, pipelines ---------------===//
#include "analyzer/PassManager.h"

using namespace ridge;

Pass::~Pass() = default;

AnalysisManager::AnalysisManager(Model &M, const Config &C, DiagnosticEngine &D)
    : M(M), C(C), D(D) {
  if (C.TimePasses)
    Timers = std::make_unique<llvm::TimerGroup>("ridge", "ridge pass and analysis timing");
}

AnalysisManager::~AnalysisManager() {
  TimerByName.clear(); // timers must go before their group prints
}

AnalysisManager::TimeScope::TimeScope(AnalysisManager &AM, llvm::StringRef Name) {
  if (!AM.Timers)
    return;
  auto &Slot = AM.TimerByName[Name];
  if (!Slot)
    Slot = std::make_unique<llvm::Timer>(Name, Name, *AM.Timers);
  T = Slot.get();
  T->startTimer();
}

AnalysisManager::TimeScope::~TimeScope() {
  if (T)
    T->stopTimer();
}

llvm::Error PassManager::run(Model &M, AnalysisManager &AM) {
  const Config &C = AM.config();
  for (auto &P : Passes) {
    {
      AnalysisManager::TimeScope T(AM, P->name());
      if (llvm::Error E = P->run(M, AM))
        return E;
    }
    if (C.PrintAfter == "all" || C.PrintAfter == P->name()) {
      *C.Out << "; IR after " << P->name() << "\n";
      printModel(M, *C.Out);
    }
  }
  return llvm::Error::success();
}
