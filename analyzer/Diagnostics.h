//===- Diagnostics.h - Errors and warnings that name the file at fault -*- C++ -*-===//
//
// Every failure is an llvm::Error whose message starts with the file it is
// about; the driver prints it as "ridge: error: FILE: ...". Warnings are
// collected here and printed once, so that output formats can carry them too.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_DIAGNOSTICS_H
#define RIDGE_ANALYZER_DIAGNOSTICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <string>
#include <vector>

namespace ridge {

/// An error about File: "FILE: Msg".
llvm::Error fileError(llvm::StringRef File, const llvm::Twine &Msg);
/// An error not tied to a file (bad option values).
llvm::Error usageError(const llvm::Twine &Msg);

class DiagnosticEngine {
public:
  void warn(llvm::StringRef File, const llvm::Twine &Msg) {
    std::string S = File.empty() ? std::string() : (File + ": ").str();
    S += Msg.str();
    // The same model may be loaded more than once (ridge plan): say it once.
    if (std::find(Warnings.begin(), Warnings.end(), S) == Warnings.end())
      Warnings.push_back(std::move(S));
  }
  const std::vector<std::string> &warnings() const { return Warnings; }
  /// Prints "ridge: warning: ..." lines not printed before.
  void flush(llvm::raw_ostream &OS);

private:
  std::vector<std::string> Warnings;
  size_t Flushed = 0;
};

} // namespace ridge

#endif
