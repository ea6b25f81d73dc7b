//===- Planner.cpp - Recommend a parallel strategy for N devices ----------===//
#include "passes/Planner.h"
#include "passes/CostModel.h"
#include "passes/Roofline.h"
#include "passes/TrainingStep.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>

using namespace ridge;
using llvm::formatv;

double ridge::collectiveSeconds(CollectiveKind K, double Bytes, unsigned N, double Bandwidth,
                                double Latency) {
  if (N <= 1 || Bytes <= 0)
    return 0;
  double Steps = N - 1;
  double Factor = Steps / N;
  if (K == CollectiveKind::AllReduce) {
    Factor *= 2; // reduce-scatter then all-gather
    Steps *= 2;
  }
  return Steps * Latency + Factor * Bytes / Bandwidth;
}

double ridge::amdahlSpeedup(double P, double S) { return 1.0 / ((1.0 - P) + P / S); }

namespace {

/// A quantity affine in the micro-batch size b: A + B * b, from its values
/// at b = 1 and b = 2.
struct Affine {
  double A = 0, B = 0;
  static Affine fit(double At1, double At2) { return {2 * At1 - At2, At2 - At1}; }
  double at(double Mb) const { return std::max(0.0, A + B * Mb); }
  Affine &operator+=(const Affine &O) {
    A += O.A;
    B += O.B;
    return *this;
  }
};

struct AffinePhase {
  Affine Flops, Macs, Transc, Bytes;
  static AffinePhase fit(const PhaseCost &P1, const PhaseCost &P2) {
    return {Affine::fit(P1.Flops, P2.Flops), Affine::fit(P1.Macs, P2.Macs),
            Affine::fit(P1.Transcendentals, P2.Transcendentals),
            Affine::fit(P1.Bytes, P2.Bytes)};
  }
  PhaseCost at(double Mb, double Scale) const {
    return {Flops.at(Mb) * Scale, Macs.at(Mb) * Scale, Transc.at(Mb) * Scale,
            Bytes.at(Mb) * Scale};
  }
  AffinePhase &operator+=(const AffinePhase &O) {
    Flops += O.Flops;
    Macs += O.Macs;
    Transc += O.Transc;
    Bytes += O.Bytes;
    return *this;
  }
};

/// One position of the main graph's topological order, with the costs of
/// any subgraph it holds.
struct Position {
  const Node *N = nullptr;
  AffinePhase Fwd, Bwd;
  bool NeedsBackward = false;
  DType Type = DType::Float;
  Affine Saved;          ///< saved tensors first saved here (deduplicated)
  Affine SavedSelective; ///< of which held under selective recomputation
  bool RecompFull = false, RecompSel = false;
  Affine Checkpoint;     ///< full recomputation: checkpoint taken before here
  bool CutBefore = false;
  double Params = 0;     ///< trainable parameters first read here
  std::vector<const Value *> ParamValues;
};

struct TPCollectiveCost {
  CollectiveKind Kind;
  bool Backward;
  Affine Bytes; ///< full tensor bytes
  size_t Pos;
};

/// What one tensor-parallel degree (and sequence-parallel choice) implies.
struct TPPlan {
  std::vector<bool> Split;
  std::vector<uint8_t> SplitU8;    ///< Split, one byte a position
  std::vector<TPCollectiveCost> Collectives;
  std::vector<double> SplitParams; ///< per position: parameters split t ways
  ShardingResult Sharding;
  /// Prefix sums of the unsplit (Params - SplitParams) and split parameters;
  /// Exact when every partial sum is exact (so a stage's sum in any order
  /// equals the difference of two prefixes).
  std::vector<double> PreOwn, PreSplit;
  bool ParamsExact = false;
};

/// What the search needs of one partition (micro-batch, t, sp,
/// recomputation, p, v): the slowest stage's times and each stage's memory
/// terms, as evaluate() sums them position by position.
struct StageAgg {
  unsigned Slowest = 0;
  double Time = 0, Bwd = 0, TP = 0, Rec = 0; ///< of the slowest stage
  double MaxBoundary = 0;
  std::vector<double> Params, SplitParams, Act, Ckpt, SegMax; ///< per stage
};

/// Per recomputation mode of a group: time per position and its prefix sums.
struct RecompTimes {
  bool Ready = false;
  bool Bounded = false;           ///< every cost finite and non-negative
  std::vector<double> Cost;       ///< per position (forward, backward, recompute, TP)
  std::vector<double> Prefix;     ///< Prefix[k]: Cost[0] + ... + Cost[k-1], in order
  std::vector<double> PreRec;     ///< the same of the recomputation time
  std::vector<double> Collapsed;  ///< Prefix at the stage boundaries (for balance)
  std::map<unsigned, std::vector<size_t>> Ends; ///< by chunk count
};

/// Everything that depends on (micro-batch, t, sp) only, per position.
struct Group {
  bool Valid = false;
  int64_t B = 0;
  unsigned T = 0;
  bool SP = false;
  const TPPlan *TP = nullptr;
  std::vector<double> TF, TB, TPT; ///< forward, backward, TP collectives
  std::vector<double> PreBwd, PreTP;
  double ModelFlops = 0, MatrixFlops[3] = {0, 0, 0};
  size_t TPCount = 0;
  RecompTimes R[3];
  // Activation terms (Saved, SavedSelective, Checkpoint at cuts, each times
  // its activation scale), as prefix sums; exact as for parameters.
  bool ActReady[3] = {false, false, false};
  std::vector<double> PreA, PreAS, PreCk;
  bool AExact = false, ASExact = false, CkExact = false;
  std::vector<double> SegSum; ///< PreA between consecutive cuts
  std::map<std::array<unsigned, 3>, StageAgg> Aggs; ///< by (recompute, p, v)
};

class Planner {
public:
  Planner(const Config &Cfg, const PlanOptions &O, DiagnosticEngine &Diags)
      : Cfg(Cfg), Opts(O), Diags(Diags), Dev(*Cfg.Dev) {}

  llvm::Error prepare(const BatchLoader &Load);
  PlanResult search();

private:
  const Config &Cfg;
  const PlanOptions &Opts;
  DiagnosticEngine &Diags;
  const Device &Dev;
  std::unique_ptr<Model> M1, M2;
  std::vector<Position> Pos;
  std::vector<Affine> LiveBytes; ///< activation bytes live on boundary k (before position k)
  /// Stage boundaries: after the last position of each segment between the
  /// graph's single-tensor cuts (a transformer's layer halves, a CNN's
  /// blocks), and the end; AllBoundaries when a graph has too few cuts.
  std::vector<size_t> Boundaries, AllBoundaries;
  Affine InputBytes;             ///< graph inputs per micro-batch
  double Params = 0;
  double WBytes = 4;             ///< weights and gradients
  bool Mixed = false;
  CostResult C1;                 ///< at micro-batch 1, for sharding
  std::map<std::pair<unsigned, bool>, TPPlan> TPPlans;
  unsigned K = 1;                ///< devices per node

