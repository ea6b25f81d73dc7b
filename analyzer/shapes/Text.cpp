//===- Text.cpp - Shape rules: strings and image decoding -----------------===//
#include "analyzer/shapes/Rules.h"
#include <algorithm>

namespace ridge::shapes {

void ruleStringNormalizer(Ctx &C) {
  const Shape *X = C.shape(0);
  if (X && X->rank() == 2)
    C.setDims(0, DType::String, {X->Dims[0], Dim{}});
  else
    C.setDims(0, DType::String, {Dim{}});
}

void ruleTfIdfVectorizer(Ctx &C) {
  const Shape *X = C.shape(0);
  Dim Width;
  if (auto Idx = C.N.attrInts("ngram_indexes"); Idx && !Idx->empty())
    if (int64_t Max = *std::max_element(Idx->begin(), Idx->end()); Max >= 0 && Max < MaxExtent)
      Width = Dim::known(Max + 1);
  if (!X || X->rank() == 0 || X->rank() > 2)
    return C.setType(0, DType::Float);
  if (X->rank() == 1)
    C.setDims(0, DType::Float, {Width});
  else
    C.setDims(0, DType::Float, {X->Dims[0], Width});
}

void ruleImageDecoder(Ctx &C) {
  std::string Format = C.N.attrString("pixel_format", "RGB");
  C.setDims(0, DType::UInt8, {Dim{}, Dim{}, Dim::known(Format == "Grayscale" ? 1 : 3)});
}

void ruleStringSplit(Ctx &C) {
  const Shape *X = C.shape(0);
  if (!X)
    return;
  Shape Y = *X;
  Y.Dims.push_back(Dim{});
  C.set(0, DType::String, std::move(Y));
  C.copy(1, 0, DType::Int64);
}

void ruleStringConcat(Ctx &C) { broadcastRule(C, 0, DType::String); }

} // namespace ridge::shapes
