//===- Sharding.h - Tensor-parallel sharding propagation ---------*- C++ -*-===//
//
// How t devices split each op of the graph, found by propagation the way SPMD
// compilers do, with no knowledge of what the model is. Every tensor is
// replicated (R), sharded on one dim (S d) or a partial sum (P). A matrix
// product with a weight takes the split its input invites:
//   input R       -> column split: output S(last); backward all-reduces dX
//   input S(K)    -> row split: output P (no communication yet)
// and a partial sum is all-reduced (or, with sequence parallelism,
// reduce-scattered along the sequence) before its first reader. Element-wise
// ops, reshapes, transposes, splits and batched products keep shardings that
// line up; anything else gathers its inputs first. On a transformer block
// this yields Megatron's split: QKV and the first MLP product column-split,
// attention output and second MLP product row-split, one all-reduce each in
// forward and in backward.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_PLAN_SHARDING_H
#define RIDGE_PASSES_PLAN_SHARDING_H

#include "analyzer/ir/IR.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <vector>

namespace ridge {

enum class CollectiveKind : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll };
/// The number of kinds (tables indexed by kind are this wide): the last
/// kind plus one.
constexpr unsigned NumCollectiveKinds = unsigned(CollectiveKind::AllToAll) + 1;
const char *collectiveName(CollectiveKind K);

/// One collective on the tensor-parallel group, per micro-batch (16 bytes:
/// a million-node graph has close to a million).
struct TPCollective {
  const Value *Tensor;  ///< the full (unsharded) tensor it moves
  uint32_t At;          ///< index of the main-graph node before which it runs
  CollectiveKind Kind;
  bool Backward;        ///< runs in the backward pass
};

struct ShardState {
  enum Kind : uint8_t { R, S, P } K = R;
  int Dim = -1; ///< for S
};

/// How a node's weight is split across the group.
enum class WeightSplitKind : uint8_t { None, Col, Row, Vocab };
/// "col", "row", "vocab" ("" for None).
const char *weightSplitName(WeightSplitKind K);

struct ShardingResult {
  unsigned Degree = 1;
  bool SequenceParallel = false;
  /// Per node of the main graph (by Node::Index): its work is split t ways.
  std::vector<bool> Split;
  /// Per node: how its weight is split, if it is (a byte a node: a
  /// million-node graph has four results alive).
  std::vector<WeightSplitKind> WeightSplit;
  std::vector<TPCollective> Collectives;
  /// Trainable parameters whose tensor is split across the group.
  llvm::DenseSet<const Value *> SplitParams;
  /// Every dim the propagation asked to split divided by the degree. The
  /// degree enters only there, so the result then holds for every divisor
  /// of the degree as well (with Degree changed).
  bool AllDivisible = true;
  /// Copied from the result at this degree (0: propagated).
  unsigned ReusedFrom = 0;
};

/// Propagates shardings over G's main graph for degree t. NeedsGrad tells
/// which tensors carry gradients (backward collectives are only needed for
/// those).
ShardingResult propagateSharding(const Graph &G, unsigned Degree, bool SequenceParallel,
                                 const ValueSet &NeedsGrad);

} // namespace ridge

#endif