  // Compact per-position data for the search.
  std::vector<uint32_t> ClassOf;        ///< positions with equal costs share a class
  std::vector<const Position *> ClassRep;
  std::vector<uint8_t> RecFull, RecSel, Cut;
  std::vector<Affine> SavedAff, SelAff, CkAff;
  std::vector<size_t> CutPos;           ///< positions with CutBefore, ascending
  // Per class and split (slot 2c + split): times and FLOP terms of the
  // current group, computed on first use.
  std::vector<double> SlotTF, SlotTB, SlotMF, SlotMM0, SlotMM1;
  std::vector<uint8_t> SlotDone;
  Group G;

  const TPPlan &tpPlan(unsigned T, bool SP);
  Group &group(int64_t B, unsigned T, bool SP);
  RecompTimes &recompTimes(Group &G, int R);
  void prepareActivations(Group &G, int R);
  const StageAgg &stageAgg(Group &G, Config::Recompute Rc, unsigned P, unsigned V);
  PlanEval evaluate(const PlanConfig &PC, unsigned N);
  std::vector<PlanEval> evaluateAll(const std::vector<PlanConfig> &Cs, unsigned N);
  std::vector<PlanConfig> enumerate(unsigned N, const PlanOptions &O) const;
  bool bestFor(unsigned N, const PlanOptions &O, PlanEval &Best, std::vector<PlanEval> *All,
               std::map<std::string, size_t> *Reasons, size_t &Evaluated);

  double linkBandwidth(bool Inter) const {
    const LinkSpec &L = Inter ? Dev.InterNode : Dev.IntraNode;
    const LinkSpec &Other = Inter ? Dev.IntraNode : Dev.InterNode;
    const LinkSpec &Use = L.present() ? L : Other;
    return Use.Bandwidth * (Inter ? Dev.EffInterNode : Dev.EffIntraNode);
  }
  double linkLatency(bool Inter) const {
    const LinkSpec &L = Inter ? Dev.InterNode : Dev.IntraNode;
    return L.present() ? L.Latency : (Inter ? Dev.IntraNode : Dev.InterNode).Latency;
  }
  /// A group of Size ranks Stride apart crosses nodes when it spans more
  /// than one node's devices.
  bool crossesNodes(unsigned Stride, unsigned Size) const {
    return Size > 1 && uint64_t(Stride) * Size > K;
  }
};

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
  llvm::DenseSet<const Value *> Seen;
  auto Bytes = [&](const Value *V) {
    return V->numElements().value_or(0) *
           (FloatBytes && isFloatingPoint(V->Elem) ? *FloatBytes : dtypeBytes(V->Elem));
  };
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
    for (const Value *V : NC.Saved)
      if (!V->isInitializer() && Seen.insert(V).second)
        S += Bytes(V) * std::max(1.0, NC.Multiplier);
    Saved[P] += S;
    if (Sel.KeptSaved[I])
      SavedSel[P] += S;
  }
  for (size_t K = 0; K < Full.Cuts.size(); ++K)
    Checkpoint[Full.Cuts[K]] += Bytes(Full.CutValues[K]);
}

/// Activation bytes live on each boundary of the main graph (a tensor
/// computed from a graph input, between its producer and its last reader).
std::vector<double> liveBytes(const Graph &G, std::optional<double> FloatBytes) {
  size_t N = G.Nodes.size();
  std::vector<double> Delta(N + 2, 0);
  llvm::DenseSet<const Value *> Act(G.Inputs.begin(), G.Inputs.end());
  for (const auto &Nd : G.Nodes) {
    bool From = false;
    for (const Value *In : Nd->Inputs)
      From |= In && Act.count(In);
    if (From)
      for (const Value *Out : Nd->Outputs)
        if (Out)
          Act.insert(Out);
  }
  auto Add = [&](const Value *V, long Def) {
    if (!Act.count(V) || V->isInitializer())
      return;
    long Last = Def;
    for (const Node *U : V->Users)
      Last = std::max<long>(Last, U->Parent == &G ? long(U->Index) : long(N));
    if (Last <= Def)
      return;
    double B = V->numElements().value_or(0) *
               (FloatBytes && isFloatingPoint(V->Elem) ? *FloatBytes : dtypeBytes(V->Elem));
    Delta[Def + 1] += B; // live on boundaries Def+1 .. Last
    Delta[Last + 1] -= B;
  };
  for (const Value *V : G.Inputs)
    Add(V, -1);
  for (const auto &Nd : G.Nodes)
    for (const Value *V : Nd->Outputs)
      if (V)
        Add(V, Nd->Index);
  std::vector<double> Live(N + 1, 0);
  double Acc = 0;
  for (size_t P = 0; P <= N; ++P) {
    Acc += Delta[P];
    Live[P] = Acc;
  }
  return Live;
}

