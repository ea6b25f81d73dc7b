//===- RooflineChart.h - The roofline as an SVG or HTML chart ---*- C++ -*-===//
//
// `ridge analyze --roofline FILE`: every modeled node phase as a point on the
// device's roofline (laws.md section 3), on log-log axes:
//  - x: operational intensity (FLOP/byte), y: FLOP/s;
//  - roofs: the memory slope beta*I and the flat compute roofs of the step
//    dtype (R.MatrixPeak) and of the vector fp32 peak when it differs, solid
//    at the datasheet values, dashed at the derated ones (peak * EffCompute,
//    bandwidth * EffMemory); the cache slope (thin) when the device gives one;
//  - the ridge point I* = MatrixPeak / Bandwidth: a vertical dotted line;
//  - a point per phase with FLOPs, bytes and time at (intensity, achieved
//    rate = FLOPs / seconds), forward filled, backward hollow, colored by op
//    type, marker area proportional to the phase's share of step time;
//  - a legend of the op types (top 12 by time, the rest as "other").
// Each point carries a <title> tooltip; the HTML page adds a hover box. The
// output depends on its inputs only: the same analysis gives the same bytes.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_ROOFLINECHART_H
#define RIDGE_PASSES_REPORT_ROOFLINECHART_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace ridge {

class Model;
struct CostResult;
struct RooflineResult;
struct Config;

/// Checks the chart's file name only: success for a name ending in ".svg" or
/// ".html" (any case), else the usage error writeRooflineChart returns. Lets
/// the driver reject a bad name before it runs the analysis.
llvm::Error checkRooflineChartPath(llvm::StringRef Path);

/// Writes the chart to Path: SVG for "*.svg", a self-contained HTML page
/// (inline SVG, a few lines of CSS and JS, nothing fetched) for "*.html".
/// Errors: usageError("--roofline 'x.png': expected a .svg or .html file")
/// for another name; fileError(Path, reason) when the file cannot be written.
llvm::Error writeRooflineChart(llvm::StringRef Path, const Model &M, const CostResult &C,
                               const RooflineResult &R, const Config &Cfg);

/// The document writeRooflineChart writes, to OS (for unit tests).
void renderRooflineChart(llvm::raw_ostream &OS, bool Html, const Model &M,
                         const CostResult &C, const RooflineResult &R, const Config &Cfg);

/// The chart as one <svg> element, for a page that embeds it (--report).
void renderRooflineSvgElement(llvm::raw_ostream &OS, const Model &M, const CostResult &C,
                              const RooflineResult &R, const Config &Cfg);

} // namespace ridge

#endif
