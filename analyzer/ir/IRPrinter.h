//===- IRPrinter.h - ridge's stable text form of the IR ---------*- C++ -*-===//
#ifndef RIDGE_ANALYZER_IR_IRPRINTER_H
#define RIDGE_ANALYZER_IR_IRPRINTER_H

#include "analyzer/ir/IR.h"
#include "llvm/Support/raw_ostream.h"

namespace ridge {

/// Writes the IR in ridge's stable text form (topological order).
void printModel(const Model &M, llvm::raw_ostream &OS);

} // namespace ridge

#endif
