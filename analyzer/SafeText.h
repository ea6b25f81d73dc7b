//===- SafeText.h - Model strings made safe for a terminal ------*- C++ -*-===//
//
// A model's names, op types and domains are untrusted: an escape sequence in
// a node's name would reach the user's terminal through every report and
// diagnostic that prints it (set the window title, recolor or rewrite lines).
// What ridge writes as text (stdout or -o FILE in text, CSV and JSON, and
// its errors and warnings on stderr) passes through here, with each control
// character written as \u00XX: C0 (but line breaks and tabs, which reports
// and multi-line errors need: a name's own line break still breaks a text
// table's row), DEL and C1 (U+0080..U+009F, as UTF-8 and as lone bytes). JSON strings
// already escape C0; \u00XX is also what JSON escapes the rest with, so a
// JSON document stays valid. HTML and SVG have their own escaping (Markup.h).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_SAFETEXT_H
#define RIDGE_ANALYZER_SAFETEXT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include <string>

namespace ridge {

/// S with its control characters escaped (line breaks and tabs kept).
std::string escapeControls(llvm::StringRef S);

/// A stream that writes to Under with control characters escaped, line
/// breaks and tabs kept. Colors (changeColor, resetColor) are Under's:
/// what a report colors on a terminal is not text from the model.
class ControlEscapingStream : public llvm::raw_ostream {
public:
  explicit ControlEscapingStream(llvm::raw_ostream &Under) : Under(Under) {}
  ~ControlEscapingStream() override;

  raw_ostream &changeColor(enum Colors Color, bool Bold, bool BG) override;
  raw_ostream &resetColor() override;
  bool is_displayed() const override { return Under.is_displayed(); }
  bool has_colors() const override { return Under.has_colors(); }
  void enable_colors(bool Enable) override { Under.enable_colors(Enable); }
  /// Writes a lead byte held back at the end of what was written (the
  /// stream's end: the destructor does it too).
  void releaseHeldByte();

private:
  llvm::raw_ostream &Under;
  /// A UTF-8 lead byte 0xC2 held back until the next byte says whether it
  /// starts a C1 control; continuation bytes still owed to a valid lead.
  bool PendingC2 = false;
  unsigned Continuations = 0;

  void write_impl(const char *Ptr, size_t Size) override;
  uint64_t current_pos() const override { return Under.tell(); }
};

} // namespace ridge

#endif
