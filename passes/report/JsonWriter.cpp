//===- JsonWriter.cpp - Every JSON document ridge prints ------------------===//
#include "passes/report/JsonWriter.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include <charconv>
#include <cmath>

using namespace llvm;

namespace {

/// The double D as shortest round-trip text; false when D is better printed
/// by llvm::json (an integer, or not finite: llvm's text for those is kept).
bool shortestDouble(const json::Value &V, SmallVectorImpl<char> &Out) {
  std::optional<double> D = V.getAsNumber();
  if (!D || !std::isfinite(*D))
    return false;
  // An int64 or uint64, or a double "%.17g" prints as its integer digits.
  // (getAsInteger converts a double up to double(INT64_MAX) = 2^63 to
  // int64_t, undefined at 2^63 itself: a double that large is no int64.)
  if (V.getAsUINT64())
    return false;
  if (*D < 0x1p63)
    if (std::optional<int64_t> I = V.getAsInteger(); I && double(*I) == *D)
      return false;
  char Buf[32];
  auto [End, Ec] = std::to_chars(Buf, Buf + sizeof(Buf), *D);
  if (Ec != std::errc())
    return false;
  Out.assign(Buf, End);
  return true;
}

} // namespace

void ridge::writeJson(json::OStream &J, const json::Value &V) {
  switch (V.kind()) {
  case json::Value::Number: {
    SmallString<32> Text;
    if (shortestDouble(V, Text))
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
