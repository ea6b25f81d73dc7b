//===- AnalyzeJson.h - Reading analyze's JSON document ----------*- C++ -*-===//
//
// What `ridge diff` and the --report page read from the document
// analyzeDocument builds (schema ridge.analyze/1, README documents it).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_ANALYZEJSON_H
#define RIDGE_PASSES_REPORT_ANALYZEJSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

namespace ridge {

/// The number field Key of O; 0 when absent or not a number.
double jsonNumber(const llvm::json::Object &O, llvm::StringRef Key);

/// A node entry's step time: its forward and backward seconds times its
/// multiplier.
double jsonNodeSeconds(const llvm::json::Object &Node);

} // namespace ridge

#endif
