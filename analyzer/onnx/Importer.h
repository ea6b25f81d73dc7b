//===- Importer.h - ONNX ModelProto to ridge IR -----------------*- C++ -*-===//
//
// The one boundary between ONNX's messages and the IR (onnx-mlir's
// FrontendDialectTransformer plays this role there). It validates what the
// analyses rely on: known element types, non-negative dims, every node input
// defined, a topological order (a cycle is an error), known opsets.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_ONNX_IMPORTER_H
#define RIDGE_ANALYZER_ONNX_IMPORTER_H

#include "analyzer/Diagnostics.h"
#include "analyzer/ir/IR.h"
#include "analyzer/onnx/OnnxWire.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace onnx {
class ModelProto;
class TensorProto;
}

namespace ridge {

/// Newest ai.onnx opset ridge accepts (ONNX 1.19). Opsets past ONNX 1.12's
/// (17) load with a warning: shape inference has no schemas for them.
constexpr int64_t MaxKnownOnnxOpset = 24;
constexpr int64_t MaxInferableOnnxOpset = 17;

/// The elements of a tensor of at most Max elements stored in the file:
/// integer and bool types as int64, floating-point types as double. False
/// when the tensor is larger, external, elided or of another type.
bool smallTensorInts(const wire::Tensor &T, llvm::SmallVectorImpl<int64_t> &Out,
                     int64_t Max = 64);
bool smallTensorFloats(const wire::Tensor &T, llvm::SmallVectorImpl<double> &Out,
                       int64_t Max = 64);
/// The same of a protobuf tensor (serialized and decoded).
bool smallTensorInts(const onnx::TensorProto &T, llvm::SmallVectorImpl<int64_t> &Out,
                     int64_t Max = 64);
bool smallTensorFloats(const onnx::TensorProto &T, llvm::SmallVectorImpl<double> &Out,
                       int64_t Max = 64);

/// Imports a decoded model. File names the model in errors; ModelDir is
/// where external data locations are resolved.
llvm::Expected<std::unique_ptr<Model>>
importModel(const wire::Model &Proto, llvm::StringRef File,
            llvm::StringRef ModelDir, DiagnosticEngine &Diags);
/// Imports a protobuf model (serialized, then decoded).
llvm::Expected<std::unique_ptr<Model>>
importModel(const onnx::ModelProto &Proto, llvm::StringRef File,
            llvm::StringRef ModelDir, DiagnosticEngine &Diags);

} // namespace ridge

#endif
