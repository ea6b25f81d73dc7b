//===- DType.cpp - ONNX element types -------------------------------------===//
#include "analyzer/ir/DType.h"
#include "llvm/ADT/StringSwitch.h"

using namespace ridge;

std::optional<DType> ridge::dtypeFromOnnx(int32_t Code) {
  switch (Code) {
#define RIDGE_DTYPE(Enum, Code, Bits, Name)                                    \
  case Code:                                                                   \
    return DType::Enum;
#include "analyzer/ir/DTypes.def"
  default:
    return std::nullopt;
  }
}

llvm::StringRef ridge::dtypeName(DType T) {
  switch (T) {
  case DType::Undefined:
    return "undef";
#define RIDGE_DTYPE(Enum, Code, Bits, Name)                                    \
  case DType::Enum:                                                            \
    return Name;
#include "analyzer/ir/DTypes.def"
  }
  return "undef";
}

unsigned ridge::dtypeBits(DType T) {
  switch (T) {
  case DType::Undefined:
    return 0;
#define RIDGE_DTYPE(Enum, Code, Bits, Name)                                    \
  case DType::Enum:                                                            \
    return Bits;
#include "analyzer/ir/DTypes.def"
  }
  return 0;
}

std::optional<DType> ridge::parseDType(llvm::StringRef Name) {
  std::string Lower = Name.lower();
  auto Alias = llvm::StringSwitch<std::optional<DType>>(Lower)
                   .Cases("fp32", "float32", "float", DType::Float)
                   .Cases("fp16", "float16", "half", DType::Float16)
                   .Cases("bfloat16", "bf16", DType::BFloat16)
                   .Cases("fp64", "float64", "double", DType::Double)
                   .Cases("fp8", "float8", DType::Float8E4M3FN)
                   .Case("int8", DType::Int8)
                   .Default(std::nullopt);
  if (Alias)
    return Alias;
#define RIDGE_DTYPE(Enum, Code, Bits, Name)                                    \
  if (Lower == Name)                                                           \
    return DType::Enum;
#include "analyzer/ir/DTypes.def"
  return std::nullopt;
}

bool ridge::isFloatingPoint(DType T) {
  switch (T) {
  case DType::Float:
  case DType::Float16:
  case DType::Double:
  case DType::BFloat16:
  case DType::Float8E4M3FN:
  case DType::Float8E4M3FNUZ:
  case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
  case DType::Float4E2M1:
    return true;
  default:
    return false;
  }
}
