//===- Liveness.cpp - Weights at their width, the live-activation peak ----===//
//
// A runtime that reuses buffers (ONNX Runtime's memory planner, PyTorch's
// caching allocator under torch.no_grad) holds, while node p runs, every
// activation defined at or before p and read at or after p: p's inputs, its
// outputs, and what later nodes still need. The peak over p is the
// activation memory of a forward pass. Views (Reshape, Squeeze, Unsqueeze,
// Flatten, Identity; Dropout in inference) share their input's buffer: they
// extend its life and add no bytes. A graph input is held from the start, a
// graph output to the end. An element-wise op writes in place into an
// input whose buffer it is the last to read, when the sizes match (ONNX
// Runtime's kernels declare MayInplace for them; torch's inplace=True),
// never into a graph input the caller owns. A value read inside a subgraph lives while the
// node that holds the subgraph runs (its body's own working set is not
// counted).
//
//===----------------------------------------------------------------------===//
#include "passes/inference/Inference.h"
#include "analyzer/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace ridge;

namespace {

bool isAliasingView(const Node &N) {
  if (!N.Domain.empty())
    return false;
  llvm::StringRef Op = N.OpType;
  return Op == "Reshape" || Op == "Squeeze" || Op == "Unsqueeze" || Op == "Flatten" ||
         Op == "Identity" || Op == "Dropout";
}

/// Initializers and Constant-node outputs, in every graph, each once.
void countWeights(const Model &M, std::optional<double> FloatBytes,
                  InferenceMemoryResult &R) {
  auto Add = [&](const Value *V) {
    if (!V || (V->Users.empty() && !V->IsGraphOutput))
      return; // a runtime drops what no node reads
    R.WeightBytes += valueBytes(V, FloatBytes);
    ++R.WeightTensors;
    if (isFloatingPoint(V->Elem) && V->numElements().value_or(0) > 1)
      R.Params += *V->numElements();
  };
  auto FromGraph = [&](const Graph &G) {
    for (const Value *V : G.Initializers)
      Add(V);
  };
  FromGraph(*M.Main);
  M.Main->walk([&](const Node &N) {
    if (N.Domain.empty() && N.OpType == "Constant")
      Add(N.output(0));
    for (const Graph *Sub : N.subgraphs())
      FromGraph(*Sub);
  });
}

/// Whether A <= B for every binding (none when that depends on it).
std::optional<bool> decidedAtMost(const sym::Count &A, const sym::Count &B) {
  if (std::optional<bool> R = sym::Count::provablyAtMost(A, B))
    return R;
  sym::CountScope Scope; // an undecided comparison is noted here, not for a node
  bool R = A <= B;
  return Scope.failed() ? std::nullopt : std::optional<bool>(R);
}

/// At most this many positions whose order depends on the binding are
/// followed as candidates for the live peak (then it needs numbers).
constexpr size_t MaxPeakCandidates = 8;

/// The live bytes per node and their peak as formulas: the sizes' running
/// sum, and the positions not provably below another one.
void symbolicPeak(const Graph &G, const std::vector<sym::Count> &Delta,
                  InferenceMemoryResult::Formulas &F) {
  size_t N = G.Nodes.size();
  F.LiveBytes.assign(N, 0);
  std::vector<size_t> Cands;
  sym::Count Live = 0;
  bool GaveUp = false;
  for (size_t P = 0; P < N; ++P) {
    Live += Delta[P];
    F.LiveBytes[P] = Live;
    if (GaveUp || Live.isUnknown()) {
      GaveUp = true;
      continue;
    }
    // An earlier position at least as large stays the peak (the numbers'
    // rule: the first of the largest).
    bool Dominated = false;
    for (size_t C : Cands)
      if (decidedAtMost(Live, F.LiveBytes[C]).value_or(false)) {
        Dominated = true;
        break;
      }
    if (Dominated)
      continue;
    llvm::erase_if(Cands, [&](size_t C) {
      return decidedAtMost(F.LiveBytes[C], Live).value_or(false);
    });
    Cands.push_back(P);
    GaveUp = Cands.size() > MaxPeakCandidates;
  }
  if (GaveUp || Cands.empty()) {
    F.ActivationPeakBytes = sym::Count::of(nullptr);
    return;
  }
  F.ActivationPeakBytes = F.LiveBytes[Cands[0]];
  for (size_t I = 1; I < Cands.size(); ++I)
    F.ActivationPeakBytes = sym::max(F.ActivationPeakBytes, F.LiveBytes[Cands[I]]);
  for (size_t C : Cands)
    F.PeakCandidates.push_back(G.Nodes[C]);
}

} // namespace

