//===- Planner.cpp - Recommend a parallel strategy for N devices ----------===//
#include "passes/Planner.h"
#include "passes/CostModel.h"
#include "passes/Roofline.h"
#include "passes/TrainingStep.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

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
  std::vector<TPCollectiveCost> Collectives;
  std::vector<double> SplitParams; ///< per position: parameters split t ways
  ShardingResult Sharding;
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

  const TPPlan &tpPlan(unsigned T, bool SP);
  PlanEval evaluate(const PlanConfig &PC, unsigned N);
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
  return llvm::Error::success();
}

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
/// positions between two allowed boundaries move together.
std::vector<size_t> balance(const std::vector<double> &Prefix, unsigned Chunks,
                            const std::vector<size_t> &Allowed) {
  // Collapse to the allowed boundaries: segment k ends at Allowed[k].
  std::vector<double> Seg(Allowed.size() + 1, 0);
  for (size_t K = 0; K < Allowed.size(); ++K)
    Seg[K + 1] = Prefix[Allowed[K]];
  std::vector<size_t> SegEnds = balanceSegments(Seg, Chunks);
  std::vector<size_t> Ends;
  for (size_t E : SegEnds)
    Ends.push_back(E == 0 ? 0 : Allowed[std::min(E, Allowed.size()) - 1]);
  return Ends;
}