llvm::Error Planner::prepare(const BatchLoader &Load) {
  auto L1 = Load(1);
  if (!L1)
    return L1.takeError();
  auto L2 = Load(2);
  if (!L2)
    return L2.takeError();
  M1 = std::move(*L1);
  M2 = std::move(*L2);
  if (M1->Main->Nodes.size() != M2->Main->Nodes.size())
    return fileError(M1->Path, "the graph changes with the batch size; cannot plan it");
  std::optional<double> FloatBytes;
  if (Cfg.ComputeDType)
    FloatBytes = dtypeBytes(*Cfg.ComputeDType);
  WBytes = FloatBytes.value_or(4);
  Mixed = WBytes < 4;
  K = Opts.DevicesPerNode ? Opts.DevicesPerNode : std::max(1u, Dev.DevicesPerNode);

  // Costs at micro-batch 1 and 2.
  std::vector<PhaseCost> F[2], B[2];
  std::vector<double> S[2], SS[2], Ck[2];
  std::vector<double> Live[2];
  const CostResult *Costs[2];
  CostResult C2;
  RecomputePlan Full1, Sel1;
  for (int I = 0; I < 2; ++I) {
    Model &M = I == 0 ? *M1 : *M2;
    AnalysisManager AM(M, Cfg, Diags);
    auto C = AM.getResult<CostAnalysis>();
    if (!C)
      return C.takeError();
    (I == 0 ? C1 : C2) = *C;
    Costs[I] = I == 0 ? &C1 : &C2;
    RecomputePlan Full = planRecompute(M, *Costs[I], Config::Recompute::Full, FloatBytes);
    RecomputePlan Sel = planRecompute(M, *Costs[I], Config::Recompute::Selective, FloatBytes);
    collect(M, *Costs[I], Full, Sel, FloatBytes, F[I], B[I], S[I], SS[I], Ck[I]);
    Live[I] = liveBytes(*M.Main, FloatBytes);
    if (I == 0) {
      Full1 = std::move(Full);
      Sel1 = std::move(Sel);
    }
  }
  if (C1.UnmodeledNodes)
    Diags.warn(M1->Path, formatv("{0} node(s) cannot be costed and are left out of the "
                                 "plan (see ridge analyze)",
                                 C1.UnmodeledNodes));
  const Graph &G = *M1->Main;
  size_t N = G.Nodes.size();
  Pos.resize(N);
  for (size_t P = 0; P < N; ++P) {
    Position &X = Pos[P];
    X.N = G.Nodes[P].get();
    X.Fwd = AffinePhase::fit(F[0][P], F[1][P]);
    X.Bwd = AffinePhase::fit(B[0][P], B[1][P]);
    X.Saved = Affine::fit(S[0][P], S[1][P]);
    X.SavedSelective = Affine::fit(SS[0][P], SS[1][P]);
    X.Checkpoint = Affine::fit(Ck[0][P], Ck[1][P]);
    X.CutBefore = Ck[0][P] > 0;
    X.Type = Cfg.ComputeDType.value_or(DType::Float);
    for (const Value *V : X.N->Outputs)
      if (!Cfg.ComputeDType && V && isFloatingPoint(V->Elem)) {
        X.Type = V->Elem;
        break;
      }
  }
  for (size_t I = 0; I < C1.Nodes.size(); ++I) {
    const NodeCost &NC = C1.Nodes[I];
    const Node *Top = NC.N;
    while (Top->Parent != &G && Top->Parent->ParentNode)
      Top = Top->Parent->ParentNode;
    if (Top->Parent != &G)
      continue;
    Pos[Top->Index].NeedsBackward |= NC.NeedsBackward;
    Pos[Top->Index].RecompFull |= Full1.Recomputed[I];
    Pos[Top->Index].RecompSel |= Sel1.Recomputed[I];
  }
  // Parameters belong to the first position that reads them.
  llvm::DenseSet<const Value *> Owned;
  for (size_t P = 0; P < N; ++P)
    for (const Value *In : Pos[P].N->Inputs)
      if (In && C1.Trainable.count(In) && Owned.insert(In).second) {
        Pos[P].Params += In->numElements().value_or(0);
        Pos[P].ParamValues.push_back(In);
      }
  Params = C1.TrainableParams;
  for (size_t P = 1; P < N; ++P)
    if (Pos[P].CutBefore)
      Boundaries.push_back(P);
  Boundaries.push_back(N);
  for (size_t P = 1; P <= N; ++P)
    AllBoundaries.push_back(P);
  LiveBytes.resize(N + 1);
  for (size_t P = 0; P <= N; ++P)
    LiveBytes[P] = Affine::fit(Live[0][P], Live[1][P]);
  double In1 = 0, In2 = 0;
  for (const Value *V : M1->Main->Inputs)
    if (!V->isInitializer())
      In1 += V->numBytes().value_or(0);
  for (const Value *V : M2->Main->Inputs)
    if (!V->isInitializer())
      In2 += V->numBytes().value_or(0);
  InputBytes = Affine::fit(In1, In2);

  // Compact per-position data for the search. Positions with equal costs,
  // type and backward flag take equal times at every micro-batch and split:
  // one class each.
  {
    struct Key {
      std::array<uint64_t, 16> Bits;
      uint8_t Type;
      bool NeedsBackward;
      bool operator==(const Key &O) const {
        return Bits == O.Bits && Type == O.Type && NeedsBackward == O.NeedsBackward;
      }
    };
    struct Hash {
      size_t operator()(const Key &K) const {
        uint64_t H = 1469598103934665603ULL ^ K.Type ^ (uint64_t(K.NeedsBackward) << 8);
        for (uint64_t B : K.Bits) {
          H = (H ^ B) * 1099511628211ULL;
          H ^= H >> 29;
        }
        return size_t(H);
      }
    };
    auto Put = [](uint64_t *Out, const AffinePhase &A) {
      const double V[8] = {A.Flops.A, A.Flops.B, A.Macs.A,  A.Macs.B,
                           A.Transc.A, A.Transc.B, A.Bytes.A, A.Bytes.B};
      std::memcpy(Out, V, sizeof(V));
    };
    std::unordered_map<Key, uint32_t, Hash> Classes;
    ClassOf.resize(N);
    for (size_t P = 0; P < N; ++P) {
      const Position &X = Pos[P];
      Key Ky;
      Put(Ky.Bits.data(), X.Fwd);
      Put(Ky.Bits.data() + 8, X.Bwd);
      Ky.Type = uint8_t(X.Type);
      Ky.NeedsBackward = X.NeedsBackward;
      auto [It, New] = Classes.try_emplace(Ky, uint32_t(ClassRep.size()));
      if (New)
        ClassRep.push_back(&X);
      ClassOf[P] = It->second;
    }
  }
  RecFull.resize(N);
  RecSel.resize(N);
  Cut.resize(N);
  SavedAff.resize(N);
  SelAff.resize(N);
  CkAff.resize(N);
  for (size_t P = 0; P < N; ++P) {
    RecFull[P] = Pos[P].RecompFull;
    RecSel[P] = Pos[P].RecompSel;
    Cut[P] = Pos[P].CutBefore;
    SavedAff[P] = Pos[P].Saved;
    SelAff[P] = Pos[P].SavedSelective;
    CkAff[P] = Pos[P].Checkpoint;
    if (Pos[P].CutBefore)
      CutPos.push_back(P);
  }
  return llvm::Error::success();
}

/// Whether sums of a sequence's terms are exact in any order and grouping:
/// every term is a multiple of 2^MinLsb and the magnitudes sum to at most
/// 2^52 such units, so every partial sum is representable. Then a stage's
/// sum taken position by position equals the difference of two prefix sums.
struct ExactSum {
  int MinLsb = 1 << 20;
  double AbsSum = 0;
  bool Finite = true;
  void add(double X) {
    if (X == 0)
      return;
    if (!std::isfinite(X)) {
      Finite = false;
      return;
    }
    uint64_t Bits;
    std::memcpy(&Bits, &X, sizeof(Bits));
    int E = int((Bits >> 52) & 0x7ff);
    uint64_t M = Bits & ((uint64_t(1) << 52) - 1);
    int Exp = -1074;
    if (E != 0) {
      M |= uint64_t(1) << 52;
      Exp = E - 1075;
    }
    MinLsb = std::min(MinLsb, Exp + __builtin_ctzll(M));
    AbsSum += std::fabs(X);
  }
  bool exact() const {
    if (!Finite)
      return false;
    if (AbsSum == 0)
      return true;
    return AbsSum <= std::ldexp(1.0, 52 + MinLsb);
  }
};

