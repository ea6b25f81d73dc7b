//===- AnalyzeJson.h - Analyze's JSON document: shared pieces ---*- C++ -*-===//
//
// The parts of the document analyzeDocument builds (schema ridge.analyze/1,
// README documents it) that its numeric and its formula forms share, and
// what `ridge diff` and the --report page read from it.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_ANALYZEJSON_H
#define RIDGE_PASSES_REPORT_ANALYZEJSON_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

namespace ridge {

class Model;
struct NodeCost;
struct CostResult;

/// A node entry's first fields: name, op, domain, graph, outputs, modeled,
/// multiplier.
llvm::json::Object nodeHeaderJson(const NodeCost &NC);
/// `inputs` (the graph inputs, initializers left out) or `outputs`: name
/// and type each.
llvm::json::Array graphValuesJson(const Model &M, bool Outputs);
/// `coverage.unmodeled`: each op with its reason, and its count.
llvm::json::Array unmodeledJson(const CostResult &C);

/// The number field Key of O; 0 when absent or not a number.
double jsonNumber(const llvm::json::Object &O, llvm::StringRef Key);

/// A node entry's step time: its forward and backward seconds times its
/// multiplier.
double jsonNodeSeconds(const llvm::json::Object &Node);

} // namespace ridge

#endif
