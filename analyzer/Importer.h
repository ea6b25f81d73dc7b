//===- Importer.h - ONNX ModelProto to ridge IR -----------------*- C++ -*-===//
//
// The one boundary between protobuf and the IR (onnx-mlir's
// FrontendDialectTransformer plays this role there). It validates what the
// analyses rely on: known element types, non-negative dims, every node input
// defined, a topological order (a cycle is an error), known opsets.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_IMPORTER_H
#define RIDGE_ANALYZER_IMPORTER_H

#include "analyzer/Diagnostics.h"
#include "analyzer/IR.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace onnx {
class ModelProto;
}

namespace ridge {

/// Newest ai.onnx opset ridge accepts (ONNX 1.19). Opsets past ONNX 1.12's
/// (17) load with a warning: shape inference has no schemas for them.
constexpr int64_t MaxKnownOnnxOpset = 24;
constexpr int64_t MaxInferableOnnxOpset = 17;

/// Imports Proto (already shape-inferred). File names the model in errors;
/// ModelDir is where external data locations are resolved.
llvm::Expected<std::unique_ptr<Model>>
importModel(const onnx::ModelProto &Proto, llvm::StringRef File,
            llvm::StringRef ModelDir, DiagnosticEngine &Diags);

} // namespace ridge

#endif
