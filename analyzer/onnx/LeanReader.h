//===- LeanReader.h - Read an ONNX model's structure, skipping weights -*- C++ -*-===//
//
// A binary ONNX file is mostly tensor payload. ridge needs only the graph, so
// this reader walks the protobuf wire format of a ModelProto and copies every
// field except large tensor payloads (raw_data, *_data) and doc strings into a
// small buffer that protobuf then parses. The file is memory-mapped and the
// skipped bytes are never touched, so peak memory is O(graph), not O(file),
// and files beyond protobuf's 2 GiB limit load.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_ONNX_LEANREADER_H
#define RIDGE_ANALYZER_ONNX_LEANREADER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <string>

namespace ridge {

struct LeanReadOptions {
  /// Tensor payloads of at most this many bytes are kept: shape inference
  /// needs the values of small constants (Reshape targets, Slice bounds, ...).
  uint64_t KeepPayloadBytes = 4096;
  /// Deepest message nesting accepted (graphs inside attributes inside nodes).
  unsigned MaxDepth = 64;
};

/// TensorProto fields that carry element data: float_data, int32_data,
/// string_data, int64_data, raw_data, double_data, uint64_data. (The
/// in-place decoder, analyzer/onnx/OnnxWire.h, skips the same ones.)
inline bool isTensorPayloadField(uint64_t Field) {
  return Field == 4 || Field == 5 || Field == 6 || Field == 7 || Field == 9 ||
         Field == 10 || Field == 11;
}

struct LeanReadStats {
  uint64_t SkippedPayloadBytes = 0; ///< tensor payload bytes not copied
  uint64_t SkippedTensors = 0;      ///< tensors whose payload was dropped
};

/// Filters the serialized ModelProto in Bytes into Out. Errors name the byte
/// offset of the fault ("truncated field 7 at offset 1234").
llvm::Error leanFilterModel(llvm::StringRef Bytes, std::string &Out,
                            LeanReadStats &Stats,
                            const LeanReadOptions &Opts = {});

} // namespace ridge

#endif
