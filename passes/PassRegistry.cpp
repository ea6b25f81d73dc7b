//===- PassRegistry.cpp - Pipeline parsing from PassRegistry.def ----------===//
#include "passes/Passes.h"
#include "analyzer/Diagnostics.h"
#include "llvm/Support/FormatVariadic.h"

using namespace ridge;

llvm::Error ridge::parsePipeline(llvm::StringRef Text, PassManager &PM) {
  llvm::SmallVector<llvm::StringRef, 8> Names;
  Text.split(Names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef N : Names) {
    N = N.trim();
#define RIDGE_PASS(Name, Class, Description)                                   \
  if (N == Name) {                                                             \
    PM.addPass(Name, std::make_unique<Class>());                                     \
    continue;                                                                  \
  }
#include "passes/PassRegistry.def"
    std::string Known;
#define RIDGE_PASS(Name, Class, Description) Known += std::string(" ") + Name;
#include "passes/PassRegistry.def"
    return usageError(llvm::formatv("--passes: unknown pass '{0}' (known:{1})",
                                    N, Known));
  }
  if (PM.empty())
    return usageError("--passes: the pipeline is empty");
  return llvm::Error::success();
}

void ridge::printPassList(llvm::raw_ostream &OS) {
#define RIDGE_PASS(Name, Class, Description)                                   \
  OS << llvm::formatv("  {0,-22} {1}\n", Name, Description);
#include "passes/PassRegistry.def"
}
