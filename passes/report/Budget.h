//===- Budget.h - --fail-if budgets on the report's totals -------*- C++ -*-===//
//
// A budget is KEY OP VALUE: KEY a number of the analyze JSON document, by
// its dotted path ("memory.total", "totals.fwd.flops") or, for a name
// without a dot, the first of the top level, "time", "totals", "memory" and
// "inference" that holds it ("step_seconds", "step_flops", "params"); OP one
// of > >= < <=; VALUE a number (an absolute limit) or a signed percentage
// ("+5%": on `ridge diff`, the change from the old model's value). A budget
// breaks when KEY OP VALUE holds: --fail-if 'step_seconds>0.5' fails a run
// whose step takes longer than half a second.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_BUDGET_H
#define RIDGE_PASSES_REPORT_BUDGET_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include <string>

namespace ridge {

/// Checks every budget against Doc (relative ones against Old -> Doc; Old
/// is null outside `ridge diff`). Returns an error, naming the model Path,
/// that lists every broken budget with its values; a budget that does not
/// parse or names no number is a usage error saying why.
llvm::Error checkBudgets(llvm::ArrayRef<std::string> Budgets, const llvm::json::Value &Doc,
                         const llvm::json::Value *Old, llvm::StringRef Path);

/// The value at a dotted path of Doc ("memory.total"), if any.
const llvm::json::Value *jsonAt(const llvm::json::Value &Doc, llvm::StringRef Path);

/// The number KEY names in Doc (see above), if any; Resolved gets its path.
std::optional<double> budgetValue(const llvm::json::Value &Doc, llvm::StringRef Key,
                                  std::string *Resolved = nullptr);

} // namespace ridge

#endif