const TPPlan &Planner::tpPlan(unsigned T, bool SP) {
  auto Key = std::make_pair(T, SP);
  auto It = TPPlans.find(Key);
  if (It != TPPlans.end())
    return It->second;
  TPPlan &TP = TPPlans[Key];
  TP.Sharding = propagateSharding(*M1->Main, T, SP, C1.NeedsGrad);
  TP.Split = TP.Sharding.Split;
  TP.SplitParams.assign(Pos.size(), 0);
  for (size_t P = 0; P < Pos.size(); ++P)
    for (const Value *V : Pos[P].ParamValues)
      if (TP.Sharding.SplitParams.count(V))
        TP.SplitParams[P] += V->numElements().value_or(0);
  TP.SplitU8.resize(Pos.size());
  TP.PreOwn.assign(Pos.size() + 1, 0);
  TP.PreSplit.assign(Pos.size() + 1, 0);
  ExactSum XOwn, XSplit;
  for (size_t P = 0; P < Pos.size(); ++P) {
    TP.SplitU8[P] = TP.Split[P];
    double Own = Pos[P].Params - TP.SplitParams[P];
    XOwn.add(Own);
    XSplit.add(TP.SplitParams[P]);
    TP.PreOwn[P + 1] = TP.PreOwn[P] + Own;
    TP.PreSplit[P + 1] = TP.PreSplit[P] + TP.SplitParams[P];
  }
  TP.ParamsExact = XOwn.exact() && XSplit.exact();
  for (const TPCollective &Col : TP.Sharding.Collectives) {
    const Value *V2 = M2->Main->lookup(Col.Tensor->Name);
    double B1 = Col.Tensor->numElements().value_or(0);
    double B2 = V2 ? V2->numElements().value_or(0) : B1;
    double EB = Cfg.ComputeDType && isFloatingPoint(Col.Tensor->Elem)
                    ? dtypeBytes(*Cfg.ComputeDType)
                    : dtypeBytes(Col.Tensor->Elem);
    TP.Collectives.push_back(
        {Col.Kind, Col.Backward, Affine::fit(B1 * EB, B2 * EB), Col.At->Index});
  }
  return TP;
}

/// Splits positions [0, N) into Chunks contiguous ranges minimizing the
/// largest sum (binary search on the bound, greedy fill over prefix sums).
std::vector<size_t> balanceSegments(const std::vector<double> &Prefix, unsigned Chunks) {
  size_t N = Prefix.size() - 1;
  double Lo = 0, Hi = Prefix.back();
  for (size_t I = 0; I < N; ++I)
    Lo = std::max(Lo, Prefix[I + 1] - Prefix[I]);
  auto Fill = [&](double Bound, std::vector<size_t> *Cuts) {
    size_t Start = 0;
    unsigned Used = 0;
    while (Start < N) {
      if (++Used > Chunks)
        return false;
      size_t End = std::upper_bound(Prefix.begin() + Start + 1, Prefix.end(),
                                    Prefix[Start] + Bound) -
                   Prefix.begin() - 1;
      End = std::max(End, Start + 1);
      if (Cuts)
        Cuts->push_back(End);
      Start = End;
    }
    return true;
  };
  for (int It = 0; It < 40 && Hi - Lo > 1e-12 * std::max(1.0, Hi); ++It) {
    double Mid = (Lo + Hi) / 2;
    if (Fill(Mid, nullptr))
      Hi = Mid;
    else
      Lo = Mid;
  }
  std::vector<size_t> Ends;
  Fill(Hi, &Ends);
  while (Ends.size() < Chunks) // fewer segments than chunks: empty chunks
    Ends.push_back(N);
  return Ends;
}

/// Boundaries may only fall where Allowed says (Allowed[N] must be true);
/// positions between two allowed boundaries move together. Seg is the
/// prefix sum collapsed to the allowed boundaries: segment k ends at
/// Allowed[k], Seg[k + 1] = Prefix[Allowed[k]].
std::vector<size_t> balance(const std::vector<double> &Seg, unsigned Chunks,
                            const std::vector<size_t> &Allowed) {
  std::vector<size_t> SegEnds = balanceSegments(Seg, Chunks);
  std::vector<size_t> Ends;
  for (size_t E : SegEnds)
    Ends.push_back(E == 0 ? 0 : Allowed[std::min(E, Allowed.size()) - 1]);
  return Ends;
}

Group &Planner::group(int64_t B, unsigned T, bool SP) {
  if (G.Valid && G.B == B && G.T == T && G.SP == SP)
    return G;
  G.Valid = true;
  G.B = B;
  G.T = T;
  G.SP = SP;
  for (RecompTimes &RT : G.R) {
    RT.Ready = false;
    RT.Ends.clear();
  }
  for (bool &A : G.ActReady)
    A = false;
  G.Aggs.clear();
  const TPPlan &TP = tpPlan(T, SP);
  G.TP = &TP;
  size_t NPos = Pos.size();
  double Mb = double(B);

  // Per position: forward and backward time, FLOP terms (as evaluate() used
  // to compute them position by position), through the class memo.
  size_t NSlots = 2 * ClassRep.size();
  SlotDone.assign(NSlots, 0);
  SlotTF.resize(NSlots);
  SlotTB.resize(NSlots);
  SlotMF.resize(NSlots);
  SlotMM0.resize(NSlots);
  SlotMM1.resize(NSlots);
  G.TF.resize(NPos);
  G.TB.resize(NPos);
  double ModelFlops = 0, Matrix[3] = {0, 0, 0};
  for (size_t P = 0; P < NPos; ++P) {
    unsigned Sp = TP.SplitU8[P];
    size_t Slot = 2 * size_t(ClassOf[P]) + Sp;
    if (!SlotDone[Slot]) {
      const Position &X = *ClassRep[ClassOf[P]];
      double Scale = Sp ? 1.0 / T : 1.0;
      PhaseCost F = X.Fwd.at(Mb, Scale), Bc = X.Bwd.at(Mb, Scale);
      SlotTF[Slot] = placeOnDevice(F, Dev, X.Type, Cfg).Seconds;
      SlotTB[Slot] = X.NeedsBackward ? placeOnDevice(Bc, Dev, X.Type, Cfg).Seconds : 0;
      SlotMF[Slot] = (X.Fwd.Flops.at(Mb) + X.Bwd.Flops.at(Mb)) * T * Scale;
      SlotMM0[Slot] = 2 * (X.Fwd.Macs.at(Mb) * 1 + X.Bwd.Macs.at(Mb)) * T * Scale;
      SlotMM1[Slot] = 2 * (X.Fwd.Macs.at(Mb) * 2 + X.Bwd.Macs.at(Mb)) * T * Scale;
      SlotDone[Slot] = 1;
    }
    G.TF[P] = SlotTF[Slot];
    G.TB[P] = SlotTB[Slot];
    ModelFlops += SlotMF[Slot];
    Matrix[0] += SlotMM0[Slot];
    Matrix[1] += RecSel[P] ? SlotMM1[Slot] : SlotMM0[Slot];
    Matrix[2] += RecFull[P] ? SlotMM1[Slot] : SlotMM0[Slot];
  }
  G.ModelFlops = ModelFlops;
  for (int R = 0; R < 3; ++R)
    G.MatrixFlops[R] = Matrix[R];

  // Tensor-parallel collectives, summed per position in their order.
  G.TPT.assign(NPos, 0);
  bool TPInter = crossesNodes(1, T);
  double TPBw = linkBandwidth(TPInter), TPLat = linkLatency(TPInter);
  for (const TPCollectiveCost &Col : TP.Collectives) {
    double Bytes = Col.Bytes.at(Mb);
    G.TPT[Col.Pos] += collectiveSeconds(Col.Kind, Bytes, T, TPBw, TPLat);
  }
  G.TPCount = TP.Collectives.size();
  G.PreBwd.resize(NPos + 1);
  G.PreTP.resize(NPos + 1);
  G.PreBwd[0] = G.PreTP[0] = 0;
  for (size_t P = 0; P < NPos; ++P) {
    G.PreBwd[P + 1] = G.PreBwd[P] + G.TB[P];
    G.PreTP[P + 1] = G.PreTP[P] + G.TPT[P];
  }
  return G;
}

