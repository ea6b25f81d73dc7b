//===- Markup.h - Text from a model made safe for HTML and SVG --*- C++ -*-===//
//
// A model is untrusted input: every string of it (node, value and graph
// names, doc strings, metadata, device names) that lands in a chart or a page
// goes through xmlText.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_REPORT_MARKUP_H
#define RIDGE_PASSES_REPORT_MARKUP_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace ridge {

/// S as XML/HTML character data or attribute text: valid UTF-8 (a bad byte
/// becomes U+FFFD), no characters XML forbids, tabs and line breaks as
/// spaces, the five special characters escaped (& < > " '), and at most
/// MaxChars characters (then an ellipsis).
std::string xmlText(llvm::StringRef S, size_t MaxChars = 160);

} // namespace ridge

#endif
