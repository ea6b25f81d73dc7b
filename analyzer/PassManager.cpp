//===- PassManager.cpp - Passes, cached analyses, pipelines ---------------===//
#include "analyzer/PassManager.h"

using namespace ridge;

Pass::~Pass() = default;

llvm::Error PassManager::run(Model &M, AnalysisManager &AM) {
  const Config &C = AM.config();
  for (auto &[Name, P] : Passes) {
    {
      Timing::Scope S(AM.timing(), Name);
      if (llvm::Error E = P->run(M, AM))
        return E;
    }
    if (C.PrintAfter == "all" || C.PrintAfter == Name) {
      *C.Out << "; IR after " << Name << "\n";
      printModel(M, *C.Out);
    }
  }
  return llvm::Error::success();
}
