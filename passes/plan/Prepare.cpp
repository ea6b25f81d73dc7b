//===- Prepare.cpp - The planner: per-position costs from the model -------===//
#include "passes/plan/PlannerImpl.h"

using namespace ridge;

namespace ridge::plan {

/// Sums each node's costs into the position of its main-graph ancestor.
void collect(const Model &M, const CostResult &C, const RecomputePlan &Full,
             const RecomputePlan &Sel, std::optional<double> FloatBytes,
             std::vector<PhaseCost> &Fwd, std::vector<PhaseCost> &Bwd,
             std::vector<double> &Saved, std::vector<double> &SavedSel,
             std::vector<double> &Checkpoint) {
  const Graph &G = *M.Main;
  size_t N = G.Nodes.size();
  Fwd.assign(N, {});
  Bwd.assign(N, {});
  Saved.assign(N, 0);
  SavedSel.assign(N, 0);
  Checkpoint.assign(N, 0);
  // Each saved tensor counts once (with selective recomputation: once
  // among those held).
  ValueMap<uint8_t> Seen(G, 0), SeenSel(G, 0);
  auto FirstSeen = [](ValueMap<uint8_t> &In, const Value *V) {
    uint8_t &S = In[V];
    bool First = !S;
    S = 1;
    return First;
  };
  auto Bytes = [&](const Value *V) { return valueBytes(V, FloatBytes); };
  for (size_t I = 0; I < C.Nodes.size(); ++I) {
    const NodeCost &NC = C.Nodes[I];
    const Node *Top = NC.N;
    while (Top->Parent != &G && Top->Parent->ParentNode)
      Top = Top->Parent->ParentNode;
    if (Top->Parent != &G)
      continue;
    size_t P = Top->Index;
    Fwd[P] += NC.Fwd * NC.Multiplier;
    Bwd[P] += NC.Bwd * NC.Multiplier;
    double S = NC.SavedBytes * NC.Multiplier;
    double SS = Sel.KeptSaved[I] ? S : 0;
    for (const Value *V : NC.Saved) {
      if (V->isInitializer())
        continue;
      double B = Bytes(V) * std::max(1.0, NC.Multiplier);
      if (FirstSeen(Seen, V))
        S += B;
      if (!Sel.Dropped.contains(V) && FirstSeen(SeenSel, V))
        SS += B;
    }
    Saved[P] += S;
    SavedSel[P] += SS;
  }
  for (size_t K = 0; K < Full.Cuts.size(); ++K)
    Checkpoint[Full.Cuts[K]] += Bytes(Full.CutValues[K]);
}

/// Activation bytes live on each boundary of the main graph (a tensor
/// computed from a graph input, between its producer and its last reader).
std::vector<double> liveBytes(const Graph &G, std::optional<double> FloatBytes) {
  size_t N = G.Nodes.size();
  std::vector<double> Delta(N + 2, 0);
  // Integer activations (token ids) cross stage boundaries too.
  forEachActivationRange(G, /*FloatOnly=*/false, [&](const Value *V, long Def, long Last) {
    double B = valueBytes(V, FloatBytes);
    Delta[Def + 1] += B; // live on boundaries Def+1 .. Last
    Delta[Last + 1] -= B;
  });
  std::vector<double> Live(N + 1, 0);
  double Acc = 0;
  for (size_t P = 0; P <= N; ++P) {
    Acc += Delta[P];
    Live[P] = Acc;
  }
  return Live;
}

/// The plan fits every quantity as affine in the micro-batch b from b = 1
/// and 2, which holds when every tensor's size is: a tensor with two dims
/// that grow with b (a contrastive loss's similarities [B, B]) has b^2
/// elements, and what reads or writes it costs more at larger micro-batches
/// than the fit says. Such a tensor has more than twice its bytes at b = 2
/// (an affine size a + k b with a, k >= 0 has at most twice). Costs
/// themselves cannot tell: a bias gradient sums B rows with B - 1
/// additions, affine but 0 at b = 1. Main-graph tensors, counted, the first
/// named.
void Planner::warnSuperlinear() {
  size_t Count = 0;
  const Value *First = nullptr;
  for (const Value &V : M1->Main->Values) {
    double At1 = valueBytes(&V, FloatBytes), At2 = Bytes2[V.Id];
    if (At1 > 0 && At2 > 2 * At1 * (1 + 1e-9) && !Count++)
      First = &V;
  }
  if (!Count)
    return;
  std::string Where =
      First->Producer ? formatv(", output of '{0}'", First->Producer->Name).str() : "";
  Diags.warn(M1->Path,
             formatv("{0} tensor(s) grow faster than the micro-batch, the first '{1}' ({2} at "
                     "micro-batch 1{3}): {4}x as large at micro-batch 2. The plan fits every "
                     "cost as affine in the micro-batch from those two, so what reads or "
                     "writes such a tensor (a batch-by-batch product, as in a contrastive "
                     "loss) is under-counted at larger micro-batches",
                     Count, First->Name, First->typeStr(), Where,
                     exactNumber(Bytes2[First->Id] / valueBytes(First, FloatBytes))));
}

/// Whichever of the two loads returns second wakes micro-batch 2's thread,
/// which costs its graph only then (see loadBothBatches).
struct Planner::LoadSync {
  std::mutex Lock;
  std::condition_variable Done;
  int Loads = 0;
  bool TwoThreads = false;
  void loaded(bool Wait) {
    std::unique_lock<std::mutex> Hold(Lock);
    if (++Loads == 2)
      Done.notify_all();
    else if (Wait)
      Done.wait(Hold, [&] { return Loads == 2; });
  }
};

llvm::Error Planner::loadSide(int I, const BatchLoader &Load, LoadSync &Sync,
                              DiagnosticEngine &D, bool Timed, BatchSide &X) {
  auto L = Load(I + 1, D, Timed);
  Sync.loaded(/*Wait=*/I == 1 && Sync.TwoThreads);
  if (!L)
    return L.takeError();
  X.M = std::move(*L);
  Timing *T = Timed ? Opts.Timer : nullptr;
  AnalysisManager AM(*X.M, Cfg, D, T);
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  X.C = std::move(*C); // the manager ends with this scope
  if (I == 0) {
    // The search keeps micro-batch 1. Its sharding propagations start
    // now, on the worker, while the per-position sums below are taken
    // (both only read M1 and C1).
    M1 = std::move(X.M);
    C1 = std::move(X.C);
    propagateAhead();
  }
  const Model &Mod = I == 0 ? *M1 : *X.M;
  const CostResult &Cost = I == 0 ? C1 : X.C;
  Timing::Scope Phase(T, "plan: recomputation and per-position sums");
  X.Full = planRecompute(Mod, Cost, Config::Recompute::Full, FloatBytes);
  X.Sel = planRecompute(Mod, Cost, Config::Recompute::Selective, FloatBytes);
  collect(Mod, Cost, X.Full, X.Sel, FloatBytes, X.F, X.B, X.S, X.SS, X.Ck);
  X.Live = liveBytes(*Mod.Main, FloatBytes);
  const Graph &Main = *Mod.Main;
  X.Gemm.assign(Main.Nodes.size(), std::nullopt);
  X.GemmGrad.assign(Main.Nodes.size(), 0);
  for (const NodeCost &NC : Cost.Nodes)
    if (NC.N->Parent == &Main && NC.Modeled)
      if (std::optional<GemmShape> S = productShape(*NC.N)) {
        X.Gemm[NC.N->Index] = *S;
        X.GemmGrad[NC.N->Index] =
            uint8_t(NC.inputNeedsGrad(0)) | uint8_t(NC.inputNeedsGrad(1)) << 1;
      }
  for (const Value *V : Main.Inputs)
    if (!V->isInitializer())
      X.In += V->numBytes().value_or(0);
  X.NumNodes = Main.Nodes.size();
  X.NumValues = Main.Values.size();
  if (I == 1) {
    // Micro-batch 2 is kept as numbers only: the byte size of every
    // main-graph value (by Id; tpPlan reads those of collectives), then
    // the graph is freed here, so that its memory serves the search.
    Bytes2.resize(X.NumValues);
    for (const Value &V : Main.Values)
      Bytes2[V.Id] = valueBytes(&V, FloatBytes);
    X.Modeled.resize(X.C.Nodes.size());
    for (size_t K = 0; K < X.C.Nodes.size(); ++K)
      X.Modeled[K] = X.C.Nodes[K].Modeled;
    X.C = CostResult();
    X.Full = X.Sel = RecomputePlan();
    X.M.reset();
  }
  return llvm::Error::success();
}

llvm::Error Planner::loadBothBatches(const BatchLoader &Load, BatchSide Sides[2]) {
  // Micro-batch 1, which the search keeps, on a second thread while
  // micro-batch 2 loads here: the two read only the parsed file. Micro-batch
  // 2 is freed on this thread, so its memory goes back to the heap that the
  // search allocates from; a thread's own malloc arena would keep it there,
  // or unmap it, and the search would fault in fresh pages instead. Its
  // warnings repeat micro-batch 1's; they are merged after (each said once).
  // Micro-batch 2's thread costs its graph once both loads have returned:
  // the loader may free what they shared then (BatchLoader), and this
  // thread's allocations reuse it.
  LoadSync Sync;
  DiagnosticEngine Diags2;
  std::optional<llvm::Error> E1;
  auto First = [&](bool Timed) { E1.emplace(loadSide(0, Load, Sync, Diags, Timed, Sides[0])); };
  std::thread FirstThread;
  try {
    FirstThread = std::thread(First, false);
  } catch (const std::system_error &) {
  }
  Sync.TwoThreads = FirstThread.joinable();
  llvm::Error E2 = loadSide(1, Load, Sync, Diags2, Sync.TwoThreads, Sides[1]);
  if (FirstThread.joinable())
    FirstThread.join();
  else
    First(true);
  for (const std::string &W : Diags2.warnings())
    Diags.warn("", W);
  if (*E1) {
    llvm::consumeError(std::move(E2));
    return std::move(*E1);
  }
  return E2;
}

llvm::Error Planner::checkSameGraph(const BatchSide Sides[2]) {
  if (Sides[0].NumNodes != Sides[1].NumNodes || Sides[0].NumValues != Sides[1].NumValues ||
      Sides[1].Modeled.size() != C1.Nodes.size())
    return fileError(M1->Path, "the graph changes with the batch size; cannot plan it");
  // A node costed at one micro-batch is costed at the other, or its costs
  // would be fitted to nothing. A batch size fixed in the model's own
  // constants breaks this: an Add of a [1, 128, 512] input to a Reshape
  // to [8, 128, 512] broadcasts at micro-batch 1 (and counts batch 8) and
  // has no shape at 2.
  size_t Differ = 0;
  const NodeCost *FirstDiffer = nullptr;
  for (size_t K = 0; K < C1.Nodes.size(); ++K)
    if (C1.Nodes[K].Modeled != Sides[1].Modeled[K] && !Differ++)
      FirstDiffer = &C1.Nodes[K];
  if (Differ)
    return fileError(
        M1->Path,
        formatv("{0} node(s) can be costed at only one of micro-batch 1 and 2, the first "
                "'{1}' ({2}, at {3} only): the graph does not take every batch size (one "
                "fixed in its own constants, such as a Reshape target, does this: export "
                "it with a dynamic batch dim); cannot plan it",
                Differ, FirstDiffer->N->Name, FirstDiffer->N->qualifiedOpType(),
                FirstDiffer->Modeled ? 1 : 2));
  if (C1.UnmodeledNodes)
    Diags.warn(M1->Path, formatv("{0} node(s) cannot be costed and are left out of the "
                                 "plan (see ridge analyze)",
                                 C1.UnmodeledNodes));
  return llvm::Error::success();
}

void Planner::fitPositions(BatchSide Sides[2]) {
  std::vector<PhaseCost> F[2] = {std::move(Sides[0].F), std::move(Sides[1].F)};
  std::vector<PhaseCost> B[2] = {std::move(Sides[0].B), std::move(Sides[1].B)};
  std::vector<double> S[2] = {std::move(Sides[0].S), std::move(Sides[1].S)};
  std::vector<double> SS[2] = {std::move(Sides[0].SS), std::move(Sides[1].SS)};
  std::vector<double> Ck[2] = {std::move(Sides[0].Ck), std::move(Sides[1].Ck)};
  std::vector<double> Live[2] = {std::move(Sides[0].Live), std::move(Sides[1].Live)};
  RecomputePlan Full1 = std::move(Sides[0].Full), Sel1 = std::move(Sides[0].Sel);
  const Graph &G = *M1->Main;
  size_t N = G.Nodes.size();
  Pos.resize(N);
  SavedAff.resize(N);
  SelAff.resize(N);
  CkAff.resize(N);
  Cut.resize(N);
  for (size_t P = 0; P < N; ++P) {
    Position &X = Pos[P];
    X.N = G.Nodes[P].get();
    X.Fwd = AffinePhase::fit(F[0][P], F[1][P]);
    X.Bwd = AffinePhase::fit(B[0][P], B[1][P]);
    SavedAff[P] = Affine::fit(S[0][P], S[1][P]);
    SelAff[P] = Affine::fit(SS[0][P], SS[1][P]);
    CkAff[P] = Affine::fit(Ck[0][P], Ck[1][P]);
    Cut[P] = Ck[0][P] > 0;
    if (Sides[0].Gemm[P] && Sides[1].Gemm[P]) {
      X.Product = true;
      X.G1 = *Sides[0].Gemm[P];
      X.G2 = *Sides[1].Gemm[P];
      X.GradA = Sides[0].GemmGrad[P] & 1;
      X.GradB = Sides[0].GemmGrad[P] & 2;
    }
    X.Type = Cfg.ComputeDType.value_or(DType::Float);
    for (const Value *V : X.N->Outputs)
      if (!Cfg.ComputeDType && V && isFloatingPoint(V->Elem)) {
        X.Type = V->Elem;
        break;
      }
  }
  RecFull.assign(N, 0);
  RecSel.assign(N, 0);
  for (size_t I = 0; I < C1.Nodes.size(); ++I) {
    const NodeCost &NC = C1.Nodes[I];
    const Node *Top = NC.N;
    while (Top->Parent != &G && Top->Parent->ParentNode)
      Top = Top->Parent->ParentNode;
    if (Top->Parent != &G)
      continue;
    Pos[Top->Index].NeedsBackward |= NC.NeedsBackward;
    RecFull[Top->Index] |= Full1.Recomputed[I];
    RecSel[Top->Index] |= Sel1.Recomputed[I];
  }
  LiveBytes.resize(N + 1);
  for (size_t P = 0; P <= N; ++P)
    LiveBytes[P] = Affine::fit(Live[0][P], Live[1][P]);
  InputBytes = Affine::fit(Sides[0].In, Sides[1].In);
}

void Planner::assignParameters() {
  // Parameters belong to the first position that reads them; the later
  // readers of a shared one are listed. (A trainable parameter's first
  // reader, or NotParam; Unread until it has one.)
  const Graph &G = *M1->Main;
  size_t N = G.Nodes.size();
  constexpr uint32_t NotParam = UINT32_MAX, Unread = UINT32_MAX - 1;
  ValueMap<uint32_t> FirstReader(G, NotParam);
  C1.Trainable.forEach([&](const Value *V) { FirstReader[V] = Unread; });
  llvm::MapVector<const Value *, std::vector<uint32_t>> LaterReaders;
  PosParams.assign(N, 0);
  for (size_t P = 0; P < N; ++P)
    for (const Value *In : Pos[P].N->Inputs) {
      if (!In)
        continue;
      uint32_t &First = FirstReader[In];
      if (First == NotParam)
        continue;
      if (First == Unread) {
        First = uint32_t(P);
        double Elems = In->numElements().value_or(0);
        PosParams[P] += Elems;
        ParamPos.push_back(uint32_t(P));
        ParamVal.push_back(In);
        ParamElems.push_back(Elems);
      } else if (First != P) {
        std::vector<uint32_t> &L = LaterReaders[In];
        if (L.empty() || L.back() != P)
          L.push_back(uint32_t(P));
      }
    }
  for (auto &[V, Later] : LaterReaders) {
    SharedParam Sp{V, V->numElements().value_or(0), {FirstReader[V]}};
    Sp.Readers.insert(Sp.Readers.end(), Later.begin(), Later.end());
    Shared.push_back(std::move(Sp));
  }
  Params = C1.TrainableParams;
}

void Planner::findBoundaries() {
  size_t N = Pos.size();
  for (size_t P = 1; P < N; ++P)
    if (Cut[P])
      Boundaries.push_back(P);
  // A stack of identical layers between the cuts (one layer per segment,
  // the embedding before the first cut and the head after the last):
  // stages get whole layers, as Megatron-LM assigns them.
  StackLayers = 0;
  if (blockPeriod(*M1->Main, Boundaries) == 1)
    StackLayers = Boundaries.size();
  Boundaries.push_back(N);
  for (size_t P = 1; P <= N; ++P)
    AllBoundaries.push_back(P);
}

void Planner::classifyPositions() {
  // Positions with equal costs, type and backward flag take equal times at
  // every micro-batch and split: one class each.
  struct Key {
    std::array<uint64_t, 16> Bits;
    std::array<double, 10> Gemm; ///< a product's shapes and gradients (else 0)
    uint8_t Type;
    bool NeedsBackward;
    bool operator==(const Key &O) const {
      return Bits == O.Bits && Gemm == O.Gemm && Type == O.Type &&
             NeedsBackward == O.NeedsBackward;
    }
  };
  struct Hash {
    size_t operator()(const Key &K) const {
      uint64_t H = 1469598103934665603ULL ^ K.Type ^ (uint64_t(K.NeedsBackward) << 8);
      for (uint64_t B : K.Bits) {
        H = (H ^ B) * 1099511628211ULL;
        H ^= H >> 29;
      }
      for (double G : K.Gemm) {
        uint64_t B;
        std::memcpy(&B, &G, sizeof(B));
        H = (H ^ B) * 1099511628211ULL;
      }
      return size_t(H);
    }
  };
  auto Put = [](uint64_t *Out, const AffinePhase &A) {
    const double V[8] = {A.Flops.A, A.Flops.B, A.Macs.A,  A.Macs.B,
                         A.Transc.A, A.Transc.B, A.Bytes.A, A.Bytes.B};
    std::memcpy(Out, V, sizeof(V));
  };
  size_t N = Pos.size();
  std::unordered_map<Key, uint32_t, Hash> Classes;
  ClassOf.resize(N);
  for (size_t P = 0; P < N; ++P) {
    const Position &X = Pos[P];
    Key Ky;
    Put(Ky.Bits.data(), X.Fwd);
    Put(Ky.Bits.data() + 8, X.Bwd);
    Ky.Gemm = {};
    if (X.Product)
      Ky.Gemm = {X.G1.Batch, X.G1.M, X.G1.N, X.G1.K, X.G2.Batch,
                 X.G2.M,     X.G2.N, X.G2.K, double(X.GradA), double(X.GradB)};
    Ky.Type = uint8_t(X.Type);
    Ky.NeedsBackward = X.NeedsBackward;
    auto [It, New] = Classes.try_emplace(Ky, uint32_t(ClassRep.size()));
    if (New)
      ClassRep.push_back(&X);
    ClassOf[P] = It->second;
  }
  for (size_t P = 0; P < N; ++P) {
    SavedInt.add(SavedAff[P]);
    SelInt.add(SelAff[P]);
    if (Cut[P]) {
      CutPos.push_back(P);
      CutCk.push_back(CkAff[P]);
      CkInt.add(CkAff[P]);
    }
  }
}

llvm::Error Planner::prepare(const BatchLoader &Load) {
  if (Cfg.ComputeDType)
    FloatBytes = dtypeBytes(*Cfg.ComputeDType);
  WBytes = FloatBytes.value_or(4);
  Mixed = WBytes < 4;
  K = Opts.DevicesPerNode ? Opts.DevicesPerNode : std::max(1u, Dev.DevicesPerNode);
  // The graph and its costs at micro-batch 1 and 2: every plan quantity is
  // affine in the micro-batch, fitted from the two.
  BatchSide Sides[2];
  std::optional<Timing::Scope> Phase(std::in_place, Opts.Timer,
                                     "plan: load and cost at micro-batch 1 and 2");
  if (llvm::Error E = loadBothBatches(Load, Sides))
    return E;
  Phase.emplace(Opts.Timer, "plan: prepare the search");
  if (llvm::Error E = checkSameGraph(Sides))
    return E;
  fitPositions(Sides);
  assignParameters();
  findBoundaries();
  warnSuperlinear();
  classifyPositions();
  return llvm::Error::success();
}

} // namespace ridge::plan
