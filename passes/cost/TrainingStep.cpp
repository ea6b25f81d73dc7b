//===- TrainingStep.cpp - Optimizer, memory footprint, recomputation ------===//
#include "passes/cost/TrainingStep.h"
#include "llvm/ADT/Hashing.h"
#include <algorithm>

using namespace ridge;

/// Per parameter, fp32 state:
///   SGD       w -= lr*g                                   2 FLOPs
///   Momentum  v = mu*v + g; w -= lr*v                     4 FLOPs, v
///   Adam      m = b1*m + (1-b1)*g (3); v = b2*v + (1-b2)*g^2 (4);
///             bias corrections (2); w -= lr*m/(sqrt(v)+eps) (4 + sqrt)
///                                                          13 FLOPs + 1, m, v
///   AdamW     Adam + decoupled decay w -= lr*wd*w (2)      15 FLOPs + 1, m, v
OptimizerCost ridge::optimizerCost(Config::Optimizer O) {
  switch (O) {
  case Config::Optimizer::SGD: return {2, 0, 0};
  case Config::Optimizer::Momentum: return {4, 0, 4};
  case Config::Optimizer::Adam: return {13, 1, 8};
  case Config::Optimizer::AdamW: return {15, 1, 8};
  }
  return {};
}

const char *ridge::optimizerName(Config::Optimizer O) {
  switch (O) {
  case Config::Optimizer::SGD: return "sgd";
  case Config::Optimizer::Momentum: return "momentum";
  case Config::Optimizer::Adam: return "adam";
  case Config::Optimizer::AdamW: return "adamw";
  }
  return "?";
}

const char *ridge::recomputeName(Config::Recompute R) {
  switch (R) {
  case Config::Recompute::None: return "none";
  case Config::Recompute::Selective: return "selective";
  case Config::Recompute::Full: return "full";
  case Config::Recompute::Cheap: return "cheap";
  }
  return "?";
}

