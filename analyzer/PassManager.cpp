//===- PassManager.cpp - Passes, cached analyses, pipelines ---------------===//
#include "analyzer/PassManager.h"

using namespace ridge;

Pass::~Pass() = default;

llvm::Error PassManager::run(Model &M, AnalysisManager &AM) {
  const Config &C = AM.config();
  for (auto &P : Passes) {
    {
      Timing::Scope S(AM.timing(), P->name());
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
