//===- Config.h - Settings every pass can read ------------------*- C++ -*-===//
//
// The driver fills one Config from its options; passes and analyses read it
// through the AnalysisManager, so a pass needs no constructor arguments and
// the pipeline parser can build any pass by name.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_CONFIG_H
#define RIDGE_ANALYZER_CONFIG_H

#include "llvm/Support/raw_ostream.h"
#include <string>

namespace ridge {

enum class OutputFormat { Text, Json, Csv };

struct Config {
  llvm::raw_ostream *Out = &llvm::outs();
  OutputFormat Format = OutputFormat::Text;
  bool Color = false;         ///< ANSI colors in text tables
  std::string PrintAfter;     ///< print the IR after this pass ("all": each)
};

} // namespace ridge

#endif
