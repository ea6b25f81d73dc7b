//===- Diagnostics.cpp - Errors and warnings ------------------------------===//
#include "analyzer/Diagnostics.h"
#include "analyzer/SafeText.h"

using namespace ridge;

llvm::Error ridge::fileError(llvm::StringRef File, const llvm::Twine &Msg) {
  return llvm::createStringError(
                                 File + ": " + Msg);
}

llvm::Error ridge::usageError(const llvm::Twine &Msg) {
  return llvm::createStringError(Msg);
}

void DiagnosticEngine::flush(llvm::raw_ostream &OS) {
  for (; Flushed < Warnings.size(); ++Flushed)
    OS << "ridge: warning: " << escapeControls(Warnings[Flushed]) << '\n';
}