namespace {

/// The recomputation policies count in T: double for numbers, sym::Count
/// when the costs are formulas (free dims). One source for both: the
/// structural choices (cuts, regions) are the same, only the sums differ.
template <typename T> struct Amounts;
template <> struct Amounts<double> {
  static const PhaseCost &fwd(const NodeCost &NC) { return NC.Fwd; }
  static double saved(const NodeCost &NC) { return NC.savedBytes(); }
  static double bytes(const Value *V, std::optional<double> FloatBytes) {
    return valueBytes(V, FloatBytes);
  }
  static double elements(const Value *V) { return V->numElements().value_or(-1); }
  static bool known(double X) { return X >= 0; }
  static double max(double A, double B) { return std::max(A, B); }
  static bool positive(double X) { return X > 0; }
  /// A <= B; none when that depends on the binding (never, for numbers).
  static std::optional<bool> atMost(double A, double B) { return A <= B; }
};
template <> struct Amounts<sym::Count> {
  static PhaseCount fwd(const NodeCost &NC) { return NC.fwdCounts(); }
  static sym::Count saved(const NodeCost &NC) { return NC.savedCounts(); }
  static sym::Count bytes(const Value *V, std::optional<double> FloatBytes) {
    return determinedBytes(V, FloatBytes);
  }
  static sym::Count elements(const Value *V) {
    sym::CountScope Scope; // an unknown shape is no attention core, not a node's reason
    return elementCount(V);
  }
  static bool known(const sym::Count &X) { return !X.isUnknown(); }
  static sym::Count max(const sym::Count &A, const sym::Count &B) { return sym::max(A, B); }
  /// A formula count of MACs is a product of extents: nonzero.
  static bool positive(const sym::Count &X) {
    return X.isNumber() ? X.number() > 0 : X.isFormula();
  }
  static std::optional<bool> atMost(const sym::Count &A, const sym::Count &B) {
    if (std::optional<bool> R = sym::Count::provablyAtMost(A, B))
      return R;
    sym::CountScope Scope;
    bool R = A <= B;
    return Scope.failed() ? std::nullopt : std::optional<bool>(R);
  }
};

/// What a policy sums, in T.
template <typename T> struct RecomputeSums {
  T ActivationBytes = 0, RecomputeFlops = 0, RecomputeMacs = 0, RecomputeBytes = 0;
  /// A choice the binding decides (formulas only): the policy needs numbers.
  std::string Undecided;
  void replay(const PhaseAmounts<T> &Fwd) {
    RecomputeFlops += Fwd.Flops;
    RecomputeMacs += Fwd.Macs;
    RecomputeBytes += Fwd.Bytes;
  }
};

/// Saved bytes of a set of node costs, each tensor once; with KeepsExtra,
/// a node's extra saved bytes (masks, statistics) only where it says, and
/// with Dropped, no tensor it holds.
template <typename T>
T savedBytes(llvm::ArrayRef<const NodeCost *> Nodes, std::optional<double> FloatBytes,
             llvm::function_ref<bool(const NodeCost &)> KeepsExtra = nullptr,
             const llvm::DenseSet<const Value *> *Dropped = nullptr) {
  llvm::DenseMap<const Value *, double> Distinct;
  T B = 0;
  for (const NodeCost *NC : Nodes) {
    if (!KeepsExtra || KeepsExtra(*NC))
      B += Amounts<T>::saved(*NC) * NC->multiplier();
    for (const Value *V : NC->saved())
      if (!V->isInitializer() && !(Dropped && Dropped->contains(V)))
        Distinct[V] = std::max(Distinct[V], NC->multiplier());
  }
  for (const auto &[V, Mult] : Distinct)
    B += Amounts<T>::bytes(V, FloatBytes) * Mult;
  return B;
}

/// Whether a gradient flows through V in the backward: some main-graph node
/// reading V needs V's gradient (ByIndex: the main graph's nodes' costs by
/// position); a read inside a subgraph counts when the node holding it has
/// a backward.
bool carriesGradient(const Graph &G, const Value *V,
                     const std::vector<const NodeCost *> &ByIndex) {
  for (const Node *U : V->Users) {
    const Node *Top = G.holderOf(U);
    const NodeCost *NC = Top->Parent == &G ? ByIndex[Top->Index] : nullptr;
    if (!NC)
      continue;
    if (Top != U) {
      if (NC->NeedsBackward)
        return true;
      continue;
    }
    for (unsigned I = 0; I < U->Inputs.size(); ++I)
      if (U->Inputs[I] == V && (I >= 8 ? NC->NeedsBackward : NC->inputNeedsGrad(I)))
        return true;
  }
  return false;
}

/// The cuts of a stack of repeated blocks that are its layer boundaries
/// (blockPeriod): Megatron-LM's full recomputation checkpoints only the
/// layer's input, so that the memory is 2sbh per layer plus one layer's
/// working set (Korthikanti et al. 2022), not the two halves of a
/// transformer layer; every K-th cut is kept, the first after the K-th
/// segment. A graph with no period keeps every cut.
void keepLayerBoundaries(const Graph &G, std::vector<size_t> &Cuts,
                         std::vector<const Value *> &CutValues) {
  size_t K = blockPeriod(G, Cuts);
  if (K < 2)
    return;
  std::vector<size_t> Kept;
  std::vector<const Value *> KeptValues;
  for (size_t J = K - 1; J < Cuts.size(); J += K) {
    Kept.push_back(Cuts[J]);
    KeptValues.push_back(CutValues[J]);
  }
  Cuts = std::move(Kept);
  CutValues = std::move(KeptValues);
}

/// Full recomputation: keep only checkpoints, the single activation tensors
/// that cut the main graph (between two positions of the topological order
/// exactly one tensor that carries a gradient is live), and recompute each
/// segment's forward during the backward. Tensors no gradient flows through
/// (an attention mask, rotary tables, position ids: graph inputs every layer
/// reads, or what is computed from them alone) are held anyway and do not
/// prevent a cut, as in Megatron-LM's layer checkpointing, which passes them
/// to each layer; so are side tensors that carry a gradient but every layer
/// reads (below). Memory = checkpoints + side tensors + the largest
/// segment's saved tensors;
/// extra FLOPs = one more forward of every segment but the last.
template <typename T>
void fullRecompute(const Model &M, const CostResult &C, std::optional<double> FloatBytes,
                   RecomputePlan &R, RecomputeSums<T> &Sum) {
  using A = Amounts<T>;
  const Graph &G = *M.Main;
  size_t N = G.Nodes.size();
  std::vector<const NodeCost *> ByIndex(N, nullptr);
  for (const NodeCost &NC : C.Nodes)
    if (NC.N->Parent == &G)
      ByIndex[NC.N->Index] = &NC;
  // Each floating-point activation a gradient flows through is live on the
  // boundaries after its definition up to its last use; boundary p lies
  // after node p - 1 (0 is before the first node). Difference arrays count
  // live tensors, and sum their ids, per boundary in O(nodes + edges). A
  // graph output ends at its last reader: the caller holds it anyway (a
  // KV-cache export's present keys and values, one per layer, would
  // otherwise be live to the end and leave no cut).
  std::vector<const Value *> Ids;
  std::vector<std::pair<long, long>> Ranges; // boundaries Def + 1 .. Last, by id
  std::vector<long> Count(N + 2, 0), IdSum(N + 2, 0);
  forEachActivationRange(
      G, /*FloatOnly=*/true,
      [&](const Value *V, long Def, long Last) {
        if (!carriesGradient(G, V, ByIndex))
          return;
        long Id = long(Ids.size());
        Ids.push_back(V);
        Ranges.push_back({Def + 1, Last});
        Count[Def + 1] += 1;
        Count[Last + 1] -= 1;
        IdSum[Def + 1] += Id;
        IdSum[Last + 1] -= Id;
      },
      /*OutputsToEnd=*/false);
  // Matrix work per position of the main graph (subgraph nodes count for
  // the node that holds them).
  std::vector<bool> HasMacs(N, false);
  long FirstMac = long(N), LastMac = -1;
  for (const NodeCost &NC : C.Nodes) {
    const Node *Top = G.holderOf(NC.N);
    if (Top->Parent == &G && A::positive(A::fwd(NC).Macs)) {
      HasMacs[Top->Index] = true;
      FirstMac = std::min<long>(FirstMac, Top->Index);
      LastMac = std::max<long>(LastMac, Top->Index);
    }
  }
  // Side tensors: a few activations that carry a gradient yet are live over
  // most of the matrix work, such as rotary cos/sin computed once from a
  // float initializer (HF Llama's inv_freq) and read by every layer. Like
  // the mask, they are inputs of every segment, held once for the step,
  // and must not prevent the layer cuts; unlike the mask, a gradient flows
  // through them, so they are found by their live range, widest first.
  std::vector<long> Side;
  for (long Id = 0; Id < long(Ids.size()); ++Id) {
    auto [Lo, Hi] = Ranges[Id];
    long Span = LastMac - FirstMac;
    long Covered = std::min(Hi, LastMac) - std::max(Lo, FirstMac + 1) + 1;
    if (Span > 0 && 3 * Covered >= 2 * Span)
      Side.push_back(Id);
  }
  std::stable_sort(Side.begin(), Side.end(), [&](long X, long Y) {
    return Ranges[X].second - Ranges[X].first > Ranges[Y].second - Ranges[Y].first;
  });
  constexpr size_t MaxSide = 4;
  if (Side.size() > MaxSide)
    Side.resize(MaxSide);
  // Checkpoints: inner boundaries where exactly one activation besides the
  // first NumSide side tensors is live, kept when the segment they close
  // holds matrix work and matrix work remains after them. Cuts inside
  // element-wise chains would only add checkpoint memory, and the final
  // segment (a transformer's last norm and logits) is not replayed, as in
  // Megatron's layer checkpointing.
  auto FindCuts = [&](size_t NumSide, std::vector<size_t> &Cuts,
                      std::vector<const Value *> &CutValues) {
    std::vector<long> SideCount(N + 2, 0), SideIds(N + 2, 0);
    for (size_t J = 0; J < NumSide; ++J) {
      auto [Lo, Hi] = Ranges[Side[J]];
      SideCount[Lo] += 1;
      SideCount[Hi + 1] -= 1;
      SideIds[Lo] += Side[J];
      SideIds[Hi + 1] -= Side[J];
    }
    long Live = 0, LiveIds = 0;
    bool MacsSinceCut = false;
    for (size_t P = 0; P <= N; ++P) {
      Live += Count[P] - SideCount[P];
      LiveIds += IdSum[P] - SideIds[P];
      if (P >= 1 && P < N && Live == 1 && MacsSinceCut && long(P) <= LastMac) {
        Cuts.push_back(P);
        CutValues.push_back(Ids[LiveIds]);
        MacsSinceCut = false;
      }
      if (P < N && HasMacs[P])
        MacsSinceCut = true;
    }
    keepLayerBoundaries(G, Cuts, CutValues);
  };
  // The fewest side tensors that give the most cuts.
  std::vector<size_t> Cuts;
  std::vector<const Value *> CutValues;
  size_t NumSide = 0;
  FindCuts(0, Cuts, CutValues);
  for (size_t J = 1; J <= Side.size(); ++J) {
    std::vector<size_t> MoreCuts;
    std::vector<const Value *> MoreValues;
    FindCuts(J, MoreCuts, MoreValues);
    if (MoreCuts.size() > Cuts.size()) {
      Cuts = std::move(MoreCuts);
      CutValues = std::move(MoreValues);
      NumSide = J;
    }
  }
  R.Checkpoints = Cuts.size();
  R.Cuts = Cuts;
  R.CutValues = CutValues;
  // Held for the step: the checkpoints and the side tensors live at a cut
  // (each once; a segment's saved tensors leave the side tensors out).
  T Checkpoints = 0;
  llvm::DenseSet<const Value *> Seen;
  for (const Value *V : CutValues)
    if (Seen.insert(V).second)
      Checkpoints += A::bytes(V, FloatBytes);
  llvm::DenseSet<const Value *> Held;
  for (size_t J = 0; J < NumSide && !Cuts.empty(); ++J) {
    auto [Lo, Hi] = Ranges[Side[J]];
    if (Lo <= long(Cuts.back()) && Hi >= long(Cuts.front()) && Seen.insert(Ids[Side[J]]).second) {
      Held.insert(Ids[Side[J]]);
      R.SideValues.push_back(Ids[Side[J]]);
      Checkpoints += A::bytes(Ids[Side[J]], FloatBytes);
    }
  }
  T Largest = 0;
  std::vector<const NodeCost *> Segment;
  PhaseAmounts<T> SegmentFwd; // forward amounts of the segment being collected
  size_t CutIdx = 0;
  for (const NodeCost &NC : C.Nodes) {
    const Node *Top = G.holderOf(NC.N);
    if (Top->Parent != &G)
      continue; // function bodies are not in the main graph
    while (CutIdx < Cuts.size() && Top->Index >= Cuts[CutIdx]) {
      Largest = A::max(Largest, savedBytes<T>(Segment, FloatBytes, nullptr, &Held));
      Sum.replay(SegmentFwd);
      for (const NodeCost *S : Segment)
        R.Recomputed[S - C.Nodes.data()] = S->Modeled;
      Segment.clear();
      SegmentFwd = PhaseAmounts<T>();
      ++CutIdx;
    }
    Segment.push_back(&NC);
    SegmentFwd += A::fwd(NC) * NC.multiplier();
  }
  // The last segment is not replayed: its activations are still held when
  // the backward starts (Megatron's checkpointing does the same).
  Largest = A::max(Largest, savedBytes<T>(Segment, FloatBytes, nullptr, &Held));
  if (!Cuts.empty())
    Sum.ActivationBytes = Checkpoints + Largest;
}

/// `cheap`: keep what matrix products and convolutions save; recompute
/// every cheaper op (element-wise, normalization, softmax, dropout) from
/// them in the backward. Extra FLOPs = those ops' forward.
template <typename T>
void cheapRecompute(const CostResult &C, std::optional<double> FloatBytes, RecomputePlan &R,
                    RecomputeSums<T> &Sum) {
  using A = Amounts<T>;
  std::vector<const NodeCost *> Kept;
  for (const NodeCost &NC : C.Nodes) {
    if (!NC.Modeled || !NC.NeedsBackward)
      continue;
    if (A::positive(A::fwd(NC).Macs)) {
      Kept.push_back(&NC);
    } else {
      R.KeptSaved[&NC - C.Nodes.data()] = false;
      R.Recomputed[&NC - C.Nodes.data()] = true;
      Sum.replay(A::fwd(NC) * NC.multiplier());
    }
  }
  Sum.ActivationBytes = savedBytes<T>(Kept, FloatBytes);
}

/// A matrix product of two activations (tensors computed from a graph
/// input), as attention's QK^T and its product with V are; Act marks the
/// main graph's activations.
bool isActivationProduct(const Node &N, const ValueMap<uint8_t> &Act) {
  if (N.OpType != "MatMul" || !N.Domain.empty() || N.Inputs.size() != 2)
    return false;
  for (const Value *In : N.Inputs)
    if (!In || !Act.lookup(In))
      return false;
  return true;
}

/// The attention core that starts at A, a product of two activations whose
/// output is larger than either input (the scores [b, a, s, s] of q [b, a,
/// s, d] and k [b, a, d, s]): the nodes A's output reaches up to and
/// including the next product of two activations, through no other matrix
/// product, graph output or subgraph; empty when there is none.
template <typename T>
std::vector<const Node *> attentionCore(const Graph &G, const Node &A,
                                        const ValueMap<uint8_t> &Act,
                                        const std::vector<const NodeCost *> &ByIndex,
                                        std::string &Undecided) {
  using Am = Amounts<T>;
  const Value *Out = A.Outputs.empty() ? nullptr : A.Outputs[0];
  if (!Out)
    return {};
  T OutElems = Am::elements(Out);
  if (!Am::known(OutElems))
    return {};
  for (const Value *In : A.Inputs) {
    T InElems = Am::elements(In);
    if (!Am::known(InElems))
      return {};
    std::optional<bool> Larger = Am::atMost(OutElems, InElems);
    if (!Larger) { // the scores outgrow q and k only past some sequence length
      Undecided = "whether '" + Out->Name.str() + "' (" + Out->Shp->str() +
                  ") is larger than '" + In->Name.str() + "' (" + In->Shp->str() +
                  ") depends on the binding";
      return {};
    }
    if (*Larger)
      return {};
  }
  std::vector<const Node *> Region{&A}, Work{&A};
  llvm::DenseSet<const Node *> In{&A};
  const Node *End = nullptr;
  constexpr size_t MaxNodes = 64;
  while (!Work.empty()) {
    const Node *N = Work.back();
    Work.pop_back();
    for (const Value *V : N->Outputs) {
      if (!V)
        continue;
      if (V->IsGraphOutput && N != End)
        return {};
      if (N == End)
        continue;
      for (const Node *U : V->Users) {
        if (U->Parent != &G || !U->subgraphs().empty())
          return {};
        if (In.contains(U))
          continue;
        const NodeCost *NC = ByIndex[U->Index];
        bool Product = isActivationProduct(*U, Act);
        if (!Product && NC && Am::positive(Am::fwd(*NC).Macs))
          return {}; // a weight product inside: not an attention core
        if (Product) {
          if (End && End != U)
            return {}; // two ends
          End = U;
        }
        In.insert(U);
        Region.push_back(U);
        if (!Product)
          Work.push_back(U);
        if (Region.size() > MaxNodes)
          return {};
      }
    }
  }
  return End ? Region : std::vector<const Node *>();
}

/// Megatron-LM's selective recomputation (Korthikanti et al., "Reducing
/// Activation Recomputation in Large Transformer Models", 2022): only the
/// attention core (QK^T, the scale and mask, softmax, dropout, the product
/// with V) is recomputed in the backward, found on the graph as a region
/// between two products of activations (attentionCore). What the region
/// produces (the scores and probabilities, which grow with s^2: 5as^2b of
/// the per-layer sbh(34 + 5as/h) bytes) is not kept; its inputs q, k, v are.
/// Extra FLOPs = the regions' forward.
template <typename T>
void selectiveRecompute(const Model &M, const CostResult &C, std::optional<double> FloatBytes,
                        RecomputePlan &R, RecomputeSums<T> &Sum) {
  const Graph &G = *M.Main;
  std::vector<const NodeCost *> ByIndex(G.Nodes.size(), nullptr);
  for (const NodeCost &NC : C.Nodes)
    if (NC.N->Parent == &G)
      ByIndex[NC.N->Index] = &NC;
  ValueMap<uint8_t> Act(G, 0);
  forEachActivationRange(G, /*FloatOnly=*/false,
                         [&](const Value *V, long, long) { Act[V] = 1; });
  llvm::DenseSet<const Node *> Recomputed;
  for (const auto &N : G.Nodes) {
    if (Recomputed.contains(N) || !isActivationProduct(*N, Act))
      continue;
    std::vector<const Node *> Region = attentionCore<T>(G, *N, Act, ByIndex, Sum.Undecided);
    if (!Sum.Undecided.empty())
      return;
    if (Region.empty())
      continue;
    ++R.Regions;
    const Node *End = Region.back();
    for (const Node *X : Region) {
      if (!X)
        continue;
      if (Recomputed.insert(X).second) {
        if (const NodeCost *NC = ByIndex[X->Index]) {
          size_t I = NC - C.Nodes.data();
          R.Recomputed[I] = NC->Modeled;
          // Softmax statistics, dropout masks: not kept (the products keep
          // their inputs from outside the region, filtered below).
          if (X != Region.front() && X != End)
            R.KeptSaved[I] = false;
          Sum.replay(Amounts<T>::fwd(*NC) * NC->multiplier());
        }
      }
      if (X != End)
        for (const Value *V : X->Outputs)
          if (V)
            R.Dropped.insert(V);
    }
  }
  // What is held: every node's saved tensors but the dropped ones.
  std::vector<const NodeCost *> All;
  All.reserve(C.Nodes.size());
  for (const NodeCost &NC : C.Nodes)
    All.push_back(&NC);
  Sum.ActivationBytes = savedBytes<T>(
      All, FloatBytes, [&](const NodeCost &NC) { return bool(R.KeptSaved[&NC - C.Nodes.data()]); },
      &R.Dropped);
}

/// Runs the policy Mode in T, its sums starting from no recomputation.
template <typename T>
RecomputeSums<T> runPolicy(const Model &M, const CostResult &C, Config::Recompute Mode,
                           std::optional<double> FloatBytes, T NoRecompute, RecomputePlan &P) {
  RecomputeSums<T> Sum;
  Sum.ActivationBytes = NoRecompute;
  if (Mode == Config::Recompute::Full)
    fullRecompute<T>(M, C, FloatBytes, P, Sum);
  else if (Mode == Config::Recompute::Selective)
    selectiveRecompute<T>(M, C, FloatBytes, P, Sum);
  else if (Mode == Config::Recompute::Cheap)
    cheapRecompute<T>(C, FloatBytes, P, Sum);
  return Sum;
}

} // namespace

