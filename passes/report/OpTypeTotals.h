//===- OpTypeTotals.h - A cost result's phases summed by op type -*- C++ -*-===//
//
// The "per op type" rows of `analyze`'s text and JSON, as numbers
// (AnalyzeReport) or as formulas (FormulaReport).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_OPTYPETOTALS_H
#define RIDGE_PASSES_REPORT_OPTYPETOTALS_H

#include "passes/cost/CostModel.h"
#include "llvm/ADT/DenseMap.h"
#include <map>
#include <string>
#include <vector>

namespace ridge {

/// One op type's nodes and their summed forward and backward amounts.
template <typename T> struct OpTypeTotal {
  std::string Op; ///< domain-qualified op type
  size_t Nodes = 0;
  PhaseAmounts<T> Fwd, Bwd;
  void merge(const OpTypeTotal &O) {
    Fwd += O.Fwd;
    Bwd += O.Bwd;
  }
};

/// C's nodes grouped by op type, in op-type order: Row has Op, Nodes and
/// merge(Row) (two groups of one name joining); Add(NC, Row) adds a node to
/// its row. Nodes are grouped by their interned domain and op type first
/// (no string is made per node, and no formula is copied into a map node),
/// then merged by name (an op type not interned, as a test builds one,
/// still joins its own).
template <typename Row, typename AddFn>
std::vector<Row> groupByOpType(const CostResult &C, AddFn Add) {
  llvm::DenseMap<std::pair<const char *, const char *>, uint32_t> Slot;
  std::vector<Row> Groups;
  std::vector<const Node *> First;
  for (const NodeCost &NC : C.Nodes) {
    auto [It, New] = Slot.try_emplace({NC.N->Domain.data(), NC.N->OpType.data()},
                                      uint32_t(Groups.size()));
    if (New) {
      Groups.emplace_back();
      First.push_back(NC.N);
    }
    Row &R = Groups[It->second];
    ++R.Nodes;
    Add(NC, R);
  }
  std::map<std::string, Row> ByName;
  for (size_t I = 0; I < Groups.size(); ++I) {
    std::string Op = First[I]->qualifiedOpType();
    auto [It, New] = ByName.try_emplace(Op);
    Row &R = It->second;
    if (New) {
      R = std::move(Groups[I]);
      R.Op = Op;
    } else {
      R.Nodes += Groups[I].Nodes;
      R.merge(Groups[I]);
    }
  }
  std::vector<Row> Rows;
  Rows.reserve(ByName.size());
  for (auto &[Name, R] : ByName)
    Rows.push_back(std::move(R));
  return Rows;
}

/// C's nodes summed by op type, in op-type order. AddPhases(NC, Fwd, Bwd)
/// adds a node's amounts (its numbers, or its counts) to a row.
template <typename T, typename AddFn>
std::vector<OpTypeTotal<T>> sumByOpType(const CostResult &C, AddFn AddPhases) {
  return groupByOpType<OpTypeTotal<T>>(
      C, [&](const NodeCost &NC, OpTypeTotal<T> &R) { AddPhases(NC, R.Fwd, R.Bwd); });
}

} // namespace ridge

#endif
