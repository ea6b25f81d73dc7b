//===- Passes.h - Every pass ridge can run, for the registry ----*- C++ -*-===//
//
// Each pass class is declared beside the analysis it prints (cost/,
// roofline/, report/); PassRegistry.def names them all, and this header
// brings them together for the pipeline parser and the driver.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_PASSES_H
#define RIDGE_PASSES_PASSES_H

#include "analyzer/PassManager.h"
#include "passes/cost/CostModel.h"
#include "passes/inference/Inference.h"
#include "passes/report/AnalyzeReport.h"
#include "passes/report/GraphSummary.h"
#include "passes/roofline/Fusion.h"
#include "passes/roofline/Roofline.h"

namespace ridge {

/// `print`: the IR with inferred shapes.
RIDGE_DECLARE_PASS(PrintIRPass)

/// Builds a pipeline from "a,b,c"; an unknown name is an error that lists
/// the known ones.
llvm::Error parsePipeline(llvm::StringRef Text, PassManager &PM);
/// One line per pass: name and description.
void printPassList(llvm::raw_ostream &OS);

} // namespace ridge

#endif