llvm::Expected<InferenceMemoryResult> InferenceMemoryAnalysis::run(Model &M,
                                                                   AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  std::optional<double> FloatBytes = floatBytes(AM.config());
  InferenceMemoryResult R;
  countWeights(M, FloatBytes, R);

  const Graph &G = *M.Main;
  long N = long(G.Nodes.size());
  if (N == 0)
    return R; // nothing runs: no activation is live while a node runs
  R.KV = findKVCache(G);
  // A buffer's bytes: a number when its shape is known, a formula when its
  // dims hold symbols, unknown otherwise.
  auto Size = [&](const Value *V) -> sym::Count {
    return V->Shp && V->Shp->isDetermined() ? determinedBytes(V, FloatBytes)
                                            : sym::Count::of(nullptr);
  };
  ValueSet Cache(G);
  sym::Count KVCount = 0;
  for (const KVCacheEntry &E : R.KV) {
    for (const Value *V : E.tensors())
      Cache.insert(V);
    if (E.Present->hasKnownShape())
      R.KVCacheBytes += valueBytes(E.Present, FloatBytes);
    else
      R.KVCacheKnown = false;
    KVCount += Size(E.Present);
  }
  if (!R.KVCacheKnown)
    R.KVCacheBytes = 0;

  // Each buffer's first and last position; a view's output is its input's
  // buffer (Root), whose life it extends.
  ValueMap<const Value *> Root(G, nullptr);
  ValueMap<long> Start(G, -1), End(G, -1);
  std::vector<const Value *> Buffers;
  auto IsActivation = [&](const Value *V) {
    return V && C->isActivation(V) && !Cache.count(V) && !V->NonTensor;
  };
  auto LastUse = [&](const Value *V, long Def) {
    long Last = Def;
    for (const Node *U : V->Users)
      Last = std::max<long>(Last, G.holderOf(U)->Index);
    return V->IsGraphOutput ? N - 1 : Last;
  };
  auto Define = [&](const Value *V, long Def, const Value *AliasOf) {
    const Value *Buf = AliasOf ? Root.lookup(AliasOf) : nullptr;
    if (!Buf) {
      Buf = V;
      Start[V] = Def;
      End[V] = Def;
      Buffers.push_back(V);
    }
    Root[V] = Buf;
    End[Buf] = std::max(End.lookup(Buf), LastUse(V, Def));
  };
  ValueSet Owned(G); // buffers the caller owns: graph inputs
  for (const Value *V : G.Inputs)
    if (IsActivation(V)) {
      Define(V, 0, nullptr);
      Owned.insert(V);
    }
  // An input of element-wise node Nd whose buffer Nd reads last and whose
  // size is Out's: Out can take it. (End is final for it: a later reader
  // would have extended it when it was defined.)
  auto InPlace = [&](const Node &Nd, const Value *Out) -> const Value * {
    const OpRule *Rule = findOpRule(Nd.Domain, Nd.OpType);
    if (!Rule || opClass(*Rule) != OpClass::ElementWise)
      return nullptr;
    sym::Count OutBytes = Size(Out); // sizes match as formulas too: equal for every binding
    if (OutBytes.isUnknown())
      return nullptr;
    for (const Value *In : Nd.Inputs) {
      const Value *Buf = IsActivation(In) ? Root.lookup(In) : nullptr;
      if (Buf && !Owned.count(Buf) && End.lookup(Buf) == long(Nd.Index) &&
          Size(Buf) == OutBytes)
        return In;
    }
    return nullptr;
  };
  for (const auto &Nd : G.Nodes) {
    bool View = isAliasingView(*Nd) && IsActivation(Nd->input(0));
    for (unsigned I = 0; I < Nd->Outputs.size(); ++I) {
      const Value *Out = Nd->Outputs[I];
      if (!IsActivation(Out))
        continue;
      const Value *Shares = View && I == 0 ? Nd->input(0) : I == 0 ? InPlace(*Nd, Out) : nullptr;
      Define(Out, Nd->Index, Shares);
    }
  }
  bool Formulas = !KVCount.isNumber() && !KVCount.isUnknown();
  for (const Value *B : Buffers)
    Formulas |= !B->hasKnownShape() && B->Shp && B->Shp->isDetermined();
  if (Formulas) {
    // Sizes that hold symbols: the same sums as formulas.
    auto &F = R.Sym.emplace();
    F.KVCacheBytes = KVCount;
    R.KVCacheBytes = 0;
    std::vector<sym::Count> Delta(size_t(N) + 1, 0);
    for (const Value *B : Buffers) {
      sym::Count Bytes = Size(B);
      if (Bytes.isUnknown()) {
        ++R.UnknownSize;
        continue;
      }
      Delta[size_t(Start.lookup(B))] += Bytes;
      Delta[size_t(End.lookup(B)) + 1] -= Bytes;
    }
    symbolicPeak(G, Delta, F);
    if (F.PeakCandidates.size() == 1)
      R.PeakNode = F.PeakCandidates[0];
    return R;
  }
  std::vector<double> Delta(size_t(N) + 1, 0);
  for (const Value *B : Buffers) {
    if (!B->hasKnownShape()) {
      ++R.UnknownSize;
      continue;
    }
    double Bytes = valueBytes(B, FloatBytes);
    Delta[size_t(Start.lookup(B))] += Bytes;
    Delta[size_t(End.lookup(B)) + 1] -= Bytes;
  }
  R.LiveBytes.assign(size_t(N), 0);
  double Live = 0;
  for (long P = 0; P < N; ++P) {
    Live += Delta[size_t(P)];
    R.LiveBytes[size_t(P)] = Live;
    if (Live > R.ActivationPeakBytes || !R.PeakNode) {
      R.ActivationPeakBytes = Live;
      R.PeakNode = G.Nodes[size_t(P)];
    }
  }
  return R;
}

