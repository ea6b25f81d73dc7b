//===- OnnxWire.h - ONNX messages decoded in place from the wire format -*- C++ -*-===//
//
// The importer reads a model through these structs, never through protobuf's
// generated classes: strings are StringRefs into the bytes decoded (a
// memory-mapped file, or what protobuf serialized), tensor payloads are
// decoded only when small (the lean reader's rule), and a 100k-node graph
// costs no protobuf objects (71 MB and a single-threaded parse before).
//
// The decoder follows protobuf's parsing rules for ONNX 1.12's onnx-ml.proto
// (the variant Debian's libonnx is built with):
// the last of a repeated singular scalar wins, a singular message given twice
// is merged, a oneof keeps its last member, packed and unpacked repeated
// scalars are both read, a known field with an unexpected wire type is an
// unknown field (skipped), and an enum value out of range leaves the field
// as it was.
//
// Strict mode is for a file's own bytes: decodeModel returns false for
// anything it does not check as protobuf would (malformed bytes, nesting
// deeper than MaxDepth, and fields whose contents it does not decode:
// functions, training_info, metadata_props, quantization_annotation, sparse
// tensors, non-tensor types, type-proto attributes). The loader then takes
// the protobuf path, which reports malformed files, inlines functions and
// serializes what it parsed for this decoder in trusted mode, where those
// fields are accepted (their presence noted, their contents skipped).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_ONNX_ONNXWIRE_H
#define RIDGE_ANALYZER_ONNX_ONNXWIRE_H

#include "analyzer/onnx/LeanReader.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <memory>
#include <vector>