RecompTimes &Planner::recompTimes(Group &Gr, int R) {
  RecompTimes &RT = Gr.R[R];
  if (RT.Ready)
    return RT;
  RT.Ready = true;
  size_t NPos = Pos.size();
  const uint8_t *Flag = R == 2 ? RecFull.data() : R == 1 ? RecSel.data() : nullptr;
  RT.Cost.resize(NPos);
  RT.Prefix.resize(NPos + 1);
  RT.PreRec.resize(NPos + 1);
  RT.Prefix[0] = RT.PreRec[0] = 0;
  bool Bounded = true;
  for (size_t P = 0; P < NPos; ++P) {
    double TF = Gr.TF[P];
    double Rec = Flag && Flag[P] ? TF : 0;
    double C = TF + Gr.TB[P] + Rec;
    C += Gr.TPT[P];
    RT.Cost[P] = C;
    Bounded &= C >= 0 && C <= std::numeric_limits<double>::max();
    RT.Prefix[P + 1] = RT.Prefix[P] + C;
    RT.PreRec[P + 1] = RT.PreRec[P] + Rec;
  }
  RT.Bounded = Bounded && RT.Prefix[NPos] <= std::numeric_limits<double>::max();
  RT.Collapsed.assign(Boundaries.size() + 1, 0);
  for (size_t K = 0; K < Boundaries.size(); ++K)
    RT.Collapsed[K + 1] = RT.Prefix[Boundaries[K]];
  return RT;
}

void Planner::prepareActivations(Group &Gr, int R) {
  if (Gr.ActReady[R])
    return;
  Gr.ActReady[R] = true;
  size_t NPos = Pos.size();
  double Mb = double(Gr.B);
  const TPPlan &TP = *Gr.TP;
  auto Scale = [&](size_t P) { return (TP.SplitU8[P] || Gr.SP) ? 1.0 / Gr.T : 1.0; };
  auto Fill = [&](const std::vector<Affine> &Aff, std::vector<double> &Pre, bool OnlyCuts) {
    ExactSum X;
    Pre.resize(NPos + 1);
    Pre[0] = 0;
    for (size_t P = 0; P < NPos; ++P) {
      double V = OnlyCuts && !Cut[P] ? 0.0 : Aff[P].at(Mb) * Scale(P);
      X.add(V);
      Pre[P + 1] = Pre[P] + V;
    }
    return X.exact();
  };
  if (R == 1) {
    Gr.ASExact = Fill(SelAff, Gr.PreAS, false);
    return;
  }
  if (!Gr.ActReady[R == 0 ? 2 : 0]) // PreA serves both None and Full
    Gr.AExact = Fill(SavedAff, Gr.PreA, false);
  if (R == 2) {
    Gr.CkExact = Fill(CkAff, Gr.PreCk, true);
    Gr.SegSum.resize(CutPos.empty() ? 0 : CutPos.size() - 1);
    for (size_t K = 0; K + 1 < CutPos.size(); ++K)
      Gr.SegSum[K] = Gr.PreA[CutPos[K + 1]] - Gr.PreA[CutPos[K]];
  }
}

