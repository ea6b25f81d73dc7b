//===- JsonWriter.h - Every JSON document ridge prints ----------*- C++ -*-===//
//
// llvm::json prints as it parses: objects with their keys sorted, indent 2.
// Its doubles are "%.17g" (0.85 prints 0.84999999999999998, 5e-6
// 5.0000000000000004e-06): exact but noisy, and snprintf is most of the
// time a large document takes. writeJson prints the same document with each
// non-integral double in the shortest form that reads back as the same
// double (std::to_chars): 0.85, 5e-06. Integers print as before.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_JSONWRITER_H
#define RIDGE_PASSES_REPORT_JSONWRITER_H

#include "llvm/Support/JSON.h"

namespace ridge {

/// V into J, as J.value(V) would but for the doubles (see above).
void writeJson(llvm::json::OStream &J, const llvm::json::Value &V);
/// V as a whole document, indent 2, and a newline.
void printJson(llvm::raw_ostream &OS, const llvm::json::Value &V);

} // namespace ridge

#endif
