//===- ServingReport.h - What `ridge analyze --prompt/--context` prints -*- C++ -*-===//
#ifndef RIDGE_PASSES_REPORT_SERVINGREPORT_H
#define RIDGE_PASSES_REPORT_SERVINGREPORT_H

#include "passes/inference/Inference.h"

namespace ridge {

/// The prefill, the decode step and the batch sweep, as text or JSON
/// (Cfg.Format; README "Inference" documents both).
void printServing(const ServingResult &R, const ServingOptions &SO, const Config &Cfg,
                  llvm::raw_ostream &OS);

/// `ridge plan --inference`: the best configurations, text or JSON.
void printInferencePlan(const InferencePlanResult &R, const Config &Cfg,
                        llvm::raw_ostream &OS);

} // namespace ridge

#endif
