//===- ModelAnnotations.h - ridge's findings written into the model -*- C++ -*-===//
//
// `ridge analyze --annotate OUT.onnx`: a copy of the model that Netron shows
// ridge's numbers in (analyzer/onnx/AnnotatedModel.h writes it):
//  - per main-graph node, metadata_props, each the step's total (the node's
//    multiplier applied, nodes of its subgraphs included):
//      ridge.fwd_flops, ridge.bwd_flops, ridge.macs (forward), ridge.bytes (forward +
//      backward), ridge.intensity (forward FLOP/byte), ridge.seconds,
//      ridge.bound (the forward's), ridge.share (of the step time);
//    an op ridge cannot cost gets ridge.unmodeled with the reason instead;
//    with free dims the four counts as formulas (README's syntax), no times;
//  - the model's metadata_props: the totals of analyze's JSON (step FLOPs
//    and seconds, parameters, memory, coverage, device, mode);
//  - a value_info for every main-graph value with a known rank, symbolic dims
//    as dim_param (their formula), and graph outputs retyped the same way.
// The numbers are the analyses' own: the JSON report reads the same ones.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_MODELANNOTATIONS_H
#define RIDGE_PASSES_REPORT_MODELANNOTATIONS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace ridge {

class Model;
struct CostResult;
struct RooflineResult;
class DiagnosticEngine;

/// Writes M's file annotated to Path; Doc is analyze's JSON document for M
/// (its totals become the model's props). RL null: the costs are formulas
/// (free dims), and the props are the four counts as formulas, without
/// times (intensity, seconds, bound, share need numbers). Warns of file
/// nodes left without props.
llvm::Error writeModelAnnotations(llvm::StringRef Path, const Model &M, const CostResult &C,
                                  const RooflineResult *RL, const llvm::json::Value &Doc,
                                  DiagnosticEngine &Diags);

} // namespace ridge

#endif
