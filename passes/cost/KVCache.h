//===- KVCache.h - A decoder's cached keys and values, by structure -*- C++ -*-===//
//
// Found on the graph, not by name: the inference analyses (passes/inference)
// hold the cache apart from activations, and the cost walker charges a cache
// append in place when --kv-append in-place asks (what serving engines do).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_COST_KVCACHE_H
#define RIDGE_PASSES_COST_KVCACHE_H

#include "analyzer/ir/IR.h"
#include <array>
#include <vector>

namespace ridge {

/// One layer's cached keys or values: a graph input (past) concatenated
/// with the step's new keys or values along the sequence axis into a graph
/// output (present), as Hugging Face and optimum exports lay them out
/// (past_key_values.{i}.key [batch, kv_heads, past, head_dim] ->
/// present.{i}.key [batch, kv_heads, past + seq, head_dim]).
struct KVCacheEntry {
  const Value *Past = nullptr;
  const Value *Present = nullptr;
  const Node *Concat = nullptr;
  unsigned Axis = 0; ///< the sequence axis
  /// The tensors that are the cache, not activations: the past, the
  /// concatenation and the present (one tensor without a Cast between).
  std::array<const Value *, 3> tensors() const {
    return {Past, Present, Concat->output(0)};
  }
};

/// The KV cache of G, found by structure: a Concat of two inputs, one a
/// graph input (through Cast or Identity), whose output is a graph output
/// (through Cast or Identity), the name not consulted.
std::vector<KVCacheEntry> findKVCache(const Graph &G);

} // namespace ridge

#endif
