//===- DType.h - ONNX element types: names, sizes, classes ------*- C++ -*-===//
#ifndef RIDGE_ANALYZER_IR_DTYPE_H
#define RIDGE_ANALYZER_IR_DTYPE_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>

namespace ridge {

enum class DType : uint8_t {
  Undefined = 0,
#define RIDGE_DTYPE(Enum, Code, Bits, Name) Enum = Code,
#include "analyzer/ir/DTypes.def"
};

/// Maps an ONNX TensorProto::DataType code; nullopt for codes ridge does not know.
std::optional<DType> dtypeFromOnnx(int32_t Code);
/// Short printed name ("f32", "bf16", ...); "undef" for Undefined.
llvm::StringRef dtypeName(DType T);
/// Parses a short name or a common spelling ("float32", "bfloat16", "fp16").
std::optional<DType> parseDType(llvm::StringRef Name);
/// Storage size in bits of one element (0 for strings and Undefined).
unsigned dtypeBits(DType T);
/// Bytes of one element as a real number (a 4-bit type is 0.5).
inline double dtypeBytes(DType T) { return dtypeBits(T) / 8.0; }
bool isFloatingPoint(DType T);

} // namespace ridge

#endif
