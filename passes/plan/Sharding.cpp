//===- Sharding.cpp - Tensor-parallel sharding propagation ----------------===//
#include "passes/plan/Sharding.h"
#include "passes/cost/CostModel.h"

using namespace ridge;

const char *ridge::collectiveName(CollectiveKind K) {
  switch (K) {
  case CollectiveKind::AllReduce: return "all-reduce";
  case CollectiveKind::AllGather: return "all-gather";
  case CollectiveKind::ReduceScatter: return "reduce-scatter";
  case CollectiveKind::AllToAll: return "all-to-all";
  }
  return "?";
}

const char *ridge::weightSplitName(WeightSplitKind K) {
  switch (K) {
  case WeightSplitKind::None: return "";
  case WeightSplitKind::Col: return "col";
  case WeightSplitKind::Row: return "row";
  case WeightSplitKind::Vocab: return "vocab";
  }
  return "?";
}

namespace {

using State = ShardState;

class Propagator {
public:
  Propagator(const Graph &G, unsigned T, bool SP, const ValueSet &NG,
             ShardingResult &R)
      : G(G), T(T), SP(SP), NeedsGrad(NG), R(R), States(G) {}

  void run();

private:
  const Graph &G;
  unsigned T;
  bool SP;
  const ValueSet &NeedsGrad;
  ShardingResult &R;
  ValueMap<State> States; ///< R when not set

  State get(const Value *V) const { return V ? States.lookup(V) : State(); }
  void set(const Value *V, State S) {
    if (V)
      States[V] = S;
  }
  int rankOf(const Value *V) const { return V && V->Shp ? int(V->Shp->rank()) : -1; }
  int64_t dimOf(const Value *V, int D) const {
    return V && V->Shp && D >= 0 && D < int(V->Shp->rank()) ? V->Shp->Dims[D].extent() : -1;
  }
  bool divisible(const Value *V, int D) const {
    int64_t E = dimOf(V, D);
    bool Yes = E > 0 && E % T == 0;
    R.AllDivisible &= Yes;
    return Yes;
  }
  void collective(CollectiveKind K, bool Bwd, const Value *V, const Node &At) {
    if (Bwd && !NeedsGrad.count(V))
      return;
    R.Collectives.push_back({V, At.Index, K, Bwd});
  }

  /// Makes V replicated before Node reads it: a partial sum is all-reduced
  /// (its gradient needs nothing: each shard's gradient is the full dY), a
  /// shard is all-gathered (its gradient reduce-scattered).
  State replicate(const Value *V, const Node &At) {
    State S = get(V);
    if (S.K == State::P) {
      collective(CollectiveKind::AllReduce, false, V, At);
    } else if (S.K == State::S) {
      collective(CollectiveKind::AllGather, false, V, At);
      collective(CollectiveKind::ReduceScatter, true, V, At);
    }
    set(V, State());
    return State();
  }

  /// A partial sum is reduced where it is produced: with sequence
  /// parallelism reduce-scattered along the sequence dim (rank-2 of
  /// [batch, seq, hidden]), else all-reduced.
  State settlePartial(const Value *V, const Node &At) {
    int SeqDim = rankOf(V) - 2;
    if (SP && SeqDim >= 0 && divisible(V, SeqDim)) {
      collective(CollectiveKind::ReduceScatter, false, V, At);
      collective(CollectiveKind::AllGather, true, V, At);
      State S{State::S, SeqDim};
      set(V, S);
      return S;
    }
    collective(CollectiveKind::AllReduce, false, V, At);
    set(V, State());
    return State();
  }

  /// A graph output left a partial sum: all-reduced where it is made (in
  /// its producer's place: the same stage).
  void settlePartialOutput(const Value *V) {
    collective(CollectiveKind::AllReduce, false, V, *V->producer());
    set(V, State());
  }

  /// A parameter, or a transposed/cast view of one (a tied embedding used
  /// as the output projection).
  const Value *weightSource(const Value *V) const {
    while (V && !V->isInitializer() && V->producer() &&
           (V->producer()->OpType == "Transpose" || V->producer()->OpType == "Identity" ||
            V->producer()->OpType == "Cast"))
      V = V->producer()->input(0);
    return V && V->isInitializer() ? V : nullptr;
  }
  bool isWeight(const Value *V) const { return rankOf(V) >= 2 && weightSource(V); }

