//===- SafeText.cpp - Model strings made safe for a terminal ---------------===//
#include "analyzer/SafeText.h"
#include "llvm/Support/Format.h"

using namespace ridge;

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace {

bool isC0OrDel(unsigned char C) { return C < 0x20 || C == 0x7f; }

/// The first byte at or after I that is not plain printable ASCII, a line
/// break or a tab (S.size() when none is): what a report writes is nearly
/// all such bytes, 16 at a time where SSE2 is.
size_t skipPlain(llvm::StringRef S, size_t I) {
  const char *P = S.data();
  size_t N = S.size();
#if defined(__SSE2__)
  const __m128i Space = _mm_set1_epi8(0x20), Line = _mm_set1_epi8('\n'),
                Tab = _mm_set1_epi8('\t'), Del = _mm_set1_epi8(0x7f);
  for (; I + 16 <= N; I += 16) {
    __m128i B = _mm_loadu_si128(reinterpret_cast<const __m128i *>(P + I));
    // Signed: bytes from 0x80 compare below 0x20 too.
    __m128i Low = _mm_andnot_si128(_mm_or_si128(_mm_cmpeq_epi8(B, Line), _mm_cmpeq_epi8(B, Tab)),
                                   _mm_cmplt_epi8(B, Space));
    int Mask = _mm_movemask_epi8(_mm_or_si128(Low, _mm_cmpeq_epi8(B, Del)));
    if (Mask)
      return I + __builtin_ctz(unsigned(Mask));
  }
#endif
  for (; I < N; ++I) {
    unsigned char C = P[I];
    if ((C < 0x20 && C != '\n' && C != '\t') || C >= 0x7f)
      return I;
  }
  return N;
}

void escapeByte(llvm::raw_ostream &OS, unsigned C) {
  OS << llvm::format("\\u%04x", C);
}

/// Writes S to OS, control characters but line breaks and tabs escaped,
/// tracking UTF-8 sequences across calls in PendingC2 and Continuations.
void writeEscaped(llvm::raw_ostream &OS, llvm::StringRef S, bool &PendingC2,
                  unsigned &Continuations) {
  size_t Clean = 0; // start of the run of bytes written as they are
  auto Flush = [&](size_t To) {
    if (To > Clean)
      OS.write(S.data() + Clean, To - Clean);
  };
  for (size_t I = 0; I < S.size(); ++I) {
    if (!PendingC2 && Continuations == 0) {
      I = skipPlain(S, I);
      if (I == S.size())
        break;
    }
    unsigned char C = S[I];
    if (PendingC2) {
      // 0xC2 before this byte: U+0080..U+009F is a C1 control.
      PendingC2 = false;
      if (C >= 0x80 && C <= 0x9f) {
        escapeByte(OS, C);
        Clean = I + 1;
        continue;
      }
      OS << char(0xc2);
      if (C >= 0xa0 && C <= 0xbf) // the rest of a valid two-byte character
        continue;
    }
    if (Continuations > 0 && C >= 0x80 && C <= 0xbf) {
      --Continuations;
      continue;
    }
    Continuations = 0;
    bool Escape = false;
    if (isC0OrDel(C))
      Escape = C != '\n' && C != '\t';
    else if (C >= 0x80 && C <= 0x9f) // a lone byte an 8-bit terminal reads as C1
      Escape = true;
    if (Escape) {
      Flush(I);
      escapeByte(OS, C);
      Clean = I + 1;
      continue;
    }
    if (C == 0xc2) {
      Flush(I);
      PendingC2 = true;
      Clean = I + 1;
      continue;
    }
    if (C >= 0xc3 && C <= 0xdf)
      Continuations = 1;
    else if (C >= 0xe0 && C <= 0xef)
      Continuations = 2;
    else if (C >= 0xf0 && C <= 0xf4)
      Continuations = 3;
  }
  Flush(S.size());
}

} // namespace

std::string ridge::escapeControls(llvm::StringRef S) {
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  bool PendingC2 = false;
  unsigned Continuations = 0;
  writeEscaped(OS, S, PendingC2, Continuations);
  if (PendingC2)
    OS << char(0xc2);
  return Out;
}

ControlEscapingStream::~ControlEscapingStream() {
  flush();
  releaseHeldByte();
}

void ControlEscapingStream::releaseHeldByte() {
  if (PendingC2)
    Under << char(0xc2);
  PendingC2 = false;
}

void ControlEscapingStream::write_impl(const char *Ptr, size_t Size) {
  writeEscaped(Under, llvm::StringRef(Ptr, Size), PendingC2, Continuations);
}

llvm::raw_ostream &ControlEscapingStream::changeColor(enum Colors Color, bool Bold, bool BG) {
  flush();
  releaseHeldByte();
  Under.changeColor(Color, Bold, BG);
  return *this;
}

llvm::raw_ostream &ControlEscapingStream::resetColor() {
  flush();
  releaseHeldByte();
  Under.resetColor();
  return *this;
}