const StageAgg &Planner::stageAgg(Group &Gr, Config::Recompute Rc, unsigned P, unsigned V) {
  int R = Rc == Config::Recompute::Full ? 2 : Rc == Config::Recompute::Selective ? 1 : 0;
  std::array<unsigned, 3> Key{unsigned(R), P, V};
  auto Found = Gr.Aggs.find(Key);
  if (Found != Gr.Aggs.end())
    return Found->second;
  StageAgg &A = Gr.Aggs[Key];
  RecompTimes &RT = recompTimes(Gr, R);
  prepareActivations(Gr, R);
  const TPPlan &TP = *Gr.TP;
  size_t NPos = Pos.size();
  double Mb = double(Gr.B);
  unsigned Chunks = P * V;

  // Pipeline stages: P*V chunks balanced by time; chunk c runs on stage c % P.
  auto EndsIt = RT.Ends.find(Chunks);
  if (EndsIt == RT.Ends.end()) {
    std::vector<size_t> Ends;
    if (Chunks > 1) {
      // Over AllBoundaries (every position) the collapsed prefix is the
      // prefix itself.
      Ends = Boundaries.size() >= Chunks ? balance(RT.Collapsed, Chunks, Boundaries)
                                         : balance(RT.Prefix, Chunks, AllBoundaries);
    } else {
      Ends = {NPos};
    }
    EndsIt = RT.Ends.emplace(Chunks, std::move(Ends)).first;
  }
  const std::vector<size_t> &Ends = EndsIt->second;
  auto StartOf = [&](unsigned Ch) { return Ch == 0 ? size_t(0) : Ends[Ch - 1]; };

  for (unsigned Ch = 0; Ch < Chunks; ++Ch) {
    size_t End = Ends[Ch];
    if (End < NPos && Ch + 1 < Chunks)
      A.MaxBoundary =
          std::max(A.MaxBoundary, LiveBytes[End].at(Mb) * (Gr.SP ? 1.0 / Gr.T : 1.0));
  }

  // The slowest stage, and its times summed position by position. A
  // stage's time from prefix sums is within Err of the position-by-position
  // sum (all terms non-negative), so only stages within 2 Err of the largest
  // can be the slowest; those are summed exactly.
  const uint8_t *Flag = R == 2 ? RecFull.data() : R == 1 ? RecSel.data() : nullptr;
  auto Exact = [&](unsigned S, double &T, double &B, double &TPs, double &Rec) {
    T = B = TPs = Rec = 0;
    if (V == 1 && S == 0) { // the running sum from position 0 is the prefix sum
      size_t E = Ends[0];
      T = RT.Prefix[E];
      B = Gr.PreBwd[E];
      TPs = Gr.PreTP[E];
      Rec = RT.PreRec[E];
      return;
    }
    for (unsigned Ch = S; Ch < Chunks; Ch += P) {
      size_t E = Ends[Ch];
      for (size_t Q = StartOf(Ch); Q < E; ++Q) {
        T += RT.Cost[Q];
        B += Gr.TB[Q];
        TPs += Gr.TPT[Q];
        Rec += Flag && Flag[Q] ? Gr.TF[Q] : 0;
      }
    }
  };
  if (RT.Bounded) {
    std::vector<double> Approx(P, 0);
    for (unsigned Ch = 0; Ch < Chunks; ++Ch)
      Approx[Ch % P] += RT.Prefix[Ends[Ch]] - RT.Prefix[StartOf(Ch)];
    double MaxA = *std::max_element(Approx.begin(), Approx.end());
    double Err = 1.5 * (2.0 * V + 2) * (double(NPos) + 2) * 0x1p-53 * RT.Prefix[NPos];
    bool First = true;
    for (unsigned S = 0; S < P; ++S) {
      if (Approx[S] < MaxA - 2 * Err)
        continue;
      double T, B, TPs, Rec;
      Exact(S, T, B, TPs, Rec);
      if (First || T > A.Time) {
        A.Slowest = S;
        A.Time = T;
        A.Bwd = B;
        A.TP = TPs;
        A.Rec = Rec;
        First = false;
      }
    }
  } else {
    std::vector<double> Time(P, 0), Bwd(P, 0), TPs(P, 0), Rec(P, 0);
    for (unsigned Ch = 0; Ch < Chunks; ++Ch) {
      unsigned S = Ch % P;
      for (size_t Q = StartOf(Ch); Q < Ends[Ch]; ++Q) {
        Time[S] += RT.Cost[Q];
        Bwd[S] += Gr.TB[Q];
        TPs[S] += Gr.TPT[Q];
        Rec[S] += Flag && Flag[Q] ? Gr.TF[Q] : 0;
      }
    }
    unsigned Slowest = 0;
    for (unsigned S = 1; S < P; ++S)
      if (Time[S] > Time[Slowest])
        Slowest = S;
    A.Slowest = Slowest;
    A.Time = Time[Slowest];
    A.Bwd = Bwd[Slowest];
    A.TP = TPs[Slowest];
    A.Rec = Rec[Slowest];
  }

  // Memory terms of every stage: from prefix sums where those are exact,
  // else position by position.
  A.Params.assign(P, 0);
  A.SplitParams.assign(P, 0);
  A.Act.assign(P, 0);
  A.Ckpt.assign(P, 0);
  A.SegMax.assign(P, 0);
  bool ParamsExact = TP.ParamsExact;
  bool ActExact = R == 0 ? Gr.AExact : R == 1 ? Gr.ASExact : Gr.AExact && Gr.CkExact;
  for (unsigned Ch = 0; Ch < Chunks; ++Ch) {
    unsigned S = Ch % P;
    size_t Start = StartOf(Ch), End = Ends[Ch];
    if (ParamsExact) {
      A.Params[S] += TP.PreOwn[End] - TP.PreOwn[Start];
      A.SplitParams[S] += TP.PreSplit[End] - TP.PreSplit[Start];
    }
    if (ActExact) {
      if (R == 0) {
        A.Act[S] += Gr.PreA[End] - Gr.PreA[Start];
      } else if (R == 1) {
        A.Act[S] += Gr.PreAS[End] - Gr.PreAS[Start];
      } else {
        A.Ckpt[S] += Gr.PreCk[End] - Gr.PreCk[Start];
        if (Start < End) {
          // Segments between checkpoints: a partial one at each end of the
          // chunk, whole ones between.
          const std::vector<double> &PA = Gr.PreA;
          size_t I0 = std::lower_bound(CutPos.begin(), CutPos.end(), Start) - CutPos.begin();
          size_t I1 = std::lower_bound(CutPos.begin() + I0, CutPos.end(), End) - CutPos.begin();
          double M = A.SegMax[S];
          if (I0 == I1) {
            M = std::max(M, PA[End] - PA[Start]);
          } else {
            M = std::max(M, PA[CutPos[I0]] - PA[Start]);
            for (size_t Kk = I0; Kk + 1 < I1; ++Kk)
              M = std::max(M, Gr.SegSum[Kk]);
            M = std::max(M, PA[End] - PA[CutPos[I1 - 1]]);
          }
          A.SegMax[S] = M;
        }
      }
    }
    if (ParamsExact && ActExact)
      continue;
    double Segment = 0;
    for (size_t Q = Start; Q < End; ++Q) {
      // With sequence parallelism the replicated regions are split too.
      double ActScale = (TP.SplitU8[Q] || Gr.SP) ? 1.0 / Gr.T : 1.0;
      if (!ParamsExact) {
        A.Params[S] += Pos[Q].Params - TP.SplitParams[Q];
        A.SplitParams[S] += TP.SplitParams[Q];
      }
      if (ActExact)
        continue;
      if (R == 0)
        A.Act[S] += SavedAff[Q].at(Mb) * ActScale;
      else if (R == 1)
        A.Act[S] += SelAff[Q].at(Mb) * ActScale;
      else {
        if (Cut[Q]) {
          A.SegMax[S] = std::max(A.SegMax[S], Segment);
          Segment = 0;
          A.Ckpt[S] += CkAff[Q].at(Mb) * ActScale;
        }
        Segment += SavedAff[Q].at(Mb) * ActScale;
      }
    }
    if (!ActExact)
      A.SegMax[S] = std::max(A.SegMax[S], Segment);
  }
  return A;
}

