//===- ShapeInference.h - ridge's own shape and small-value inference -*- C++ -*-===//
//
// Infers the element types and shapes of node outputs on ridge's IR, in one
// pass over the nodes in topological order, without ONNX's C++ inference (too
// slow on 100k-node graphs, and its data propagation stops at common torch
// export patterns such as Shape -> Gather -> Add -> Unsqueeze -> Slice).
//
// Dims are symbolic expressions (analyzer/symbolic/Expr.h): a Conv over a
// dynamic length gives floor((L - 512)/128) + 1, a Reshape's -1 the quotient
// of the element counts. Alongside shapes it propagates the values of small
// integer tensors (any rank, at most 64 elements, row-major): shape vectors,
// axes, Slice bounds, pad lists. An element is known, an expression (Shape
// of a [batch,128] input is [batch,128]) or unknown, so "batch" flows through
// Gather/Concat/Div into a Reshape target and out as a dim. Fully known
// int32/int64/bool values are stored in Value::IntData; an If whose condition
// is known takes its branch. Extents only the data decides (NonZero, NMS,
// Unique, ...) get symbols of their own (ShapeInferenceStats::DataSymbols).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_SHAPES_SHAPEINFERENCE_H
#define RIDGE_ANALYZER_SHAPES_SHAPEINFERENCE_H

#include "analyzer/ir/IR.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <string>
#include <vector>

namespace ridge {

/// A graph output whose inferred shape contradicts the one the file
/// declares for it, or a node output whose dim overflows int64 (a binding
/// too large for the graph's arithmetic).
struct ShapeConflict {
  std::string Node, Value;
  std::string Declared, Inferred; ///< shapes; Declared empty for an overflow
};

struct ShapeInferenceStats {
  /// Nodes of the graph and its subgraphs (not of model-local function bodies).
  size_t Nodes = 0;
  /// Nodes whose every output has a (ranked) shape after inference (or, for
  /// a sequence or optional output, a known element type).
  size_t Inferred = 0;
  /// Nodes with an output left without a shape (Nodes - Inferred).
  size_t Unknown = 0;
  /// Op types ridge has no rule for, deduplicated, sorted: "Op" for the
  /// default domain, "domain:Op" otherwise.
  std::vector<std::string> UnknownOps;
  /// Symbols made for data-dependent extents, by name.
  std::map<std::string, DataSymbol> DataSymbols;
  /// Outputs whose inferred dims contradict the file's or overflow, in order.
  std::vector<ShapeConflict> Conflicts;
  /// Broadcasts of a symbolic dim against a fixed extent above 1, in order.
  std::vector<BroadcastAssumption> Assumptions;
  /// Each Loop's trip count, as its body's cost counts it (Model::LoopTrips).
  llvm::DenseMap<const Node *, sym::ExprRef> LoopTrips;
  /// Nodes whose inputs break their op's rules (Model::InvalidNodes).
  llvm::DenseMap<const Node *, std::string> Invalid;
};

/// Infers element types, shapes and (for small int64/int32 tensors) values of
/// every node output in G and its subgraphs, in topological order, from graph
/// inputs, initializers (Value::Shp, Value::IntData) and attributes. Constant
/// nodes read small tensor payloads from Attribute::Ints (integer tensors) and
/// Attribute::Floats (floating-point tensors) when the loader stored them
/// there (their size equals the tensor's element count).
///
/// Never overwrites a shape already present on a value unless it is less
/// specific: unknown dims may be refined to symbolic or known ones, symbolic
/// ones to known ones; a present shape of another rank is kept. Calls of
/// model-local functions are inferred through the function's body (whose
/// values are cleared and hold the last call's shapes afterwards). Never fails
/// hard: an op it cannot infer leaves its outputs untouched.
ShapeInferenceStats inferShapes(Graph &G, const Model &M);

/// Whether ridge has a shape rule for the op (Domain "" is ai.onnx).
bool hasShapeRule(llvm::StringRef Domain, llvm::StringRef OpType);

} // namespace ridge

#endif
