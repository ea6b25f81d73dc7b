//===- KVCache.cpp - A decoder's cached keys and values, by structure -----===//
#include "passes/cost/KVCache.h"

using namespace ridge;

namespace {

/// Through a chain of Cast and Identity (what exporters put between a graph
/// input and its first real use) to the producer's input 0.
const Value *throughCasts(const Value *V) {
  for (unsigned Depth = 0; V && V->producer() && Depth < 4; ++Depth) {
    const Node *P = V->producer();
    if (!P->Domain.empty() || (P->OpType != "Cast" && P->OpType != "Identity"))
      break;
    V = P->input(0);
  }
  return V;
}

/// The graph output V reaches through Cast and Identity, if it is one.
const Value *graphOutputOf(const Value *V) {
  for (unsigned Depth = 0; V && Depth < 4; ++Depth) {
    if (V->IsGraphOutput)
      return V;
    if (V->Users.size() != 1)
      return nullptr;
    const Node *U = V->Users[0];
    if (!U->Domain.empty() || (U->OpType != "Cast" && U->OpType != "Identity"))
      return nullptr;
    V = U->output(0);
  }
  return nullptr;
}

} // namespace

std::vector<KVCacheEntry> ridge::findKVCache(const Graph &G) {
  std::vector<KVCacheEntry> Out;
  for (const auto &NP : G.Nodes) {
    const Node &N = *NP;
    if (!N.Domain.empty() || N.OpType != "Concat" || N.Inputs.size() != 2 || !N.output(0))
      continue;
    const Value *Past = throughCasts(N.input(0));
    if (!Past || Past->Kind != ValueKind::GraphInput || Past->isInitializer())
      continue;
    const Value *Present = graphOutputOf(N.output(0));
    if (!Present || !N.output(0)->Shp)
      continue;
    int64_t Axis = N.attrInt("axis", 0), Rank = int64_t(N.output(0)->Shp->rank());
    if (Axis < 0)
      Axis += Rank;
    if (Axis < 0 || Axis >= Rank)
      continue;
    Out.push_back({Past, Present, &N, unsigned(Axis)});
  }
  return Out;
}
