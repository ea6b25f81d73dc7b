//===- PrintIR.cpp - The "print" pass: the IR in stable text form ---------===//
#include "passes/Passes.h"

using namespace ridge;

llvm::Error PrintIRPass::run(Model &M, AnalysisManager &AM) {
  printModel(M, *AM.config().Out);
  return llvm::Error::success();
}
