//===- GraphSummary.h - Nodes by op type, parameters, interface -*- C++ -*-===//
#ifndef RIDGE_PASSES_REPORT_GRAPHSUMMARY_H
#define RIDGE_PASSES_REPORT_GRAPHSUMMARY_H

#include "analyzer/PassManager.h"
#include <string>
#include <vector>

namespace ridge {

struct GraphSummaryResult {
  size_t Nodes = 0;            ///< all nodes, subgraphs included
  size_t SubgraphNodes = 0;    ///< of which inside If/Loop/Scan bodies
  /// (qualified op type, count), most frequent first, then by name.
  std::vector<std::pair<std::string, size_t>> OpCounts;
  size_t Initializers = 0;
  double Params = 0;        ///< elements of floating-point initializers
  double ParamBytes = 0;    ///< their bytes at the stored element type
  double OtherInitBytes = 0; ///< bytes of non-float initializers
};

struct GraphSummaryAnalysis {
  using Result = GraphSummaryResult;
  static constexpr const char *Name = "summary";
  static llvm::Expected<Result> run(Model &M, AnalysisManager &AM);
};

/// `print<summary>`: inputs, outputs, nodes by op type, parameters.
RIDGE_DECLARE_PASS(PrintSummaryPass)

} // namespace ridge

#endif
