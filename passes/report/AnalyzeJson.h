//===- AnalyzeJson.h - Analyze's JSON document: shared pieces ---*- C++ -*-===//
//
// The parts of the document analyzeDocument builds (schema ridge.analyze/1,
// README documents it) that its numeric and its formula forms share, and
// what `ridge diff` and the --report page read from it.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_ANALYZEJSON_H
#define RIDGE_PASSES_REPORT_ANALYZEJSON_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include <cmath>
#include <cstdint>

namespace ridge {

class Model;
struct NodeCost;
struct CostResult;

/// `inputs` (the graph inputs, initializers left out) or `outputs`: name
/// and type each.
llvm::json::Array graphValuesJson(const Model &M, bool Outputs);
/// `coverage.unmodeled`: each op with its reason, and its count.
llvm::json::Array unmodeledJson(const CostResult &C);

/// Writes Doc as printJson (JsonWriter.h) would, with one more array, Key,
/// streamed in its sorted place: Items writes its elements one by one, so a
/// million-node document is never held whole (the `nodes` array).
void writeJsonWithStreamedArray(llvm::raw_ostream &OS, const llvm::json::Object &Doc,
                                llvm::StringRef Key,
                                llvm::function_ref<void(llvm::json::OStream &)> Items);

/// D as a JSON number, as llvm::json prints a double ("%.17g"), but an
/// integral one (a count) held as an integer: the same text, printed without
/// formatting a double.
inline llvm::json::Value countValue(double D) {
  // The range first: converting a double outside int64's is undefined.
  if (D > -9.0e15 && D < 9.0e15 && D == double(int64_t(D)) && (D != 0 || !std::signbit(D)))
    return int64_t(D);
  return D;
}

/// The number field Key of O; 0 when absent or not a number.
double jsonNumber(const llvm::json::Object &O, llvm::StringRef Key);

/// A node entry's step time: its forward and backward seconds times its
/// multiplier.
double jsonNodeSeconds(const llvm::json::Object &Node);

} // namespace ridge

#endif
