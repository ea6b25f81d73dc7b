//===- NodeJson.h - One entry of a `nodes` array, streamed or built -------===//
//
// The numeric document (AnalyzeReport.cpp) and the formula document
// (FormulaReport.cpp) print the same node entry with different counts; the
// entry is written once here, into either sink of JsonWriter.h.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_NODEJSON_H
#define RIDGE_PASSES_REPORT_NODEJSON_H

#include "passes/cost/CostModel.h"
#include "passes/report/AnalyzeJson.h"
#include "passes/report/JsonWriter.h"

namespace ridge {

/// A modeled node's counts as its entry prints them: numbers, or formula
/// strings in the formula document.
struct NodeCountsJson {
  llvm::json::Value FwdFlops, Macs, Transcendentals, FwdBytes;
  llvm::json::Value BwdFlops, BwdMacs, BwdTranscendentals, BwdBytes, Saved;
};

/// One entry of a `nodes` array into S (a sink of JsonWriter.h): the node's
/// name, op, domain, graph, outputs, modeled and multiplier; for a modeled
/// node its Counts, needs_backward and what Time(S, Bwd) adds (the numeric
/// document's fwd_time and bwd_time); for another its unmodeled_reason. The
/// members go to S sorted by key, as a sink needs them.
template <class Sink, class TimeFn>
void nodeEntry(Sink &S, const NodeCost &NC, const NodeCountsJson *Counts, TimeFn Time) {
  bool M = NC.Modeled;
  if (M) {
    S.member("bwd_bytes", Counts->BwdBytes);
    S.member("bwd_flops", Counts->BwdFlops);
    S.member("bwd_macs", Counts->BwdMacs);
    Time(S, /*Bwd=*/true);
    S.member("bwd_transcendentals", Counts->BwdTranscendentals);
  }
  S.member("domain", NC.N->domainName());
  if (M) {
    S.member("fwd_bytes", Counts->FwdBytes);
    S.member("fwd_flops", Counts->FwdFlops);
    Time(S, /*Bwd=*/false);
  }
  S.member("graph", NC.N->Parent->Name);
  if (M)
    S.member("macs", Counts->Macs);
  S.member("modeled", M);
  S.member("multiplier", countValue(NC.multiplier()));
  S.member("name", NC.N->Name.ref());
  if (M)
    S.member("needs_backward", NC.NeedsBackward);
  S.member("op", NC.N->OpType.ref());
  S.array("outputs", [&](auto &E) {
    for (const Value *V : NC.N->Outputs)
      if (V)
        E.value(V->typeStr());
  });
  if (M) {
    S.member("saved_bytes", Counts->Saved);
    S.member("transcendentals", Counts->Transcendentals);
  } else {
    S.member("unmodeled_reason", NC.unmodeled().str());
  }
}
} // namespace ridge

#endif