namespace ridge::wire {

/// A tensor's typed payload lists, apart from the tensor: most tensors have
/// none (weights are raw or skipped), and a million of them would carry
/// 120 bytes of empty vectors each.
struct TensorLists {
  std::vector<float> FloatData;
  std::vector<int32_t> Int32Data;
  std::vector<int64_t> Int64Data;
  std::vector<double> DoubleData;
  std::vector<uint64_t> Uint64Data;
};

struct Tensor {
  llvm::StringRef Name;
  int32_t DataType = 0;
  int32_t DataLocation = 0;       ///< 1: EXTERNAL
  llvm::SmallVector<int64_t, 4> Dims;
  llvm::StringRef Location;       ///< the last external_data "location" value
  /// Payload, decoded only when its fields total at most KeepPayloadBytes.
  bool HasRaw = false;
  llvm::StringRef Raw;
  /// The typed lists; all empty when none was decoded.
  const TensorLists &lists() const {
    static const TensorLists None;
    return Lists ? *Lists : None;
  }
  TensorLists &mutableLists() {
    if (!Lists)
      Lists = std::make_unique<TensorLists>();
    return *Lists;
  }

private:
  std::unique_ptr<TensorLists> Lists;
};

struct SparseTensor {
  Tensor Values, Indices;
  llvm::SmallVector<int64_t, 4> Dims;
};

struct Dimension {
  enum class Kind : uint8_t { None, Value, Param } K = Kind::None;
  int64_t Value = 0;
  llvm::StringRef Param;
};

/// TypeProto: its oneof member; for tensor_type, elem_type and shape.
/// (Opaque is onnx-ml.proto's opaque_type, 7: Debian's libonnx is built with
/// ONNX_ML.)
struct Type {
  enum class Kind : uint8_t { None, Tensor, Sequence, Map, Optional, SparseTensor, Opaque };
  Kind K = Kind::None;
  int32_t ElemType = 0;
  bool HasShape = false;
  llvm::SmallVector<Dimension, 4> Dims;
};

struct ValueInfo {
  llvm::StringRef Name;
  Type Ty;
};

struct Graph;

/// Messages that hold subgraphs are moved, never copied (std::vector then
/// moves them when it grows).
struct MoveOnly {
  MoveOnly() = default;
  MoveOnly(MoveOnly &&) noexcept = default;
  MoveOnly &operator=(MoveOnly &&) noexcept = default;
  MoveOnly(const MoveOnly &) = delete;
  MoveOnly &operator=(const MoveOnly &) = delete;
};

struct Attribute : MoveOnly {
  llvm::StringRef Name;
  int32_t Type = 0; ///< AttributeProto.AttributeType; 0 when unset
  bool HasF = false, HasI = false, HasS = false, HasT = false, HasG = false;
  float F = 0;
  int64_t I = 0;
  llvm::StringRef S;
  Tensor T;
  std::unique_ptr<Graph> G;
  std::vector<float> Floats;
  std::vector<int64_t> Ints;
  std::vector<llvm::StringRef> Strings;
  std::vector<Tensor> Tensors;
  std::vector<Graph> Graphs;
};

struct Node : MoveOnly {
  llvm::StringRef Name, OpType, Domain;
  llvm::SmallVector<llvm::StringRef, 4> Inputs;
  llvm::SmallVector<llvm::StringRef, 2> Outputs;
  std::vector<Attribute> Attrs;
};

struct Graph : MoveOnly {
  llvm::StringRef Name;
  /// Each NodeProto's bytes: checked when the graph was decoded, and decoded
  /// again by decodeNode where read (kept decoded, a million nodes took
  /// 200 MB while both of plan's imports read them).
  std::vector<llvm::StringRef> Nodes;
  /// The outputs those nodes list (counted by the decode: the importer sizes
  /// its tables by it).
  size_t NumNodeOutputs = 0;
  /// Each initializer's TensorProto bytes, checked and decoded again by
  /// decodeInitializer as Nodes are (kept decoded, a generated graph's half
  /// million weights took 65 MB at the import's peak).
  std::vector<llvm::StringRef> Initializers;
  std::vector<SparseTensor> SparseInitializers;
  std::vector<ValueInfo> Inputs, Outputs, ValueInfos;
};

struct OpsetId {
  llvm::StringRef Domain;
  int64_t Version = 0;
};

struct Function : MoveOnly {
  llvm::StringRef Name, Domain;
  std::vector<llvm::StringRef> AttributeNames;
  /// The body as a graph: the formal inputs and outputs (names only) and
  /// the nodes.
  Graph Body;
  std::vector<OpsetId> Opsets;
};

/// Payloads and nesting are limited as the lean reader limits them.
struct DecodeOptions {
  bool Strict = true;
  uint64_t KeepPayloadBytes = LeanReadOptions().KeepPayloadBytes;
  unsigned MaxDepth = LeanReadOptions().MaxDepth;
};

struct Model {
  /// What decodeModel was given (decodeNode reads the nodes with them).
  DecodeOptions Opts;
  int64_t IrVersion = 0;
  llvm::StringRef ProducerName, ProducerVersion;
  std::vector<OpsetId> Opsets;
  bool HasGraph = false;
  Graph G;
  std::vector<Function> Functions;
  /// Tensor payload bytes not decoded (fields of tensors over the limit).
  uint64_t SkippedPayloadBytes = 0;
};

/// For bytes protobuf serialized itself: every field accepted, nesting up to
/// protobuf's own limit (100).
DecodeOptions trustedDecode();

/// Decodes the ModelProto in Bytes into M (which refers into Bytes). False
/// when the bytes are malformed or, in strict mode, hold what strict mode
/// leaves to protobuf (see the file comment).
bool decodeModel(llvm::StringRef Bytes, Model &M, const DecodeOptions &Opts = {});
/// Decodes one NodeProto of a graph that decodeModel accepted with Opts
/// (Graph::Nodes) into N, cleared first: what that decode checked. False only
/// for bytes it did not accept.
bool decodeNode(llvm::StringRef Bytes, Node &N, const DecodeOptions &Opts);
/// Decodes one initializer of a graph that decodeModel accepted with Opts
/// (Graph::Initializers) into T, cleared first; its skipped payload bytes
/// were counted by that decode. False only for bytes it did not accept.
bool decodeInitializer(llvm::StringRef Bytes, Tensor &T, const DecodeOptions &Opts);
/// The name of one initializer of a graph decodeModel accepted, read
/// without decoding the rest.
llvm::StringRef initializerName(llvm::StringRef Bytes);
/// Decodes one TensorProto (callers holding a protobuf pass trustedDecode()).
bool decodeTensor(llvm::StringRef Bytes, Tensor &T, const DecodeOptions &Opts = {});

} // namespace ridge::wire

#endif