size_t ridge::blockPeriod(const Graph &G, llvm::ArrayRef<size_t> Cuts) {
  size_t NumSegs = Cuts.size() + 1;
  if (NumSegs < 4)
    return 0;
  // A segment's signature: the hash of its op types in order.
  std::vector<uint64_t> Sig(NumSegs);
  for (size_t S = 0; S < NumSegs; ++S) {
    size_t Begin = S ? Cuts[S - 1] : 0, End = S < Cuts.size() ? Cuts[S] : G.Nodes.size();
    uint64_t H = 1469598103934665603ull;
    for (size_t P = Begin; P < End; ++P)
      H = (H ^ llvm::hash_value(G.Nodes[P]->qualifiedOpType())) * 1099511628211ull;
    Sig[S] = H;
  }
  // Inner segments 1 .. NumSegs - 2.
  size_t Inner = NumSegs - 2;
  for (size_t K = 1; 2 * K <= Inner; ++K) {
    bool Periodic = true;
    for (size_t S = 1 + K; S + 1 < NumSegs && Periodic; ++S)
      Periodic = Sig[S] == Sig[S - K];
    if (Periodic)
      return K;
  }
  return 0;
}

void ridge::forEachActivationRange(
    const Graph &G, bool FloatOnly,
    llvm::function_ref<void(const Value *, long Def, long Last)> F, bool OutputsToEnd) {
  long N = long(G.Nodes.size());
  // Constants (a scale scalar every layer reads) live everywhere but are
  // not activations.
  ValueMap<uint8_t> Activation(G, 0);
  auto IsActivation = [&](const Value *V) { return V && Activation.lookup(V); };
  for (const Value *V : G.Inputs)
    if (!V->isInitializer())
      Activation[V] = 1;
  for (const auto &Nd : G.Nodes) {
    bool FromInput = false;
    for (const Value *In : Nd->Inputs)
      FromInput |= IsActivation(In);
    for (const Graph *Sub : Nd->subgraphs())
      for (const Value *In : Sub->Captures)
        FromInput |= IsActivation(In);
    if (FromInput)
      for (const Value *Out : Nd->Outputs)
        if (Out)
          Activation[Out] = 1;
  }
  auto Visit = [&](const Value *V, long Def) {
    if (!IsActivation(V) || (FloatOnly && !isFloatingPoint(V->Elem)))
      return;
    long Last = Def;
    for (const Node *U : V->Users)
      Last = std::max<long>(Last, U->Parent == &G ? long(U->Index) : N);
    if (V->IsGraphOutput && OutputsToEnd)
      Last = N;
    if (Last > Def)
      F(V, Def, Last);
  };
  for (const Value *V : G.Inputs)
    Visit(V, -1);
  for (const auto &Nd : G.Nodes)
    for (const Value *V : Nd->Outputs)
      if (V)
        Visit(V, Nd->Index);
}

