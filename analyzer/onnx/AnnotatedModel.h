//===- AnnotatedModel.h - Write a model back with ridge's findings -*- C++ -*-===//
//
// `--annotate OUT.onnx`: the input model rewritten at the wire level with
//  - a value_info (GraphProto field 13) for every value given a shape,
//    symbolic dims as dim_param; graph outputs given a shape get it in
//    place (field 12);
//  - metadata_props on each node (NodeProto field 9, ONNX 1.16's; older
//    readers keep it as an unknown field) and on the model (ModelProto
//    field 14), replacing entries of the same prefix a previous run wrote.
// Every other byte is copied as it lies in the input: initializers are never
// decoded, payloads of a MiB or more are streamed from the file in chunks
// (peak memory is the graph's structure, not the weights), external data
// keeps its references. Text models (.onnxtxt) are written in binary form.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_ONNX_ANNOTATEDMODEL_H
#define RIDGE_ANALYZER_ONNX_ANNOTATEDMODEL_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ridge {

using Props = std::vector<std::pair<std::string, std::string>>;

/// A tensor type to write: an ONNX element type code and dims, each a
/// value (>= 0), a dim_param (Param non-empty) or unknown (neither).
struct AnnotatedType {
  int32_t ElemType = 0;
  struct Dim {
    int64_t Value = -1;
    std::string Param;
  };
  std::vector<Dim> Dims;
};

struct ModelAnnotations {
  /// Keys written by this tool start with Prefix; entries with that prefix
  /// already in the file are dropped.
  std::string Prefix = "ridge.";
  Props ModelProps;
  /// Per node of the main graph, by its first output's name (a node with
  /// no outputs: by "name:" and its name). A call of a model-local function
  /// (FunctionOps) is looked up as "call:" and its name (unnamed: op type,
  /// '_', its index, as the importer names it) and '/': the props of its
  /// inlined body, whose nodes ridge names with that prefix.
  llvm::StringMap<Props> NodeProps;
  /// The model-local functions, as domain + '\x1f' + name.
  llvm::StringSet<> FunctionOps;
  /// value_info entries, in order; a value_info of the same name already in
  /// the file is replaced.
  std::vector<std::pair<std::string, AnnotatedType>> ValueInfos;
  /// Graph outputs whose type is replaced.
  llvm::StringMap<AnnotatedType> OutputTypes;
};

struct AnnotateStats {
  size_t NodesAnnotated = 0, NodesNotFound = 0; ///< main-graph nodes of the file
  uint64_t BytesCopied = 0;                     ///< input bytes written as they lie
};

/// The checks writeAnnotatedModel makes before reading anything: InPath is
/// a file (not "-") and OutPath is not InPath. Lets the driver refuse before
/// it analyzes.
llvm::Error checkAnnotateTarget(llvm::StringRef InPath, llvm::StringRef OutPath);

/// Writes InPath annotated with A to OutPath (through a temporary file in
/// OutPath's folder, renamed into place). Errors, each naming the file:
/// OutPath is InPath; InPath is "-"; the input cannot be read or is not a
/// ModelProto with a graph; OutPath cannot be written.
llvm::Expected<AnnotateStats> writeAnnotatedModel(llvm::StringRef InPath,
                                                  llvm::StringRef OutPath,
                                                  const ModelAnnotations &A);

} // namespace ridge

#endif