PlanEval Planner::evaluate(const PlanConfig &PC, unsigned N) {
  PlanEval E;
  E.C = PC;
  Group &Gr = group(PC.MicroBatch, PC.T, PC.SP);
  const StageAgg &A = stageAgg(Gr, PC.Recomp, PC.P, PC.V);
  double Mb = double(PC.MicroBatch);
  bool TPInter = crossesNodes(1, PC.T);
  bool DPInter = crossesNodes(PC.T, PC.D);
  bool PPInter = PC.P > 1 && (uint64_t(PC.T) * PC.D >= K || crossesNodes(PC.T * PC.D, PC.P));
  E.TPTier = TPInter ? "inter-node" : "intra-node";
  E.DPTier = DPInter ? "inter-node" : "intra-node";
  E.PPTier = PPInter ? "inter-node" : "intra-node";
  E.TPCollectivesPerStep = Gr.TPCount;
  E.TPCollectivesPerStep *= PC.M;

  double MaxBoundary = A.MaxBoundary;
  double TStage = A.Time;
  // Point-to-point: activation forward, gradient backward, at each of the
  // stage's v chunk boundaries.
  // With tensor parallelism each of the t ranks sends 1/t of the boundary
  // and the receivers all-gather it over the tensor-parallel link
  // (Narayanan et al. 2021, sec. 4.1, scatter/gather).
  double P2P = 0;
  if (PC.P > 1) {
    double Send = PC.T > 1 && !PC.SP ? MaxBoundary / PC.T : MaxBoundary;
    double Gather = PC.T > 1 && !PC.SP
                        ? collectiveSeconds(CollectiveKind::AllGather, MaxBoundary, PC.T,
                                            linkBandwidth(TPInter), linkLatency(TPInter))
                        : 0;
    P2P = 2.0 * PC.V * (linkLatency(PPInter) + Send / linkBandwidth(PPInter) + Gather);
  }
  double TMicro = TStage + P2P;
  double Slots = double(PC.M) + double(PC.P - 1) / PC.V;
  double Pipeline = TMicro * Slots;
  E.Bubble = PC.P > 1 ? double(PC.P - 1) / (PC.V * PC.M + PC.P - 1) : 0;
  E.BubbleSeconds = TMicro * double(PC.P - 1) / PC.V;
  E.ComputeSeconds = (TStage - A.TP) * PC.M;
  E.RecomputeSeconds = A.Rec * PC.M;
  E.TPSeconds = A.TP * PC.M;
  E.P2PSeconds = P2P * PC.M;

  // Memory of the fullest stage.
  double WorstMem = 0, WorstParams = 0, WorstAct = 0, WorstParamCount = 0;
  OptimizerCost O = optimizerCost(Cfg.Opt);
  double Master = Mixed ? 4 : 0;
  double PerParam = WBytes / (PC.Zero >= 3 ? PC.D : 1) + WBytes / (PC.Zero >= 2 ? PC.D : 1) +
                    (Master + O.StateBytesPerParam) / (PC.Zero >= 1 ? PC.D : 1);
  double Interleave = 1.0 + double(PC.P - 1) / (double(PC.P) * PC.V);
  bool FullRecomp = PC.Recomp == Config::Recompute::Full;
  for (unsigned S = 0; S < PC.P; ++S) {
    double P = A.Params[S] + A.SplitParams[S] / PC.T;
    // 1F1B: stage s holds p - s micro-batches in flight; interleaving adds
    // (p-1)/(p v) of a micro-batch's activations (Narayanan et al. 2021).
    double InFlight = double(PC.P - S);
    if (PC.V > 1)
      InFlight *= Interleave;
    double Act = FullRecomp ? A.Ckpt[S] * InFlight + A.SegMax[S] : A.Act[S] * InFlight;
    double Mem = P * PerParam + Act;
    if (Mem > WorstMem) {
      WorstMem = Mem;
      WorstParams = P * PerParam;
      WorstAct = Act;
      WorstParamCount = P;
    }
  }
  E.MemoryBytes = WorstMem;
  E.ParamBytes = WorstParams;
  E.ActivationBytes = WorstAct;
  if (WorstMem > Dev.MemCapacity) {
    E.Fits = false;
    E.Why = formatv("needs {0:F1} GB per device (parameters and optimizer {1:F1}, "
                    "activations {2:F1}) of {3:F0} GB",
                    WorstMem / 1e9, WorstParams / 1e9, WorstAct / 1e9, Dev.MemCapacity / 1e9);
  }

  // Data parallel: gradients of the fullest stage, ring all-reduce over d.
  double GradBytes = WorstParamCount * WBytes;
  E.DPSeconds = collectiveSeconds(CollectiveKind::AllReduce, GradBytes, PC.D,
                                  linkBandwidth(DPInter), linkLatency(DPInter)) *
                (PC.Zero >= 3 ? 1.5 : 1.0);
  double Hidden = std::min(E.DPSeconds, A.Bwd);
  E.DPExposedSeconds = E.DPSeconds - Hidden;
  E.OverlapSlowdownSeconds = Hidden * Opts.OverlapSlowdown;
  // Optimizer over the device's parameter share (ZeRO >= 1 shards it).
  double UpdateBytes = WorstParamCount *
                       (2 * (Mixed ? 4 : WBytes) + WBytes + 2 * O.StateBytesPerParam +
                        (Mixed ? WBytes : 0)) /
                       (PC.Zero >= 1 ? PC.D : 1);
  double UpdateFlops = WorstParamCount * O.FlopsPerParam / (PC.Zero >= 1 ? PC.D : 1);
  E.OptimizerSeconds =
      placeOnDevice(PhaseCost{UpdateFlops, 0, 0, UpdateBytes}, Dev, DType::Float, Cfg).Seconds;
  // The input feed, host to device, prefetched behind the step's compute.
  double Feed = Dev.HostLink.present()
                    ? InputBytes.at(Mb) * PC.M / (Dev.HostLink.Bandwidth) + Dev.HostLink.Latency
                    : 0;
  E.FeedExposedSeconds = std::max(0.0, Feed - Pipeline);
  E.StepSeconds = Pipeline + E.DPExposedSeconds + E.OverlapSlowdownSeconds +
                  E.OptimizerSeconds + E.FeedExposedSeconds;
  int R = PC.Recomp == Config::Recompute::Full ? 2 : PC.Recomp == Config::Recompute::Selective ? 1 : 0;
  E.ModelFlops = Gr.ModelFlops * PC.M * PC.D;
  E.MatrixFlops = Gr.MatrixFlops[R] * PC.M * PC.D;
  double Peak = Dev.peak(Cfg.ComputeDType.value_or(DType::Float)).value_or(0);
  E.MFU = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N / Peak : 0;
  E.TFlopsPerDevice = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N : 0;
  return E;
}

/// Evaluates Cs grouped by what they share (micro-batch, t, sp, then
/// recomputation and partition), returning the results in Cs's order.
std::vector<PlanEval> Planner::evaluateAll(const std::vector<PlanConfig> &Cs, unsigned N) {
  std::vector<size_t> Order(Cs.size());
  std::iota(Order.begin(), Order.end(), size_t(0));
  auto Key = [](const PlanConfig &C) {
    return std::make_tuple(C.MicroBatch, C.T, C.SP, int(C.Recomp), C.P * C.V, C.P, C.V);
  };
  std::stable_sort(Order.begin(), Order.end(),
                   [&](size_t A, size_t B) { return Key(Cs[A]) < Key(Cs[B]); });
  std::vector<PlanEval> Out(Cs.size());
  for (size_t I : Order)
    Out[I] = evaluate(Cs[I], N);
  return Out;
}

std::vector<unsigned> divisors(unsigned N) {
  std::vector<unsigned> D;
  for (unsigned I = 1; I <= N; ++I)
    if (N % I == 0)
      D.push_back(I);
  return D;
}

