//===- FormulaReport.h - analyze's report when costs are formulas -*- C++ -*-===//
//
// A model whose dims hold free symbols is costed as formulas in them
// (Config::SymbolicCosts): FLOPs, MACs, transcendentals, bytes, saved
// activations and memory are polynomials with rational coefficients over the
// symbols (and floor/mod/min/max atoms). `ridge analyze` then prints the
// totals and the per-op-type lines as formulas, and says which symbols to
// bind for times: times, roofline bounds and MFU need numbers.
//
// JSON (schema ridge.analyze/1): a count is a number when concrete and a
// string holding its formula when not; the syntax is README's ("Formulas").
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_FORMULAREPORT_H
#define RIDGE_PASSES_REPORT_FORMULAREPORT_H

#include "analyzer/PassManager.h"
#include "analyzer/symbolic/Count.h"
#include "llvm/Support/JSON.h"

namespace ridge {

struct CostResult;
struct GraphSummaryResult;
struct InferenceMemoryResult;
struct TrainingStepResult;

/// A count as JSON: a number when it is one, its formula (a string) when
/// not, null when unknown.
llvm::json::Value countJson(const sym::Count &C);
/// An expression (a dim, a bound) as JSON: an integer when constant, its
/// formula when symbolic, null when unknown.
llvm::json::Value exprJson(sym::ExprRef E);

/// Every symbol the model's shapes use: each input's symbolic dims (the
/// input and axis), then the data-dependent ones (the node, what it counts,
/// the bound ridge can prove, and a --dim binding): JSON `symbols`.
llvm::json::Array symbolsJson(const Model &M);
/// The data-dependent symbols, one text line each.
void printDataSymbols(const Model &M, llvm::raw_ostream &OS);
/// The text's first line: the model, its nodes, its (trainable) parameters
/// and where they came from (node-kept weights, --freeze).
void printModelLine(const Model &M, size_t Nodes, double Params, const CostResult &C,
                    bool Inference, llvm::raw_ostream &OS);

/// analyze's text when C holds formulas (C.Sym); Inf: --inference's
/// memory (weights at their width, the live peak as a formula).
void printFormulaText(const Model &M, const GraphSummaryResult &S, const CostResult &C,
                      const TrainingStepResult &T, const InferenceMemoryResult *Inf,
                      const Config &Cfg);
/// analyze's JSON document when C holds formulas: the counts as numbers or
/// formulas, no times (`time`, `fusion` and `memory_fits` null), and
/// `needs_binding`: the symbols to bind for them.
llvm::json::Value formulaDocument(const Model &M, const GraphSummaryResult &S,
                                  const CostResult &C, const TrainingStepResult &T,
                                  const InferenceMemoryResult *Inf, AnalysisManager &AM);
/// The same document written to OS, its nodes streamed one by one
/// (writeJsonWithStreamedArray).
void writeFormulaDocument(llvm::raw_ostream &OS, const Model &M, const GraphSummaryResult &S,
                          const CostResult &C, const TrainingStepResult &T,
                          const InferenceMemoryResult *Inf, AnalysisManager &AM);

} // namespace ridge

#endif
