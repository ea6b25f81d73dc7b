//===- JsonWriter.cpp - Every JSON document ridge prints ------------------===//
#include "passes/report/JsonWriter.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include <charconv>
#include <cmath>

using namespace llvm;

namespace {

/// The number V's text, as llvm::json prints it but faster: an integral
/// double below 1e17 as its integer digits (what "%.17g" prints for it, but
/// through std::to_chars: snprintf was most of the time a large document
/// took); any other finite non-integral double, or one of 2^63 or more, in
/// the shortest form that reads back to it. False when llvm's text is kept
/// (an int64 or uint64, -0, a double of 1e17 or more that is an int64, or
/// not finite).
bool numberText(const json::Value &V, SmallVectorImpl<char> &Out) {
  std::optional<double> D = V.getAsNumber();
  if (!D || !std::isfinite(*D))
    return false;
  if (V.getAsUINT64())
    return false;
  auto Print = [&Out](auto X) {
    char Buf[32];
    auto [End, Ec] = std::to_chars(Buf, Buf + sizeof(Buf), X);
    if (Ec != std::errc())
      return false;
    Out.assign(Buf, End);
    return true;
  };
  // (getAsInteger converts a double up to double(INT64_MAX) = 2^63 to
  // int64_t, undefined at 2^63 itself: a double that large is no int64.)
  if (*D < 0x1p63)
    if (std::optional<int64_t> I = V.getAsInteger(); I && double(*I) == *D) {
      if (!(std::fabs(*D) < 1e17) || (*D == 0 && std::signbit(*D)))
        return false; // "%.17g" prints an exponent, or "-0"
      return Print(*I);
    }
  return Print(*D);
}

} // namespace

void ridge::writeJson(json::OStream &J, const json::Value &V) {
  switch (V.kind()) {
  case json::Value::Number: {
    // JSON has no infinity or NaN (llvm::json would print "inf"): null, so
    // that every document parses.
    if (std::optional<double> D = V.getAsNumber(); D && !std::isfinite(*D)) {
      J.value(nullptr);
      return;
    }
    SmallString<32> Text;
    if (numberText(V, Text))
      J.rawValue(Text.str());
    else
      J.value(V);
    return;
  }
  case json::Value::Array:
    J.array([&] {
      for (const json::Value &E : *V.getAsArray())
        writeJson(J, E);
    });
    return;
  case json::Value::Object: {
    const json::Object &O = *V.getAsObject();
    SmallVector<const json::Object::value_type *, 16> Sorted;
    for (const auto &E : O)
      Sorted.push_back(&E);
    llvm::sort(Sorted, [](const auto *L, const auto *R) { return L->first < R->first; });
    J.object([&] {
      for (const auto *E : Sorted) {
        J.attributeBegin(E->first);
        writeJson(J, E->second);
        J.attributeEnd();
      }
    });
    return;
  }
  default:
    J.value(V);
    return;
  }
}

void ridge::printJson(raw_ostream &OS, const json::Value &V) {
  {
    json::OStream J(OS, 2);
    writeJson(J, V);
  }
  OS << "\n";
}
