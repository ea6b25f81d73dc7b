//===- Markup.cpp - Text from a model made safe for HTML and SVG ----------===//
#include "passes/report/Markup.h"
#include <cstdint>

std::string ridge::xmlText(llvm::StringRef S, size_t MaxChars) {
  std::string Out;
  size_t Chars = 0;
  for (size_t I = 0; I < S.size();) {
    if (Chars == MaxChars) {
      Out += "\xE2\x80\xA6"; // ellipsis
      break;
    }
    ++Chars;
    unsigned char B = S[I];
    uint32_t CP = 0;
    size_t Len = 0;
    if (B < 0x80) {
      CP = B;
      Len = 1;
    } else if ((B & 0xE0) == 0xC0) {
      CP = B & 0x1F;
      Len = 2;
    } else if ((B & 0xF0) == 0xE0) {
      CP = B & 0x0F;
      Len = 3;
    } else if ((B & 0xF8) == 0xF0) {
      CP = B & 0x07;
      Len = 4;
    }
    bool Ok = Len > 0 && I + Len <= S.size();
    for (size_t K = 1; Ok && K < Len; ++K) {
      unsigned char C = S[I + K];
      Ok = (C & 0xC0) == 0x80;
      CP = (CP << 6) | (C & 0x3F);
    }
    if (Ok)
      Ok = !(Len == 2 && CP < 0x80) && !(Len == 3 && CP < 0x800) &&
           !(Len == 4 && CP < 0x10000) && CP <= 0x10FFFF &&
           !(CP >= 0xD800 && CP <= 0xDFFF) && CP != 0xFFFE && CP != 0xFFFF;
    if (!Ok) {
      Out += "\xEF\xBF\xBD"; // U+FFFD
      ++I;
      continue;
    }
    switch (CP) {
    case '&': Out += "&amp;"; break;
    case '<': Out += "&lt;"; break;
    case '>': Out += "&gt;"; break;
    case '"': Out += "&quot;"; break;
    case '\'': Out += "&#39;"; break;
    case '\t': case '\n': case '\r': Out += ' '; break;
    default:
      if (CP < 0x20)
        Out += "\xEF\xBF\xBD";
      else
        Out.append(S.data() + I, Len);
    }
    I += Len;
  }
  return Out;
}
