//===- AnalyzeReport.h - What `ridge analyze` prints ------------*- C++ -*-===//
#ifndef RIDGE_PASSES_REPORT_ANALYZEREPORT_H
#define RIDGE_PASSES_REPORT_ANALYZEREPORT_H

#include "analyzer/PassManager.h"

namespace ridge {

/// `report`: per-node costs, per-op-type totals, the training step, memory
/// and coverage, as text, JSON or CSV (Config::Format).
RIDGE_DECLARE_PASS(ReportPass)

} // namespace ridge

#endif
