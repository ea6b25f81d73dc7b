//===- Passes.h - Every pass class, for the registry ------------*- C++ -*-===//
#ifndef RIDGE_PASSES_PASSES_H
#define RIDGE_PASSES_PASSES_H

#include "analyzer/PassManager.h"

namespace ridge {

#define RIDGE_PASS(Name, Class, Description)                                   \
  class Class : public Pass {                                                  \
  public:                                                                      \
    llvm::StringRef name() const override { return Name; }                     \
    llvm::Error run(Model &M, AnalysisManager &AM) override;                   \
  };
#include "passes/PassRegistry.def"

/// Builds a pipeline from "a,b,c"; an unknown name is an error that lists
/// the known ones.
llvm::Error parsePipeline(llvm::StringRef Text, PassManager &PM);
/// One line per pass: name and description.
void printPassList(llvm::raw_ostream &OS);

} // namespace ridge

#endif