RecomputePlan ridge::planRecompute(const Model &M, const CostResult &C,
                                   Config::Recompute Mode, std::optional<double> FloatBytes) {
  RecomputePlan P;
  P.ActivationBytesNoRecompute = C.SavedActivationBytes;
  P.ActivationBytes = C.SavedActivationBytes;
  P.Recomputed.assign(C.Nodes.size(), false);
  P.KeptSaved.assign(C.Nodes.size(), true);
  if (C.Sym) {
    // Formulas: the sums as formulas (the numbers above stay the numeric
    // nodes' part, as CostResult's do).
    RecomputeSums<sym::Count> S =
        runPolicy<sym::Count>(M, C, Mode, FloatBytes, C.Sym->SavedActivationBytes, P);
    P.Sym.emplace(RecomputePlan::Formulas{S.ActivationBytes, C.Sym->SavedActivationBytes,
                                          S.RecomputeFlops, S.RecomputeMacs, S.RecomputeBytes,
                                          S.Undecided});
    return P;
  }
  RecomputeSums<double> S = runPolicy<double>(M, C, Mode, FloatBytes, C.SavedActivationBytes, P);
  P.ActivationBytes = S.ActivationBytes;
  P.RecomputeFlops = S.RecomputeFlops;
  P.RecomputeMacs = S.RecomputeMacs;
  P.RecomputeBytes = S.RecomputeBytes;
  return P;
}

