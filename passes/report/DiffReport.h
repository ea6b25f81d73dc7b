//===- DiffReport.h - `ridge diff OLD NEW`: what a model change costs -*- C++ -*-===//
#ifndef RIDGE_PASSES_REPORT_DIFFREPORT_H
#define RIDGE_PASSES_REPORT_DIFFREPORT_H

#include "analyzer/Config.h"
#include "llvm/Support/JSON.h"

namespace ridge {

/// The change from Old to New, both `ridge analyze` JSON documents
/// (analyzeDocument): the totals (parameters, FLOPs, bytes, step time,
/// memory) with their change in percent, per op type (nodes, FLOPs, bytes,
/// time), and per node matched by name (changed, added, removed). Text or
/// JSON (schema "ridge.diff/1") by Cfg.Format; text lists Cfg.Top changed
/// nodes (0: all).
void printDiff(const llvm::json::Value &Old, const llvm::json::Value &New, const Config &Cfg,
               llvm::raw_ostream &OS);

} // namespace ridge

#endif
