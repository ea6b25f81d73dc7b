//===- AnalyzeReport.h - What `ridge analyze` prints ------------*- C++ -*-===//
#ifndef RIDGE_PASSES_REPORT_ANALYZEREPORT_H
#define RIDGE_PASSES_REPORT_ANALYZEREPORT_H

#include "analyzer/PassManager.h"
#include "llvm/Support/JSON.h"

namespace ridge {

/// `report`: per-node costs, per-op-type totals, the training step, memory
/// and coverage, as text, JSON or CSV (Config::Format).
RIDGE_DECLARE_PASS(ReportPass)

/// The JSON document `ridge analyze --format json` prints (schema
/// "ridge.analyze/1"), built from the analyses AM holds for M: what
/// `ridge diff` and the budgets read.
llvm::Expected<llvm::json::Value> analyzeDocument(Model &M, AnalysisManager &AM);

/// The files analyze writes beside its report, as AM's Config asks:
/// --roofline's chart, --report's page, --annotate's model. Doc is M's
/// analyze document when the caller has it (else it is built here).
llvm::Error writeAnalyzeFiles(Model &M, AnalysisManager &AM,
                              const llvm::json::Value *Doc = nullptr);

} // namespace ridge

#endif