llvm::Expected<TrainingStepResult> TrainingStepAnalysis::run(Model &M,
                                                             AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  const Config &Cfg = AM.config();
  // With formulas the weights, gradients, optimizer state and update are
  // numbers here, the activations and recomputation formulas (R.Sym).
  TrainingStepResult R;
  R.Params = C->TrainableParams;
  if (Cfg.Inference) { // no step: nothing updated, saved or replayed
    R.Recomputed.assign(C->Nodes.size(), false);
    return R;
  }
  // Working weights and gradients at the compute dtype (the stored one
  // without --dtype: fp32 for an fp32 export); under 16-bit mixed precision
  // an fp32 master copy joins the optimizer state (ZeRO's K = 12 for Adam).
  double W = Cfg.ComputeDType ? dtypeBytes(*Cfg.ComputeDType) : 4;
  bool Mixed = W < 4;
  OptimizerCost O = optimizerCost(Cfg.Opt);
  R.FrozenWeightBytes = (C->FrozenInitElements + C->FreezeNodeParams) * W;
  R.WeightBytes = R.Params * W + R.FrozenWeightBytes;
  R.MasterWeightBytes = Mixed ? R.Params * 4 : 0;
  R.GradientBytes = R.Params * W;
  R.OptimizerStateBytes = R.Params * O.StateBytesPerParam;
  // The update reads the master weights, the gradient and the state, and
  // writes weights and state (plus the 16-bit working copy when mixed).
  double Master = Mixed ? 4 : W;
  R.Optimizer.Flops = R.Params * O.FlopsPerParam;
  R.Optimizer.Transcendentals = R.Params * O.TranscPerParam;
  R.Optimizer.Bytes = R.Params * (2 * Master + W + 2 * O.StateBytesPerParam +
                                  (Mixed ? W : 0));
  std::optional<double> FloatBytes = floatBytes(Cfg);
  RecomputePlan P = planRecompute(M, *C, Cfg.Recomp, FloatBytes);
  if (P.Sym && !P.Sym->Undecided.empty())
    return needsNumbers(M, *C,
                        std::string("--recompute ") + recomputeName(Cfg.Recomp) + " (" +
                            P.Sym->Undecided + ")");
  if (P.Sym)
    R.Sym.emplace(*P.Sym);
  R.ActivationBytes = P.ActivationBytes;
  R.ActivationBytesNoRecompute = P.ActivationBytesNoRecompute;
  R.RecomputeFlops = P.RecomputeFlops;
  R.RecomputeMacs = P.RecomputeMacs;
  R.RecomputeBytes = P.RecomputeBytes;
  R.Checkpoints = P.Checkpoints;
  R.CheckpointValues = P.CutValues;
  R.SideValues = P.SideValues;
  R.Recomputed = std::move(P.Recomputed);
  return R;
}
