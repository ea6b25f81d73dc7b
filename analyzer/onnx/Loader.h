//===- Loader.h - Load an ONNX model file into the IR -----------*- C++ -*-===//
#ifndef RIDGE_ANALYZER_ONNX_LOADER_H
#define RIDGE_ANALYZER_ONNX_LOADER_H

#include "analyzer/Diagnostics.h"
#include "analyzer/ir/IR.h"
#include "analyzer/onnx/LeanReader.h"
#include "analyzer/Timing.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>
#include <string>
#include <vector>

namespace ridge {

struct LoadOptions {
  /// --dim NAME=N: binds a symbolic dim everywhere it appears.
  std::vector<std::pair<std::string, int64_t>> DimBindings;
  /// --input-shape NAME=AxBxC: replaces a graph input's shape. A dim of
  /// SymbolDim is the symbol SymbolDimName (a fixed-batch export's dim 0
  /// made the batch symbol by loadModelAtBatch).
  std::vector<std::pair<std::string, std::vector<int64_t>>> InputShapes;
  static constexpr int64_t SymbolDim = -2;
  std::string SymbolDimName;
  /// Symbols renamed to another (a second name of the batch), as a file
  /// would have named them.
  std::vector<std::pair<std::string, std::string>> DimRenames;
  bool InferShapes = true;
  /// An inferred shape that contradicts the file's declared one, or a dim
  /// that overflows, at bound dims: an error (the user's binding is at
  /// fault); false: a warning (ridge plan binds the batch itself and says
  /// what a fixed-batch export does).
  bool ConflictsAreErrors = true;
  /// The caller costs symbolic dims as formulas (`ridge analyze`): only
  /// values with an unknown dim or rank are warned about, not those whose
  /// dims are expressions of free symbols.
  bool SymbolicShapesCosted = false;
  LeanReadOptions Lean;
  Timing *Timer = nullptr; ///< --timing: phases "read", "parse", ...
};

/// A model file read and decoded once (weights skipped, model-local
/// functions inlined), from which the IR can be built any number of times
/// with different dim bindings: `ridge plan` needs the graph at two batch
/// sizes and decodes it once. load() only reads what open() decoded (and
/// parses protobuf objects once, under a lock, if ONNX's shape inference is
/// needed), so two threads may load from one source at once.
class ModelSource {
public:
  ~ModelSource();
  /// Reads and parses a binary .onnx, a textual .onnxtxt, or "-" (stdin,
  /// either form). Errors name the file. Only Opts.Lean and Opts.Timer are
  /// read here.
  static llvm::Expected<std::unique_ptr<ModelSource>> open(llvm::StringRef Path,
                                                           const LoadOptions &Opts);
  /// The same for a model already in memory (the Python module's bytes),
  /// named Path in messages; external data is looked up beside Path.
  static llvm::Expected<std::unique_ptr<ModelSource>>
  openBuffer(std::unique_ptr<llvm::MemoryBuffer> Buffer, llvm::StringRef Path,
             const LoadOptions &Opts);
  /// Imports the graph, applies Opts' dim bindings and input shapes, and
  /// infers shapes. Warnings (missing external data, shapes left unknown,
  /// relaxed shape inference) go to Diags.
  llvm::Expected<std::unique_ptr<Model>> load(const LoadOptions &Opts,
                                              DiagnosticEngine &Diags) const;
  llvm::StringRef path() const { return Path; }
  /// Nodes of the main graph as the file lists them (subgraphs not counted).
  size_t numNodes() const;

  /// A graph input as the file declares it (initializers excluded).
  struct Input {
    std::string Name;
    bool Ranked = false;
    std::vector<Dim> Dims;
  };
  const std::vector<Input> &inputs() const { return Inputs; }

  struct Parsed;

private:
  ModelSource() = default;
  std::string Path;
  std::unique_ptr<Parsed> P;
  std::vector<Input> Inputs;
};

/// ModelSource::open then load.
llvm::Expected<std::unique_ptr<Model>>
loadModel(llvm::StringRef Path, const LoadOptions &Opts, DiagnosticEngine &Diags);

/// Loads Src with its batch dimension bound to Batch: the symbolic dims
/// BatchDim names (comma-separated) if any, else the first graph input's
/// dim 0 when symbolic, else dim 0 of every graph input that has the first
/// input's is replaced (a fixed-batch export). Warns of input dims left
/// symbolic. Who names what sets the batch, in messages ("plan": its
/// micro-batch; "analyze --batch").
/// Batch = SymbolicBatch leaves the batch free: one symbol (the first
/// batch dim's name, the others renamed to it; "batch" in a fixed-batch
/// export), recorded in Model::BatchSymbol.
llvm::Expected<std::unique_ptr<Model>>
loadModelAtBatch(const ModelSource &Src, const LoadOptions &Opts, llvm::StringRef BatchDim,
                 int64_t Batch, DiagnosticEngine &Diags, llvm::StringRef Who = "plan");
constexpr int64_t SymbolicBatch = -1;

/// The model in Bytes (read from Path) as binary protobuf: Bytes itself
/// when binary (Binary set, Out untouched), else the ONNX text syntax
/// parsed and serialized into Out (Binary cleared). Errors name Path.
llvm::Error modelAsBinary(llvm::StringRef Path, llvm::StringRef Bytes, std::string &Out,
                          bool &Binary);

/// The binary model in Bytes as protobuf parses it, serialized again into
/// Out: the canonical form of a file whose framing protobuf reads more
/// leniently than ridge's wire reader (a key varint past 32 bits, which it
/// truncates). Payloads included: for such files only. Errors name Path.
llvm::Error reserializeModel(llvm::StringRef Path, llvm::StringRef Bytes, std::string &Out);

/// Parses "NAME=N" for --dim.
llvm::Expected<std::pair<std::string, int64_t>> parseDimBinding(llvm::StringRef S);
/// Parses "NAME=1x3x224x224" for --input-shape.
llvm::Expected<std::pair<std::string, std::vector<int64_t>>>
parseInputShape(llvm::StringRef S);

} // namespace ridge

#endif