llvm::Error PrintLivenessPass::run(Model &M, AnalysisManager &AM) {
  auto R = AM.getResult<InferenceMemoryAnalysis>();
  if (!R)
    return R.takeError();
  llvm::raw_ostream &OS = *AM.config().Out;
  const InferenceMemoryResult::Formulas *F = R->Sym ? &*R->Sym : nullptr;
  for (const auto &Nd : M.Main->Nodes)
    OS << "live \"" << Nd->Name << "\" " << Nd->qualifiedOpType() << ": "
       << (F ? F->LiveBytes[Nd->Index].str() : exactNumber(R->LiveBytes[Nd->Index])) << "\n";
  OS << "weights: " << exactNumber(R->WeightBytes) << " bytes in " << R->WeightTensors
     << " tensor(s)\n";
  OS << "activation peak: "
     << (F ? F->ActivationPeakBytes.str() : exactNumber(R->ActivationPeakBytes)) << " bytes";
  if (R->PeakNode)
    OS << " while \"" << R->PeakNode->Name << "\" runs";
  else if (F && F->PeakCandidates.size() > 1) {
    OS << " (the largest of";
    for (const Node *Nd : F->PeakCandidates)
      OS << " \"" << Nd->Name << "\"";
    OS << ": which depends on the binding)";
  }
  OS << "\n";
  if (R->UnknownSize)
    OS << "activations of unknown size (not counted): " << R->UnknownSize << "\n";
  OS << "kv cache: " << R->KV.size() << " tensor(s), ";
  if (F && !F->KVCacheBytes.isUnknown())
    OS << F->KVCacheBytes.str() << " bytes\n";
  else if (R->KVCacheKnown)
    OS << exactNumber(R->KVCacheBytes) << " bytes\n";
  else
    OS << "size unknown (bind the past and sequence dims)\n";
  for (const KVCacheEntry &E : R->KV)
    OS << "  cache \"" << E.Past->Name << "\" -> \"" << E.Present->Name << "\" axis "
       << E.Axis << " " << E.Present->typeStr() << "\n";
  return llvm::Error::success();
}
