//===- HtmlReport.h - One self-contained HTML page per run -------*- C++ -*-===//
//
// `ridge analyze --report OUT.html` and `ridge plan --report OUT.html`: a page
// that needs nothing else (inline CSS, SVG and a few lines of script; nothing
// fetched), rendered from the run's JSON document, so that every number on
// it is one the JSON report gives:
//  - analyze: the summary, the memory breakdown, the fusion what-if, the
//    roofline chart, the per-op-type table and a sortable, filterable
//    per-node table (a row per node: click a header to sort, type to filter,
//    hide the nodes that cost nothing); the page's address may preset them:
//    OUT.html#sort=flops&order=asc&filter=gemm&hidefree=1;
//  - plan: the recommended configuration with its speedup and Amdahl's
//    bound, its step-time and memory breakdown, the ranked configurations
//    (sortable), the scaling chart and table, the rejections.
// Every string from the model or a device file goes through xmlText.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_HTMLREPORT_H
#define RIDGE_PASSES_REPORT_HTMLREPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace ridge {

/// Success for a name ending in ".html" (any case), else a usage error
/// naming the option: the driver checks before it analyzes.
llvm::Error checkReportPath(llvm::StringRef Path);

/// analyze's page: Doc is its JSON document (schema ridge.analyze/1),
/// RooflineSvg the chart as an <svg> element, Capacity the device's memory
/// in bytes.
void renderAnalyzeHtml(llvm::raw_ostream &OS, const llvm::json::Value &Doc,
                       llvm::StringRef RooflineSvg, double Capacity);

/// plan's page: Doc is its JSON document (schema ridge.plan/1), Model the
/// model's path, ScalingSvg the scaling chart (empty: none), Capacity the
/// device's memory in bytes.
void renderPlanHtml(llvm::raw_ostream &OS, const llvm::json::Value &Doc, llvm::StringRef Model,
                    llvm::StringRef ScalingSvg, double Capacity);

/// Writes Text to Path; errors name the file.
llvm::Error writeTextFile(llvm::StringRef Path, llvm::StringRef Text);

} // namespace ridge

#endif