std::vector<PlanConfig> Planner::enumerate(unsigned N, const PlanOptions &Opts) const {
  std::vector<PlanConfig> Out;
  unsigned MaxTP = Opts.MaxTP ? Opts.MaxTP : K;
  size_t Work = 0;
  for (const Position &X : Pos)
    Work += X.Fwd.Flops.at(1) > 0;
  for (unsigned T : divisors(N)) {
    if ((Opts.TP && T != *Opts.TP) || (!Opts.TP && T > MaxTP))
      continue;
    for (unsigned P : divisors(N / T)) {
      if ((Opts.PP && P != *Opts.PP) || P > std::max<size_t>(1, Work))
        continue;
      unsigned D = N / (T * P);
      if (Opts.DP && D != *Opts.DP)
        continue;
      if (Opts.GlobalBatch % D)
        continue;
      for (int64_t B = 1; B <= Opts.GlobalBatch / D; B *= 2) {
        if (Opts.MicroBatch && B != *Opts.MicroBatch)
          continue;
        if ((Opts.GlobalBatch / D) % B)
          continue;
        int64_t Mi = Opts.GlobalBatch / D / B;
        for (unsigned V : {1u, 2u, 3u, 4u}) {
          if ((Opts.Interleave && V != *Opts.Interleave) ||
              (!Opts.Interleave && V > 1 && (P == 1 || Mi % P != 0)))
            continue;
          for (Config::Recompute R : {Config::Recompute::None, Config::Recompute::Selective,
                                      Config::Recompute::Full}) {
            if (Opts.Recomp && R != *Opts.Recomp)
              continue;
            for (unsigned Z = 0; Z <= 3; ++Z) {
              if ((Opts.Zero && Z != *Opts.Zero) || (!Opts.Zero && D == 1 && Z > 0))
                continue;
              for (bool SP : {false, true}) {
                if ((Opts.SequenceParallel && SP != *Opts.SequenceParallel) ||
                    (!Opts.SequenceParallel && SP && T == 1))
                  continue;
                Out.push_back({D, T, P, V, Z, B, Mi, R, SP});
              }
            }
          }
        }
      }
    }
  }
  return Out;
}

bool Planner::bestFor(unsigned N, const PlanOptions &O, PlanEval &Best,
                      std::vector<PlanEval> *All, std::map<std::string, size_t> *Reasons,
                      size_t &Evaluated) {
  bool Found = false;
  std::vector<PlanEval> Evals = evaluateAll(enumerate(N, O), N);
  for (PlanEval &E : Evals) {
    ++Evaluated;
    if (!E.Fits) {
      if (Reasons)
        ++(*Reasons)["does not fit device memory"];
      continue;
    }
    if (All)
      All->push_back(E);
    if (!Found || E.StepSeconds < Best.StepSeconds) {
      Best = E;
      Found = true;
    }
  }
  return Found;
}

PlanResult Planner::search() {
  auto Start = std::chrono::steady_clock::now();
  PlanResult R;
  R.Dev = &Dev;
  R.Opts = Opts;
  R.StepType = Cfg.ComputeDType.value_or(DType::Float);
  R.Params = Params;
  std::map<std::string, size_t> Reasons;
  bool Fixed = Opts.TP && Opts.PP && Opts.DP;
  PlanEval Winner;
  bestFor(Opts.Devices, Opts, Winner, &R.Ranked, &Reasons, R.Evaluated);
  std::stable_sort(R.Ranked.begin(), R.Ranked.end(),
                   [](const PlanEval &A, const PlanEval &B) { return A.StepSeconds < B.StepSeconds; });
  if (Fixed && R.Ranked.empty()) {
    // The fixed configuration does not fit: still report its breakdown.
    auto Cs = enumerate(Opts.Devices, Opts);
    if (!Cs.empty())
      R.Fixed = evaluate(Cs.front(), Opts.Devices);
  } else if (Fixed) {
    R.Fixed = R.Ranked.front();
  }
  for (auto &[Why, Count] : Reasons)
    R.RejectReasons.emplace_back(Why, Count);
  R.Rejected = R.Evaluated - R.Ranked.size();
  // Single device: the same global batch, best micro-batch and
  // recomputation, whether or not it fits (the speedup baseline).
  {
    PlanEval Best;
    bool Found = false;
    std::vector<PlanConfig> Cs;
    for (int64_t B = 1; B <= Opts.GlobalBatch; B *= 2) {
      if (Opts.GlobalBatch % B)
        continue;
      for (Config::Recompute Rc : {Config::Recompute::None, Config::Recompute::Full})
        Cs.push_back(PlanConfig{1, 1, 1, 1, 0, B, Opts.GlobalBatch / B, Rc, false});
    }
    std::vector<PlanEval> Evals = evaluateAll(Cs, 1);
    for (const PlanEval &E : Evals)
      if (!Found || E.StepSeconds < Best.StepSeconds) {
        Best = E;
        Found = true;
      }
    R.SingleDevice = Best;
  }
  if (!R.Ranked.empty()) {
    const PlanEval &W = R.Ranked.front();
    const TPPlan &TP = tpPlan(W.C.T, W.C.SP);
    for (size_t P = 0; P < Pos.size(); ++P)
      if (!TP.Sharding.WeightSplit[P].empty())
        R.WeightSplits.emplace_back(Pos[P].N->Name, TP.Sharding.WeightSplit[P]);
  }
  if (Opts.Scaling) {
    // Strong scaling: the same global batch on 1, 2, 4, ... devices, each
    // with its best configuration (a fixed one is not imposed here).
    PlanOptions Free = Opts;
    Free.TP.reset();
    Free.PP.reset();
    Free.DP.reset();
    for (unsigned N = 1; N <= Opts.Devices; N *= 2) {
      PlanEval Best;
      size_t Ev = 0;
      if (bestFor(N, Free, Best, nullptr, nullptr, Ev))
        R.Scaling.emplace_back(N, Best);
    }
  }
  R.SearchSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  return R;
}

} // namespace

llvm::Expected<PlanResult> ridge::planParallelism(const BatchLoader &Load, const Config &Cfg,
                                                  const PlanOptions &Opts,
                                                  DiagnosticEngine &Diags) {
  if (!Cfg.Dev)
    return usageError("plan: no device");
  if (Opts.Devices == 0)
    return usageError("plan: --devices must be at least 1");
  if (Opts.GlobalBatch <= 0)
    return usageError("plan: --global-batch N is required");
  if (Opts.Devices > 1 && !Cfg.Dev->IntraNode.present() && !Cfg.Dev->InterNode.present())
    return usageError(formatv("plan: device {0} describes no links between devices; "
                              "cannot plan {1} devices",
                              Cfg.Dev->Name, Opts.Devices));
  Planner P(Cfg, Opts, Diags);
  if (llvm::Error E = P.prepare(Load))
    return E;
  return P.search();
}