PlanEval Planner::evaluate(const PlanConfig &PC, unsigned N) {
  PlanEval E;
  E.C = PC;
  const TPPlan &TP = tpPlan(PC.T, PC.SP);
  double Mb = double(PC.MicroBatch);
  size_t NPos = Pos.size();
  bool TPInter = crossesNodes(1, PC.T);
  bool DPInter = crossesNodes(PC.T, PC.D);
  bool PPInter = PC.P > 1 && (uint64_t(PC.T) * PC.D >= K || crossesNodes(PC.T * PC.D, PC.P));
  E.TPTier = TPInter ? "inter-node" : "intra-node";
  E.DPTier = DPInter ? "inter-node" : "intra-node";
  E.PPTier = PPInter ? "inter-node" : "intra-node";

  // Per position: time per micro-batch (forward, backward, recomputation,
  // tensor-parallel collectives).
  std::vector<double> Cost(NPos), BwdTime(NPos), TPTime(NPos, 0), RecTime(NPos, 0);
  double ModelFlops = 0, MatrixFlops = 0;
  for (size_t P = 0; P < NPos; ++P) {
    const Position &X = Pos[P];
    double Scale = TP.Split[P] ? 1.0 / PC.T : 1.0;
    PhaseCost F = X.Fwd.at(Mb, Scale), B = X.Bwd.at(Mb, Scale);
    double TF = placeOnDevice(F, Dev, X.Type, Cfg).Seconds;
    double TB = X.NeedsBackward ? placeOnDevice(B, Dev, X.Type, Cfg).Seconds : 0;
    bool Rec = (PC.Recomp == Config::Recompute::Full && X.RecompFull) ||
               (PC.Recomp == Config::Recompute::Selective && X.RecompSel);
    RecTime[P] = Rec ? TF : 0;
    BwdTime[P] = TB;
    Cost[P] = TF + TB + RecTime[P];
    ModelFlops += (X.Fwd.Flops.at(Mb) + X.Bwd.Flops.at(Mb)) * PC.T * Scale;
    MatrixFlops += 2 * (X.Fwd.Macs.at(Mb) * (Rec ? 2 : 1) + X.Bwd.Macs.at(Mb)) * PC.T * Scale;
  }
  double TPBw = linkBandwidth(TPInter), TPLat = linkLatency(TPInter);
  for (const TPCollectiveCost &Col : TP.Collectives) {
    double Bytes = Col.Bytes.at(Mb);
    TPTime[Col.Pos] += collectiveSeconds(Col.Kind, Bytes, PC.T, TPBw, TPLat);
    ++E.TPCollectivesPerStep;
  }
  E.TPCollectivesPerStep *= PC.M;
  for (size_t P = 0; P < NPos; ++P)
    Cost[P] += TPTime[P];

  // Pipeline stages: P*V chunks balanced by time; chunk c runs on stage c % P.
  std::vector<double> Prefix(NPos + 1, 0);
  for (size_t P = 0; P < NPos; ++P)
    Prefix[P + 1] = Prefix[P] + Cost[P];
  unsigned Chunks = PC.P * PC.V;
  std::vector<size_t> Ends =
      Chunks > 1 ? balance(Prefix, Chunks, Boundaries.size() >= Chunks ? Boundaries : AllBoundaries)
                 : std::vector<size_t>{NPos};
  std::vector<double> StageTime(PC.P, 0), StageBwd(PC.P, 0), StageTP(PC.P, 0),
      StageRec(PC.P, 0), StageParams(PC.P, 0), StageSplitParams(PC.P, 0),
      StageAct(PC.P, 0), StageCkpt(PC.P, 0), StageSegMax(PC.P, 0);
  double MaxBoundary = 0;
  size_t Start = 0;
  for (unsigned Ch = 0; Ch < Chunks; ++Ch) {
    unsigned S = Ch % PC.P;
    size_t End = Ends[Ch];
    double Segment = 0;
    for (size_t P = Start; P < End; ++P) {
      const Position &X = Pos[P];
      // With sequence parallelism the replicated regions are split too.
      double ActScale = (TP.Split[P] || PC.SP) ? 1.0 / PC.T : 1.0;
      StageTime[S] += Cost[P];
      StageBwd[S] += BwdTime[P];
      StageTP[S] += TPTime[P];
      StageRec[S] += RecTime[P];
      StageParams[S] += X.Params - TP.SplitParams[P];
      StageSplitParams[S] += TP.SplitParams[P];
      if (PC.Recomp == Config::Recompute::None)
        StageAct[S] += X.Saved.at(Mb) * ActScale;
      else if (PC.Recomp == Config::Recompute::Selective)
        StageAct[S] += X.SavedSelective.at(Mb) * ActScale;
      else {
        if (X.CutBefore) {
          StageSegMax[S] = std::max(StageSegMax[S], Segment);
          Segment = 0;
          StageCkpt[S] += X.Checkpoint.at(Mb) * ActScale;
        }
        Segment += X.Saved.at(Mb) * ActScale;
      }
    }
    StageSegMax[S] = std::max(StageSegMax[S], Segment);
    if (End < NPos && Ch + 1 < Chunks)
      MaxBoundary = std::max(MaxBoundary, LiveBytes[End].at(Mb) * (PC.SP ? 1.0 / PC.T : 1.0));
    Start = End;
  }
  unsigned Slowest = 0;
  for (unsigned S = 1; S < PC.P; ++S)
    if (StageTime[S] > StageTime[Slowest])
      Slowest = S;
  double TStage = StageTime[Slowest];
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
  E.ComputeSeconds = (TStage - StageTP[Slowest]) * PC.M;
  E.RecomputeSeconds = StageRec[Slowest] * PC.M;
  E.TPSeconds = StageTP[Slowest] * PC.M;
  E.P2PSeconds = P2P * PC.M;

  // Memory of the fullest stage.
  double WorstMem = 0, WorstParams = 0, WorstAct = 0, WorstParamCount = 0;
  OptimizerCost O = optimizerCost(Cfg.Opt);
  double Master = Mixed ? 4 : 0;
  for (unsigned S = 0; S < PC.P; ++S) {
    double P = StageParams[S] + StageSplitParams[S] / PC.T;
    double PerParam = WBytes / (PC.Zero >= 3 ? PC.D : 1) + WBytes / (PC.Zero >= 2 ? PC.D : 1) +
                      (Master + O.StateBytesPerParam) / (PC.Zero >= 1 ? PC.D : 1);
    // 1F1B: stage s holds p - s micro-batches in flight; interleaving adds
    // (p-1)/(p v) of a micro-batch's activations (Narayanan et al. 2021).
    double InFlight = double(PC.P - S);
    if (PC.V > 1)
      InFlight *= 1.0 + double(PC.P - 1) / (double(PC.P) * PC.V);
    double Act = PC.Recomp == Config::Recompute::Full
                     ? StageCkpt[S] * InFlight + StageSegMax[S]
                     : StageAct[S] * InFlight;
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
  double Hidden = std::min(E.DPSeconds, StageBwd[Slowest]);
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
  E.ModelFlops = ModelFlops * PC.M * PC.D;
  E.MatrixFlops = MatrixFlops * PC.M * PC.D;
  double Peak = Dev.peak(Cfg.ComputeDType.value_or(DType::Float)).value_or(0);
  E.MFU = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N / Peak : 0;
  E.TFlopsPerDevice = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N : 0;
  return E;
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
  for (const PlanConfig &PC : enumerate(N, O)) {
    PlanEval E = evaluate(PC, N);
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
    for (int64_t B = 1; B <= Opts.GlobalBatch; B *= 2) {
      if (Opts.GlobalBatch % B)
        continue;
      for (Config::Recompute Rc : {Config::Recompute::None, Config::Recompute::Full}) {
        PlanConfig PC{1, 1, 1, 1, 0, B, Opts.GlobalBatch / B, Rc, false};
        PlanEval E = evaluate(PC, 1);
        if (!Found || E.StepSeconds < Best.StepSeconds) {
          Best = E;
          Found = true;
        }
      }
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