  void weightProduct(const Node &N, const Value *X, const Value *W, int WOutDim, int WInDim,
                     int XContractDim, int YSplitDim);
  void elementwise(const Node &N);
  void reshape(const Node &N);
  void transpose(const Node &N);
  void split(const Node &N);
  void concat(const Node &N);
  void unsqueeze(const Node &N);
  void expand(const Node &N);
  void batchedMatmul(const Node &N);
  void keepUnless(const Node &N, llvm::ArrayRef<int> BadDims);
  void replicateAll(const Node &N);
  void markSplit(const Node &N) { R.Split[N.Index] = true; }
};

void Propagator::replicateAll(const Node &N) {
  for (const Value *In : N.Inputs)
    if (In && get(In).K != State::R)
      replicate(In, N);
  for (const Value *Out : N.Outputs)
    set(Out, State());
}

/// X (activation) times W: W's output dim WOutDim or input dim WInDim split.
void Propagator::weightProduct(const Node &N, const Value *X, const Value *W, int WOutDim,
                               int WInDim, int XContractDim, int YSplitDim) {
  State In = get(X);
  if (In.K == State::P)
    In = settlePartial(X, N);
  // A sequence-parallel region ends at a column split: X is all-gathered,
  // and the backward of that gather (a reduce-scatter) sums the partial dX
  // the split leaves, so no all-reduce is added for it (Korthikanti et al.
  // 2022, sec. 4.2.2: g and g-bar replace f and f-bar).
  bool Gathered = false;
  if (In.K == State::S && In.Dim != XContractDim) {
    In = replicate(X, N);
    Gathered = true;
  }
  const Value *Y = N.output(0);
  if (In.K == State::S && divisible(W, WInDim)) {
    // Row split: each device holds W's rows for its slice of K.
    R.WeightSplit[N.Index] = WeightSplitKind::Row;
    R.SplitParams.insert(weightSource(W));
    set(Y, State{State::P, -1});
  } else if (divisible(W, WOutDim)) {
    if (In.K == State::S) {
      replicate(X, N);
      Gathered = true;
    }
    // Column split; backward: each device's dX is partial: all-reduced,
    // or reduce-scattered by the gather's backward. (Megatron-LM gathers X
    // again in the backward for the weight gradient, overlapped with dX's
    // product: not charged.)
    R.WeightSplit[N.Index] = WeightSplitKind::Col;
    R.SplitParams.insert(weightSource(W));
    if (!Gathered)
      collective(CollectiveKind::AllReduce, true, X, N);
    set(Y, State{State::S, YSplitDim});
  } else {
    replicateAll(N);
    return;
  }
  markSplit(N);
  // A Gemm bias along the split output dim is split with it.
  if (N.OpType == "Gemm" && N.input(2) && R.WeightSplit[N.Index] == WeightSplitKind::Col)
    R.SplitParams.insert(N.input(2));
}

void Propagator::elementwise(const Node &N) {
  // Partial sums are settled first (adding a bias to each partial would add
  // it t times).
  int OutRank = rankOf(N.output(0));
  int Dim = -1; // sharded dim of the output, aligned from the right
  for (const Value *In : N.Inputs) {
    if (!In)
      continue;
    State S = get(In);
    if (S.K == State::P)
      S = settlePartial(In, N);
    if (S.K == State::S) {
      int Aligned = S.Dim + (OutRank - rankOf(In));
      if (Dim == -1)
        Dim = Aligned;
      else if (Dim != Aligned)
        replicate(In, N);
    }
  }
  if (Dim < 0) {
    for (const Value *Out : N.Outputs)
      set(Out, State());
    return;
  }
  // Replicated operands that vary along Dim are sliced locally (free); the
  // gradient of a sliced activation must be gathered back.
  for (const Value *In : N.Inputs) {
    if (!In || get(In).K != State::R)
      continue;
    int D = Dim - (OutRank - rankOf(In));
    if (D >= 0 && dimOf(In, D) > 1) {
      if (In->isInitializer())
        R.SplitParams.insert(In);
      else
        collective(CollectiveKind::AllGather, true, In, N);
    }
  }
  markSplit(N);
  for (const Value *Out : N.Outputs)
    if (Out && rankOf(Out) == OutRank)
      set(Out, State{State::S, Dim});
}

/// Maps the sharded dim through a reshape when its outermost factor
/// survives as an output dim divisible by t.
void Propagator::reshape(const Node &N) {
  const Value *X = N.input(0), *Y = N.output(0);
  State S = get(X);
  if (S.K == State::P)
    S = settlePartial(X, N);
  if (S.K != State::S || !X->hasKnownShape() || !Y->hasKnownShape()) {
    set(Y, S.K == State::S ? replicate(X, N) : State());
    return;
  }
  // Elements before the sharded dim must match elements before some output
  // dim, and that output dim must be divisible by t.
  double Before = 1;
  for (int I = 0; I < S.Dim; ++I)
    Before *= X->Shp->Dims[I].extent();
  double Acc = 1;
  for (int J = 0; J < rankOf(Y); ++J) {
    if (Acc == Before && divisible(Y, J)) {
      markSplit(N);
      set(Y, State{State::S, J});
      return;
    }
    Acc *= Y->Shp->Dims[J].extent();
  }
  set(Y, replicate(X, N));
}

void Propagator::transpose(const Node &N) {
  const Value *X = N.input(0), *Y = N.output(0);
  State S = get(X);
  if (S.K == State::P)
    S = settlePartial(X, N);
  if (S.K != State::S) {
    set(Y, State());
    return;
  }
  int Rank = rankOf(X);
  llvm::SmallVector<int64_t, 6> Perm;
  if (auto P = N.attrInts("perm"))
    Perm.assign(P->begin(), P->end());
  else
    for (int I = Rank - 1; I >= 0; --I)
      Perm.push_back(I);
  for (size_t J = 0; J < Perm.size(); ++J)
    if (Perm[J] == S.Dim) {
      markSplit(N);
      set(Y, State{State::S, int(J)});
      return;
    }
  set(Y, replicate(X, N));
}

/// Split along the sharded dim keeps each part sharded when every part is
/// divisible by t: the weight that produced it can be laid out so that each
/// device holds its share of every part (Megatron's fused QKV layout).
void Propagator::split(const Node &N) {
  const Value *X = N.input(0);
  State S = get(X);
  if (S.K == State::P)
    S = settlePartial(X, N);
  if (S.K != State::S) {
    for (const Value *Out : N.Outputs)
      set(Out, State());
    return;
  }
  int64_t Axis = N.attrInt("axis", 0);
  if (Axis < 0)
    Axis += rankOf(X);
  bool Ok = true;
  if (Axis == S.Dim)
    for (const Value *Out : N.Outputs)
      Ok &= Out && divisible(Out, S.Dim);
  if (!Ok) {
    replicate(X, N);
    for (const Value *Out : N.Outputs)
      set(Out, State());
    return;
  }
  markSplit(N);
  for (const Value *Out : N.Outputs)
    set(Out, S);
}

/// Concat along an axis other than the sharded dim keeps the shard:
/// each device concatenates its slices (a KV cache's past and new keys,
/// split by heads; rotate_half's halves). Replicated inputs are sliced
/// locally, as element-wise ops slice them.
void Propagator::concat(const Node &N) {
  int Rank = rankOf(N.output(0));
  int64_t Axis = N.attrInt("axis", 0);
  if (Axis < 0)
    Axis += Rank;
  int Dim = -1;
  for (const Value *In : N.Inputs) {
    if (!In || rankOf(In) != Rank)
      return replicateAll(N);
    State S = get(In);
    if (S.K == State::P)
      S = settlePartial(In, N);
    if (S.K != State::S)
      continue;
    if (S.Dim == Axis)
      return replicateAll(N);
    if (Dim == -1)
      Dim = S.Dim;
    else if (Dim != S.Dim)
      replicate(In, N);
  }
  if (Dim < 0) {
    for (const Value *Out : N.Outputs)
      set(Out, State());
    return;
  }
  for (const Value *In : N.Inputs)
    if (get(In).K == State::R && dimOf(In, Dim) > 1) {
      if (In->isInitializer())
        R.SplitParams.insert(In);
      else
        collective(CollectiveKind::AllGather, true, In, N);
    }
  markSplit(N);
  set(N.output(0), State{State::S, Dim});
}

/// Unsqueeze moves the sharded dim past the inserted axes (the axes input
/// known, as the loader's value analysis gives it).
void Propagator::unsqueeze(const Node &N) {
  const Value *X = N.input(0), *Axes = N.input(1);
  State S = get(X);
  if (S.K == State::P)
    S = settlePartial(X, N);
  int RY = rankOf(N.output(0));
  if (S.K != State::S || !Axes || !Axes->IntData || RY < 0) {
    if (S.K == State::S)
      replicate(X, N);
    set(N.output(0), State());
    return;
  }
  llvm::SmallVector<bool, 8> Inserted(RY, false);
  for (int64_t A : *Axes->IntData)
    if (A + (A < 0 ? RY : 0) >= 0 && A + (A < 0 ? RY : 0) < RY)
      Inserted[A + (A < 0 ? RY : 0)] = true;
  int In = 0;
  for (int J = 0; J < RY; ++J) {
    if (Inserted[J])
      continue;
    if (In++ == S.Dim) {
      markSplit(N);
      set(N.output(0), State{State::S, J});
      return;
    }
  }
  replicate(X, N);
  set(N.output(0), State());
}

/// Expand keeps a shard on a dim it does not broadcast (aligned from the
/// right; grouped-query attention repeats the cache along a new axis).
void Propagator::expand(const Node &N) {
  const Value *X = N.input(0), *Y = N.output(0);
  State S = get(X);
  if (S.K == State::P)
    S = settlePartial(X, N);
  int RX = rankOf(X), RY = rankOf(Y);
  int D = S.K == State::S ? S.Dim + (RY - RX) : -1;
  if (S.K == State::S && D >= 0 && dimOf(Y, D) == dimOf(X, S.Dim)) {
    markSplit(N);
    set(Y, State{State::S, D});
    return;
  }
  if (S.K == State::S)
    replicate(X, N);
  set(Y, State());
}

/// Products of two activations ([..., M, K] x [..., K, N]).
void Propagator::batchedMatmul(const Node &N) {
  const Value *A = N.input(0), *B = N.input(1), *Y = N.output(0);
  State SA = get(A), SB = get(B);
  if (SA.K == State::P)
    SA = settlePartial(A, N);
  if (SB.K == State::P)
    SB = settlePartial(B, N);
  int RA = rankOf(A), RB = rankOf(B), RY = rankOf(Y);
  auto BatchDim = [&](State S, int Rank) { // aligned output dim, or -1
    return S.K == State::S && S.Dim < Rank - 2 ? S.Dim + (RY - Rank) : -1;
  };
  int DA = BatchDim(SA, RA), DB = BatchDim(SB, RB);
  if (DA >= 0 && (DB == DA || SB.K == State::R)) {
    markSplit(N);
    set(Y, State{State::S, DA});
    return;
  }
  if (DB >= 0 && SA.K == State::R) {
    markSplit(N);
    set(Y, State{State::S, DB});
    return;
  }
  if (SA.K == State::S && SA.Dim == RA - 1 && SB.K == State::S && SB.Dim == RB - 2) {
    markSplit(N);
    set(Y, State{State::P, -1});
    return;
  }
  if (SA.K == State::S && SA.Dim == RA - 2 && SB.K == State::R) {
    markSplit(N);
    set(Y, State{State::S, RY - 2});
    return;
  }
  if (SB.K == State::S && SB.Dim == RB - 1 && SA.K == State::R) {
    markSplit(N);
    set(Y, State{State::S, RY - 1});
    return;
  }
  replicateAll(N);
}

/// Ops that keep a shard unless it lies on one of BadDims (negative dims
/// count from the end).
void Propagator::keepUnless(const Node &N, llvm::ArrayRef<int> BadDims) {
  const Value *X = N.input(0);
  State S = get(X);
  if (S.K == State::P)
    S = settlePartial(X, N);
  int Rank = rankOf(X);
  bool Bad = S.K != State::S;
  for (int D : BadDims)
    Bad |= S.K == State::S && (D < 0 ? D + Rank : D) == S.Dim;
  if (S.K == State::S && Bad)
    replicate(X, N);
  if (S.K == State::S && !Bad) {
    markSplit(N);
    for (const Value *Out : N.Outputs)
      if (Out && rankOf(Out) == Rank)
        set(Out, S);
    return;
  }
  for (const Value *Out : N.Outputs)
    set(Out, State());
}

void Propagator::run() {
  // About one collective a node on the largest graphs seen (a gather before
  // each op that cannot keep a shard): room for that up front instead of a
  // doubling vector's copies (pages are touched only as they are written).
  R.Collectives.reserve(G.Nodes.size());
  R.Split.assign(G.Nodes.size(), false);
  R.WeightSplit.assign(G.Nodes.size(), WeightSplitKind::None);
  for (const auto &NP : G.Nodes) {
    const Node &N = *NP;
    llvm::StringRef Op = N.OpType;
    const OpRule *Rule = findOpRule(N.Domain, Op);
    OpClass Class = Rule ? opClass(*Rule) : OpClass::Other;
    const Value *A = N.input(0), *B = N.input(1);
    if (Op == "MatMul" && N.Domain.empty() && A && isWeight(B) && rankOf(B) == 2) {
      int RY = rankOf(N.output(0));
      weightProduct(N, A, B, 1, 0, rankOf(A) - 1, RY - 1);
    } else if (Op == "Gemm" && A && isWeight(B)) {
      bool TB = N.attrInt("transB", 0);
      weightProduct(N, A, B, TB ? 0 : 1, TB ? 1 : 0, N.attrInt("transA", 0) ? 0 : 1, 1);
    } else if (Op == "Conv" && A && isWeight(B)) {
      weightProduct(N, A, B, 0, 1, 1, 1);
    } else if (Op == "Gather" && A && A->isInitializer() && rankOf(A) == 2 &&
               N.attrInt("axis", 0) == 0 && divisible(A, 0)) {
      // Vocabulary-parallel embedding: each device looks up its rows, the
      // others contribute zeros: a partial sum.
      R.WeightSplit[N.Index] = WeightSplitKind::Vocab;
      R.SplitParams.insert(A);
      markSplit(N);
      set(N.output(0), State{State::P, -1});
    } else if (Op == "MatMul") {
      batchedMatmul(N);
    } else if (Class == OpClass::ElementWise || Op == "Dropout") {
      elementwise(N);
    } else if (Op == "Reshape" || Op == "Flatten") {
      reshape(N);
    } else if (Op == "Transpose") {
      transpose(N);
    } else if (Op == "Split") {
      split(N);
    } else if (Op == "Concat" && N.Domain.empty()) {
      concat(N);
    } else if (Op == "Unsqueeze" && N.Domain.empty() && N.OpsetVersion >= 13) {
      unsqueeze(N);
    } else if (Op == "Expand" && N.Domain.empty()) {
      expand(N);
    } else if (Op == "Softmax" || Op == "LogSoftmax") {
      keepUnless(N, {int(N.attrInt("axis", -1))});
    } else if (Op == "LayerNormalization" || Op == "SkipLayerNormalization" ||
               Op == "SimplifiedLayerNormalization") {
      // Normalizes over the dims from `axis` on; a shard before them stays.
      int Rank = rankOf(A);
      int64_t Axis = N.attrInt("axis", -1);
      if (Axis < 0)
        Axis += Rank;
      llvm::SmallVector<int, 4> Bad;
      for (int D = int(Axis); D < Rank; ++D)
        Bad.push_back(D);
      // Scale and bias stay replicated: each shard normalizes whole rows.
      keepUnless(N, Bad);
    } else if (Class == OpClass::View || Op == "Identity") {
      keepUnless(N, {});
    } else {
      replicateAll(N);
    }
  }
  // A sharded graph output stays as it is (the loss reads vocabulary-
  // parallel logits where they live), but a partial sum is no value until
  // it is reduced: it is all-reduced after the node that makes it (a row-
  // split product whose output is the graph's).
  for (const Value *V : G.Outputs)
    if (get(V).K == State::P && V->producer() && V->producer()->Parent == &G)
      settlePartialOutput(V);
}

} // namespace

ShardingResult ridge::propagateSharding(const Graph &G, unsigned Degree, bool SequenceParallel,
                                        const ValueSet &NeedsGrad) {
  ShardingResult R;
  R.Degree = Degree;
  R.SequenceParallel = SequenceParallel;
  if (Degree <= 1) {
    R.Split.assign(G.Nodes.size(), false);
    R.WeightSplit.assign(G.Nodes.size(), WeightSplitKind::None);
    return R;
  }
  Propagator P(G, Degree, SequenceParallel, NeedsGrad, R);
  P.run();
  return R;
}
