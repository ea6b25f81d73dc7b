//===- Planner.cpp - Recommend a parallel strategy for N devices ----------===//
#include "passes/plan/Planner.h"
#include "passes/cost/CostModel.h"
#include "analyzer/Format.h"
#include "passes/roofline/Roofline.h"
#include "passes/cost/TrainingStep.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <atomic>
#include <array>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <numeric>
#include <set>
#include <thread>
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
/// any subgraph it holds: what decides its times (its memory terms and
/// recomputation flags are in the planner's per-position tables).
struct Position {
  const Node *N = nullptr;
  AffinePhase Fwd, Bwd;
  bool NeedsBackward = false;
  DType Type = DType::Float;
};

/// A tensor-parallel collective's kind and full tensor bytes.
struct CollectiveCost {
  CollectiveKind Kind;
  Affine Bytes;
};

/// What one tensor-parallel degree (and sequence-parallel choice) implies:
/// its sharding and what the search derives from it. Nothing in it depends
/// on the degree, so a degree whose propagation would repeat a larger one's
/// (ShardingResult::AllDivisible) shares that degree's plan.
struct TPPlan {
  ShardingResult Sharding;
  std::vector<uint8_t> SplitU8;    ///< Sharding.Split, one byte a position
  /// Per position: its slot, 2 class + split (positions of one slot take
  /// equal times in every group); UsedSlots lists each slot once.
  std::vector<uint32_t> SlotOf, UsedSlots;
  bool AnySplit = false; ///< some position is split
  /// The collectives in order: position and cost (an index into
  /// Planner::CollCosts); UsedCosts lists the indices used.
  std::vector<uint32_t> CollPos, CollCost, UsedCosts;
  std::vector<uint8_t> CollFwd;    ///< per collective: runs in the forward
  /// Per position: parameters split t ways (kept only when the prefix sums
  /// below are not exact: stageAgg then sums it position by position).
  std::vector<double> SplitParams;
  /// Prefix sums of the unsplit (Params - SplitParams) and split parameters;
  /// Exact when every partial sum is exact (so a stage's sum in any order
  /// equals the difference of two prefixes).
  std::vector<double> PreOwn, PreSplit;
  bool ParamsExact = false;
};

// The search evaluates thousands of configurations on graphs of up to
// millions of positions; it produces exactly what summing every quantity
// position by position, configuration by configuration, would:
//  - a Group holds what depends on (micro-batch, t, sp) only: each
//    position's times (positions with equal costs share one roofline
//    placement, a slot), the FLOP sums, and for each recomputation mode the
//    running sum of the positions' costs (the balance's prefix), all summed
//    in position order as before;
//  - a StageAgg holds what a partition (recomputation, p, v) adds: the
//    chunk ends, the slowest stage's times and each stage's memory terms;
//    the ZeRO stages (and d) only enter evaluate()'s O(p) tail;
//  - a stage's time must be its position-by-position sum, bit for bit:
//    prefix differences bound each stage's time, and only the stages that
//    can be the slowest are summed (once per distinct sequence of costs);
//  - parameter and activation sums are whole numbers of bytes (or halves,
//    quarters ... under a power-of-two t): while no partial sum rounds, a
//    prefix difference is the exact sum; otherwise they are summed position
//    by position as before.

/// What the search needs of one partition (micro-batch, t, sp,
/// recomputation, p, v): the slowest stage's times and each stage's memory
/// terms, as evaluate() sums them position by position.
struct StageAgg {
  unsigned Slowest = 0;
  double Time = 0, Bwd = 0, TP = 0, Rec = 0; ///< of the slowest stage
  double MaxBoundary = 0;
  std::vector<double> Params, SplitParams, Act, Ckpt, SegMax; ///< per stage
  /// Copies of shared weights held by stages other than their owner's
  /// (unsplit, and split t ways), per stage.
  std::vector<double> CopyParams, CopySplit;
  /// Each shared weight the partition puts on several stages: how many
  /// stages hold it, whether it is split t ways, its elements.
  std::vector<std::tuple<unsigned, bool, double>> Tied;
};

/// Everything that depends on (micro-batch, t, sp) only, per position; [R]
/// by recomputation (none, selective, full).
struct Group {
  bool Valid = false;
  int64_t B = 0;
  unsigned T = 0;
  bool SP = false;
  const TPPlan *TP = nullptr;
  /// Per position: its slot (TPPlan::SlotOf), whose forward and backward
  /// times are SlotTF and SlotTB (positions of one class and split have
  /// equal times; a table per position cost 16 bytes a position to write
  /// and read again for every group of a million-position graph).
  const uint32_t *SlotOf = nullptr;
  std::vector<double> SlotTF, SlotTB;
  /// Per position: TP collectives, and of which forward (replayed by full
  /// recomputation). Zero but at TP's collectives (each group clears the
  /// last one's: a full clear wrote 16 bytes a position).
  std::vector<double> TPT, TPF;
  /// Prefix[k]: the costs of positions 0 .. k-1 summed in order (cost():
  /// forward + backward + recompute + TP).
  std::vector<double> Prefix[3];
  std::vector<double> Collapsed[3]; ///< Prefix at the stage boundaries (for balance)
  bool Bounded[3] = {false, false, false}; ///< every cost finite and non-negative
  /// Position Q's forward and backward time.
  double tf(size_t Q) const { return SlotTF[SlotOf[Q]]; }
  double tb(size_t Q) const { return SlotTB[SlotOf[Q]]; }
  /// Position Q's cost under recomputation R (Flag: the positions it
  /// replays), computed as group() sums it into Prefix[R], bit for bit.
  double cost(int R, const uint8_t *Flag, size_t Q) const {
    double TF = tf(Q), Rec = R == 0 || !Flag[Q] ? 0 : R == 1 ? TF : TF + TPF[Q];
    double X = TF + tb(Q) + Rec;
    return X += TPT[Q];
  }
  double MaxSeg[3][2];                     ///< largest segment of Prefix, Collapsed (-1: not yet)
  std::map<unsigned, std::vector<size_t>> Ends[3]; ///< by chunk count
  double TotBwd = 0, TotTP = 0, TotRec[3] = {0, 0, 0}; ///< over all positions, in order
  double ModelFlops = 0, MatrixFlops[3] = {0, 0, 0};
  size_t TPCount = 0;
  // Activation terms (Saved, SavedSelective, Checkpoint at cuts, each times
  // its activation scale) as prefix sums, and whether those are exact (so a
  // stage's sum in any order is the difference of two prefixes).
  std::vector<double> PreA, PreAS;
  /// The checkpoint terms' prefix sums over the cuts alone (they are zero
  /// elsewhere): PreCk[k] sums those of CutPos[0 .. k-1].
  std::vector<double> PreCk;
  bool AExact = false, ASExact = false, CkExact = false;
  std::vector<double> SegSum; ///< PreA between consecutive cuts
  std::map<std::array<unsigned, 3>, StageAgg> Aggs; ///< by (recompute, p, v)
};

/// Affine terms that are whole numbers (bytes): their values at an integer
/// micro-batch, scaled by a power of two, sum exactly while the magnitudes
/// stay below 2^52 units.
struct IntegralTerms {
  bool Integral = true;
  double SumAbsA = 0, SumAbsB = 0;
  void add(const Affine &X) {
    Integral &= std::isfinite(X.A) && std::isfinite(X.B) && X.A == std::trunc(X.A) &&
                X.B == std::trunc(X.B);
    SumAbsA += std::fabs(X.A);
    SumAbsB += std::fabs(X.B);
  }
  /// Exact at micro-batch Mb with every term times 1 or 2^-Shift.
  bool exactAt(double Mb, int Shift) const {
    return Integral && Shift >= 0 &&
           (SumAbsA + SumAbsB * Mb) * (1 + 1e-6) <= std::ldexp(1.0, 52 - Shift);
  }
};

class Planner {
public:
  Planner(const Config &Cfg, const PlanOptions &O, DiagnosticEngine &Diags)
      : Cfg(Cfg), Opts(O), Diags(Diags), Dev(*Cfg.Dev) {}
  ~Planner() {
    if (Worker.joinable())
      Worker.join();
  }

  llvm::Error prepare(const BatchLoader &Load);
  llvm::Expected<PlanResult> search();

private:
  const Config &Cfg;
  const PlanOptions &Opts;
  DiagnosticEngine &Diags;
  const Device &Dev;
  std::unique_ptr<Model> M1;
  /// Byte size of each main-graph value at micro-batch 2, by Value::Id (the
  /// graph at micro-batch 2 is freed once its costs are summed).
  std::vector<double> Bytes2;
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
  std::map<std::pair<unsigned, bool>, TPPlan> TPPlans; ///< propagated (t, sp)
  /// Each (t, sp) asked for: its own plan or, when its propagation is
  /// reused, the larger degree's.
  std::map<std::pair<unsigned, bool>, const TPPlan *> TPPlanOf;
  unsigned K = 1;                ///< devices per node

  // Compact per-position data for the search.
  std::vector<uint32_t> ClassOf;        ///< positions with equal costs share a class
  std::vector<const Position *> ClassRep;
  std::vector<uint8_t> RecFull, RecSel, Cut;
  std::vector<Affine> SavedAff, SelAff, CkAff;
  std::vector<size_t> CutPos;           ///< positions with Cut, ascending
  std::vector<Affine> CutCk;            ///< CkAff at each of CutPos
  IntegralTerms SavedInt, SelInt, CkInt;
  // Trainable parameters in order of position: owner, value, elements.
  std::vector<uint32_t> ParamPos;
  std::vector<const Value *> ParamVal;
  std::vector<double> ParamElems;
  std::vector<double> PosParams;
  /// Trainable weights read at more than one position (a tied embedding),
  /// with those positions, the owner's first. A pipeline that puts them on
  /// several stages keeps a copy on each and all-reduces their gradients.
  struct SharedParam {
    const Value *V;
    double Elems;
    std::vector<uint32_t> Readers;
  };
  std::vector<SharedParam> Shared;
  std::vector<CollectiveCost> CollCosts; ///< distinct collectives
  std::map<std::tuple<unsigned, uint64_t, uint64_t>, uint32_t> CollCostIds; ///< by kind and bytes
  /// Each collective's index in CollCosts, by tensor and kind (UINT32_MAX:
  /// none yet); made with the first tensor-parallel plan.
  using CollCostIndex = std::array<uint32_t, NumCollectiveKinds>;
  std::optional<ValueMap<CollCostIndex>> CollCostOf;
  /// What evaluating a configuration writes: one per search thread.
  struct Workspace {
    Group G; ///< the current group
    // Per slot (2 class + split): FLOP terms of the current group, for the
    // slots its plan uses (their times are in the group).
    std::vector<double> SlotMF, SlotMM0, SlotMM1;
    std::vector<double> CollSeconds; ///< of the current group, by CollCosts index
  };
  Workspace Work[2];
  /// Sharding propagations computed ahead on Worker, by (t, sp).
  std::map<std::pair<unsigned, bool>, std::future<ShardingResult>> Ahead;
  std::thread Worker;

  /// Sizes W's tables for this graph (a no-op once done). group() calls
  /// it; evaluateAll calls it first for the second search thread's
  /// workspace, on the main thread: its heap holds the freed micro-batch 2,
  /// the search thread's own heap would fault in fresh pages (70 MB for a
  /// million positions).
  void sizeWorkspace(Workspace &W);
  void propagateAhead();
  void warnSuperlinear(std::optional<double> FloatBytes);
  const TPPlan &tpPlan(unsigned T, bool SP);
  Group &group(Workspace &W, int64_t B, unsigned T, bool SP);
  const StageAgg &stageAgg(Group &G, Config::Recompute Rc, unsigned P, unsigned V);
  PlanEval evaluate(Workspace &W, const PlanConfig &PC, unsigned N);
  /// A configuration to evaluate on N devices.
  struct Job {
    PlanConfig C;
    unsigned N;
  };
  std::vector<PlanEval> evaluateAll(const std::vector<Job> &Jobs);
  std::vector<PlanConfig> enumerate(unsigned N, const PlanOptions &O) const;

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
  // Each saved tensor counts once.
  ValueMap<uint8_t> Seen(G, 0);
  auto FirstSeen = [&](const Value *V) {
    uint8_t &S = Seen[V];
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
    for (const Value *V : NC.Saved)
      if (!V->isInitializer() && FirstSeen(V))
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
void Planner::warnSuperlinear(std::optional<double> FloatBytes) {
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

llvm::Error Planner::prepare(const BatchLoader &Load) {
  std::optional<double> FloatBytes;
  if (Cfg.ComputeDType)
    FloatBytes = dtypeBytes(*Cfg.ComputeDType);
  WBytes = FloatBytes.value_or(4);
  Mixed = WBytes < 4;
  K = Opts.DevicesPerNode ? Opts.DevicesPerNode : std::max(1u, Dev.DevicesPerNode);

  // The graph and its costs at micro-batch 1 and 2 (every plan quantity is
  // affine in the micro-batch: fitted from the two).
  struct Side {
    std::unique_ptr<Model> M;
    CostResult C;
    RecomputePlan Full, Sel;
    std::vector<PhaseCost> F, B;
    std::vector<double> S, SS, Ck, Live;
    double In = 0;                  ///< graph input bytes
    size_t NumNodes = 0, NumValues = 0;
    std::vector<bool> Modeled;      ///< micro-batch 2: each cost row's Modeled
  } Sides[2];
  // Micro-batch 2's thread costs its graph once both loads have returned:
  // the loader may free what they shared then (BatchLoader), and this
  // thread's allocations reuse it (the search's thread; a 1M-node graph's
  // costs otherwise faulted in 150 MB fresh when its load finished first).
  std::mutex LoadsLock;
  std::condition_variable LoadsDone;
  int Loads = 0;
  bool TwoThreads = false;
  auto Loaded = [&](bool Wait) {
    std::unique_lock<std::mutex> Hold(LoadsLock);
    if (++Loads == 2)
      LoadsDone.notify_all();
    else if (Wait)
      LoadsDone.wait(Hold, [&] { return Loads == 2; });
  };
  auto Run = [&](int I, DiagnosticEngine &D, bool Timed) -> llvm::Error {
    Side &X = Sides[I];
    auto L = Load(I + 1, D, Timed);
    Loaded(/*Wait=*/I == 1 && TwoThreads);
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
  };
  std::optional<Timing::Scope> Phase(std::in_place, Opts.Timer,
                                     "plan: load and cost at micro-batch 1 and 2");
  // Micro-batch 1, which the search keeps, on a second thread while
  // micro-batch 2 loads here: the two read only the parsed file. Micro-batch
  // 2 is freed on this thread, so its memory goes back to the heap that the
  // search allocates from; a thread's own malloc arena would keep it there,
  // or unmap it, and the search would fault in fresh pages instead. Its
  // warnings repeat micro-batch 1's; they are merged after (each said once).
  DiagnosticEngine Diags2;
  std::optional<llvm::Error> E1;
  auto First = [&](bool Timed) { E1.emplace(Run(0, Diags, Timed)); };
  std::thread FirstThread;
  try {
    FirstThread = std::thread(First, false);
  } catch (const std::system_error &) {
  }
  TwoThreads = FirstThread.joinable();
  llvm::Error E2 = Run(1, Diags2, TwoThreads);
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
  if (E2)
    return E2;
  Phase.emplace(Opts.Timer, "plan: prepare the search");
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
  std::vector<PhaseCost> F[2] = {std::move(Sides[0].F), std::move(Sides[1].F)};
  std::vector<PhaseCost> B[2] = {std::move(Sides[0].B), std::move(Sides[1].B)};
  std::vector<double> S[2] = {std::move(Sides[0].S), std::move(Sides[1].S)};
  std::vector<double> SS[2] = {std::move(Sides[0].SS), std::move(Sides[1].SS)};
  std::vector<double> Ck[2] = {std::move(Sides[0].Ck), std::move(Sides[1].Ck)};
  std::vector<double> Live[2] = {std::move(Sides[0].Live), std::move(Sides[1].Live)};
  RecomputePlan Full1 = std::move(Sides[0].Full), Sel1 = std::move(Sides[0].Sel);
  if (C1.UnmodeledNodes)
    Diags.warn(M1->Path, formatv("{0} node(s) cannot be costed and are left out of the "
                                 "plan (see ridge analyze)",
                                 C1.UnmodeledNodes));
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
  // Parameters belong to the first position that reads them; the later
  // readers of a shared one are listed. (A trainable parameter's first
  // reader, or NotParam; Unread until it has one.)
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
  for (size_t P = 1; P < N; ++P)
    if (Cut[P])
      Boundaries.push_back(P);
  Boundaries.push_back(N);
  for (size_t P = 1; P <= N; ++P)
    AllBoundaries.push_back(P);
  LiveBytes.resize(N + 1);
  for (size_t P = 0; P <= N; ++P)
    LiveBytes[P] = Affine::fit(Live[0][P], Live[1][P]);
  InputBytes = Affine::fit(Sides[0].In, Sides[1].In);
  warnSuperlinear(FloatBytes);

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
  for (size_t P = 0; P < N; ++P) {
    SavedInt.add(SavedAff[P]);
    SelInt.add(SelAff[P]);
    if (Cut[P]) {
      CutPos.push_back(P);
      CutCk.push_back(CkAff[P]);
      CkInt.add(CkAff[P]);
    }
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
    if (!Finite || !std::isfinite(AbsSum))
      return false;
    return AbsSum == 0 || AbsSum <= std::ldexp(1.0, 52 + MinLsb);
  }
};

/// Starts the sharding propagation for each (t, sp) the search can ask for
/// on a worker thread: it reads only M1's graph and C1, which nothing
/// changes once M1's costs are known, and its results are the same
/// whenever they are computed.
void Planner::propagateAhead() {
  unsigned MaxTP = Opts.MaxTP ? Opts.MaxTP : K;
  std::set<std::pair<unsigned, bool>> Keys;
  auto Add = [&](unsigned N, std::optional<unsigned> TP) {
    for (unsigned T = 2; T <= N; ++T) {
      if (N % T || (TP && T != *TP) || (!TP && T > MaxTP))
        continue;
      for (bool SP : {false, true})
        if (!Opts.SequenceParallel || SP == *Opts.SequenceParallel)
          Keys.insert({T, SP});
    }
  };
  Add(Opts.Devices, Opts.TP);
  if (Opts.Scaling)
    for (unsigned N = 1; N <= Opts.Devices; N *= 2)
      Add(N, std::nullopt);
  if (Keys.empty())
    return;
  // Largest degree first: a result whose every split divided holds for
  // the divisors of its degree too (ShardingResult::AllDivisible). Those
  // are not propagated again: their result names the degree it reuses and
  // holds nothing else (tpPlan takes the source's plan), so that the worker
  // copies nothing (30 MB a result at a million nodes).
  struct Job {
    unsigned T;
    bool SP;
    std::promise<ShardingResult> Result;
  };
  std::vector<Job> Jobs;
  for (auto It = Keys.rbegin(); It != Keys.rend(); ++It) {
    Jobs.push_back({It->first, It->second, {}});
    Ahead[*It] = Jobs.back().Result.get_future();
  }
  try {
    // The graph by pointer: search() hands M1 to its result while a job the
    // search never asked for may still run (the model lives on there).
    Worker = std::thread([this, G = M1->Main.get(), Jobs = std::move(Jobs)]() mutable {
      std::vector<unsigned> Reusable[2]; ///< degrees whose every split divided
      for (Job &J : Jobs) {
        try {
          ShardingResult R;
          unsigned From = 0;
          for (unsigned T : Reusable[J.SP])
            if (T % J.T == 0)
              From = T;
          if (From) {
            R.Degree = J.T;
            R.SequenceParallel = J.SP;
            R.ReusedFrom = From;
          } else {
            R = propagateSharding(*G, J.T, J.SP, C1.NeedsGrad);
            if (R.AllDivisible)
              Reusable[J.SP].push_back(J.T);
          }
          J.Result.set_value(std::move(R));
        } catch (...) {
          J.Result.set_exception(std::current_exception());
        }
      }
    });
  } catch (const std::system_error &) {
    Ahead.clear(); // no thread: propagate when asked
  }
}

const TPPlan &Planner::tpPlan(unsigned T, bool SP) {
  auto Key = std::make_pair(T, SP);
  auto It = TPPlanOf.find(Key);
  if (It != TPPlanOf.end())
    return *It->second;
  ShardingResult Sharding;
  {
    Timing::Scope Phase(Opts.Timer, "plan: sharding propagation (waited for)");
    auto Pending = Ahead.find(Key);
    if (Pending != Ahead.end()) {
      Sharding = Pending->second.get();
      Ahead.erase(Pending);
    } else {
      Sharding = propagateSharding(*M1->Main, T, SP, C1.NeedsGrad);
    }
  }
  // A reused propagation gives the same plan as its source: positions,
  // parameters and collectives do not depend on the degree.
  if (unsigned From = Sharding.ReusedFrom) {
    const TPPlan &Source = tpPlan(From, SP);
    TPPlanOf[Key] = &Source;
    return Source;
  }
  Timing::Scope Phase(Opts.Timer, "plan: tensor-parallel plans");
  TPPlan &TP = TPPlans[Key]; // std::map: the entry never moves
  TPPlanOf[Key] = &TP;
  TP.Sharding = std::move(Sharding);
  TP.SplitParams.assign(Pos.size(), 0);
  // Each position's parameters in order, as ParamPos and ParamVal list them.
  if (!TP.Sharding.SplitParams.empty())
    for (size_t I = 0; I < ParamVal.size(); ++I)
      if (TP.Sharding.SplitParams.count(ParamVal[I]))
        TP.SplitParams[ParamPos[I]] += ParamElems[I];
  TP.SplitU8.resize(Pos.size());
  TP.PreOwn.assign(Pos.size() + 1, 0);
  TP.PreSplit.assign(Pos.size() + 1, 0);
  ExactSum XOwn, XSplit;
  TP.SlotOf.resize(Pos.size());
  std::vector<uint8_t> SlotSeen(2 * ClassRep.size(), 0);
  for (size_t P = 0; P < Pos.size(); ++P) {
    TP.SplitU8[P] = TP.Sharding.Split[P];
    TP.AnySplit |= TP.SplitU8[P];
    uint32_t Slot = 2 * ClassOf[P] + TP.SplitU8[P];
    TP.SlotOf[P] = Slot;
    if (!SlotSeen[Slot]) {
      SlotSeen[Slot] = 1;
      TP.UsedSlots.push_back(Slot);
    }
    double Own = PosParams[P] - TP.SplitParams[P];
    XOwn.add(Own);
    XSplit.add(TP.SplitParams[P]);
    TP.PreOwn[P + 1] = TP.PreOwn[P] + Own;
    TP.PreSplit[P + 1] = TP.PreSplit[P] + TP.SplitParams[P];
  }
  TP.ParamsExact = XOwn.exact() && XSplit.exact();
  if (TP.ParamsExact)
    std::vector<double>().swap(TP.SplitParams);
  // Collectives of equal kind and bytes cost the same: each distinct one
  // gets an index (per tensor and kind, then by value).
  if (!CollCostOf) {
    CollCostIndex None;
    None.fill(UINT32_MAX);
    CollCostOf.emplace(*M1->Main, None);
  }
  TP.CollPos.reserve(TP.Sharding.Collectives.size());
  TP.CollCost.reserve(TP.Sharding.Collectives.size());
  for (const TPCollective &Col : TP.Sharding.Collectives) {
    const Value *T = Col.Tensor;
    uint32_t &Id = (*CollCostOf)[T][unsigned(Col.Kind)];
    if (Id == UINT32_MAX) {
      // Its size at micro-batch 2, by Id when it is a main-graph value.
      double B1 = valueBytes(T, floatBytes(Cfg));
      double B2 = M1->Main->owns(T) ? Bytes2[T->Id] : B1;
      Affine Bytes = Affine::fit(B1, B2);
      uint64_t A, B;
      std::memcpy(&A, &Bytes.A, sizeof(A));
      std::memcpy(&B, &Bytes.B, sizeof(B));
      auto [VIt, VNew] =
          CollCostIds.try_emplace({unsigned(Col.Kind), A, B}, uint32_t(CollCosts.size()));
      if (VNew)
        CollCosts.push_back({Col.Kind, Bytes});
      Id = VIt->second;
    }
    TP.CollPos.push_back(Col.At);
    TP.CollCost.push_back(Id);
    TP.CollFwd.push_back(!Col.Backward);
  }
  // What the search reads of the collectives is in CollPos, CollCost and
  // CollFwd now (870k collectives are 21 MB at a million positions).
  std::vector<TPCollective>().swap(TP.Sharding.Collectives);
  TP.UsedCosts = TP.CollCost;
  llvm::sort(TP.UsedCosts);
  TP.UsedCosts.erase(std::unique(TP.UsedCosts.begin(), TP.UsedCosts.end()), TP.UsedCosts.end());
  return TP;
}

/// The largest single segment of a prefix sum (the smallest feasible bound).
double maxSegment(const std::vector<double> &Prefix) {
  double Lo = 0;
  for (size_t I = 0; I + 1 < Prefix.size(); ++I)
    Lo = std::max(Lo, Prefix[I + 1] - Prefix[I]);
  return Lo;
}

/// The smallest bound in [Lo, Hi] (bisection) for which a greedy fill packs
/// the N positions into at most Chunks ranges, and that fill's range ends,
/// padded with N to Chunks entries. The fill starts each range where the
/// last ended; NextEnd(Start, K, Bound) gives range K's end (> Start).
template <typename EndFn>
std::vector<size_t> bisectBound(double Lo, double Hi, size_t N, unsigned Chunks,
                                EndFn &&NextEnd) {
  auto Fill = [&](double Bound, std::vector<size_t> *Cuts) {
    size_t Start = 0;
    unsigned Used = 0;
    while (Start < N) {
      if (++Used > Chunks)
        return false;
      size_t End = NextEnd(Start, Used - 1, Bound);
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

/// Splits positions [0, N) into Chunks contiguous ranges minimizing the
/// largest sum (binary search on the bound, greedy fill over prefix sums).
std::vector<size_t> balanceSegments(const std::vector<double> &Prefix, unsigned Chunks) {
  size_t N = Prefix.size() - 1;
  return bisectBound(maxSegment(Prefix), Prefix.back(), N, Chunks,
                     [&](size_t Start, unsigned, double Bound) {
                       size_t End = std::upper_bound(Prefix.begin() + Start + 1, Prefix.end(),
                                                     Prefix[Start] + Bound) -
                                    Prefix.begin() - 1;
                       return std::max(End, Start + 1);
                     });
}

/// balanceSegments() for a non-decreasing Prefix (non-negative costs) whose
/// largest single segment is MaxSeg: the same bisection and greedy fills,
/// each fill's search for a chunk's end starting from where the previous
/// fill's same chunk ended (in a sorted array the first element above a
/// value is the same however it is found).
std::vector<size_t> balanceSorted(const std::vector<double> &Prefix, unsigned Chunks,
                                  double MaxSeg) {
  size_t N = Prefix.size() - 1;
  const double *S = Prefix.data();
  std::vector<size_t> Hint(Chunks);
  for (unsigned K = 0; K < Chunks; ++K)
    Hint[K] = size_t(double(N) * (K + 1) / Chunks);
  // The first index in [From, N] whose prefix exceeds X (N + 1 if none).
  auto UpperBound = [&](size_t From, size_t Guess, double X) -> size_t {
    size_t G = std::min(std::max(Guess, From), N);
    if (S[G] <= X) {
      size_t L = G, Step = 1, H;
      for (;;) {
        if (L + Step > N) {
          H = N + 1;
          break;
        }
        if (S[L + Step] > X) {
          H = L + Step;
          break;
        }
        L += Step;
        Step *= 2;
      }
      return std::upper_bound(S + L + 1, S + H, X) - S;
    }
    size_t H = G, Step = 1, L;
    for (;;) {
      if (H < From + Step) {
        L = From;
        break;
      }
      if (S[H - Step] <= X) {
        L = H - Step + 1;
        break;
      }
      H -= Step;
      Step *= 2;
    }
    return std::upper_bound(S + L, S + H, X) - S;
  };
  return bisectBound(MaxSeg, Prefix.back(), N, Chunks,
                     [&](size_t Start, unsigned K, double Bound) {
                       size_t I = UpperBound(Start + 1, Hint[K], S[Start] + Bound);
                       Hint[K] = I;
                       return std::max(I - 1, Start + 1);
                     });
}

/// Boundaries may only fall where Allowed says (Allowed[N] must be true);
/// positions between two allowed boundaries move together. Seg is the
/// prefix sum collapsed to the allowed boundaries: segment k ends at
/// Allowed[k], Seg[k + 1] = Prefix[Allowed[k]].
/// Sorted: Seg is non-decreasing and its largest segment is MaxSeg.
std::vector<size_t> balance(const std::vector<double> &Seg, unsigned Chunks,
                            const std::vector<size_t> &Allowed, bool Sorted, double MaxSeg) {
  std::vector<size_t> SegEnds =
      Sorted ? balanceSorted(Seg, Chunks, MaxSeg) : balanceSegments(Seg, Chunks);
  std::vector<size_t> Ends;
  for (size_t E : SegEnds)
    Ends.push_back(E == 0 ? 0 : Allowed[std::min(E, Allowed.size()) - 1]);
  return Ends;
}

void Planner::sizeWorkspace(Workspace &W) {
  size_t NPos = Pos.size(), NSlots = 2 * ClassRep.size();
  Group &G = W.G;
  G.TPT.resize(NPos);
  G.TPF.resize(NPos);
  for (auto *V : {&G.SlotTF, &G.SlotTB, &W.SlotMF, &W.SlotMM0, &W.SlotMM1})
    V->resize(NSlots);
  for (auto *V : {&G.Prefix[0], &G.Prefix[1], &G.Prefix[2], &G.PreA, &G.PreAS})
    V->resize(NPos + 1);
  G.PreCk.resize(CutPos.size() + 1);
  for (auto &C : G.Collapsed)
    C.resize(Boundaries.size() + 1);
  G.SegSum.resize(CutPos.empty() ? 0 : CutPos.size() - 1);
  W.CollSeconds.resize(CollCosts.size());
}

Group &Planner::group(Workspace &W, int64_t B, unsigned T, bool SP) {
  Group &G = W.G;
  auto &SlotTF = G.SlotTF, &SlotTB = G.SlotTB, &SlotMF = W.SlotMF, &SlotMM0 = W.SlotMM0,
       &SlotMM1 = W.SlotMM1, &CollSeconds = W.CollSeconds;
  if (G.Valid && G.B == B && G.T == T && G.SP == SP)
    return G;
  const TPPlan &TP = tpPlan(T, SP);
  const TPPlan *Last = G.Valid ? G.TP : nullptr; ///< whose collectives TPT holds
  G.Valid = true;
  G.B = B;
  G.T = T;
  G.SP = SP;
  G.TP = &TP;
  for (auto &E : G.Ends)
    E.clear();
  for (auto &M : G.MaxSeg)
    M[0] = M[1] = -1;
  G.Aggs.clear();
  size_t NPos = Pos.size();
  double Mb = double(B);

  sizeWorkspace(W);
  // Tensor-parallel collectives, summed per position in their order.
  if (!Last) {
    G.TPT.assign(NPos, 0);
    G.TPF.assign(NPos, 0);
  } else {
    for (uint32_t P : Last->CollPos)
      G.TPT[P] = G.TPF[P] = 0;
  }
  bool TPInter = crossesNodes(1, T);
  double TPBw = linkBandwidth(TPInter), TPLat = linkLatency(TPInter);
  for (uint32_t I : TP.UsedCosts) {
    double Bytes = CollCosts[I].Bytes.at(Mb);
    CollSeconds[I] = collectiveSeconds(CollCosts[I].Kind, Bytes, T, TPBw, TPLat);
  }
  {
    double *TPTs = G.TPT.data(), *TPFs = G.TPF.data();
    const double *Sec = CollSeconds.data();
    for (size_t I = 0, E = TP.CollPos.size(); I < E; ++I) {
      TPTs[TP.CollPos[I]] += Sec[TP.CollCost[I]];
      if (TP.CollFwd[I])
        TPFs[TP.CollPos[I]] += Sec[TP.CollCost[I]];
    }
  }
  G.TPCount = TP.CollPos.size();

  // Per position, in order, what evaluate() used to compute position by
  // position: forward and backward time (through the class memo), the FLOP
  // sums, the time with each recomputation mode and its prefix sums, and
  // the activation terms' prefix sums.
  for (int R = 0; R < 3; ++R)
    G.Prefix[R][0] = 0;
  G.PreA[0] = G.PreAS[0] = G.PreCk[0] = 0;
  const uint8_t *Split = TP.SplitU8.data();
  G.SlotOf = TP.SlotOf.data();
  const uint32_t *Slots = G.SlotOf;
  for (uint32_t Slot : TP.UsedSlots) {
    unsigned Sp = Slot & 1;
    const Position &X = *ClassRep[Slot >> 1];
    double Scale = Sp ? 1.0 / T : 1.0;
    PhaseCost F = X.Fwd.at(Mb, Scale), Bc = X.Bwd.at(Mb, Scale);
    SlotTF[Slot] = placeOnDevice(F, Dev, X.Type, Cfg).Seconds;
    SlotTB[Slot] = X.NeedsBackward ? placeOnDevice(Bc, Dev, X.Type, Cfg).Seconds : 0;
    SlotMF[Slot] = (X.Fwd.Flops.at(Mb) + X.Bwd.Flops.at(Mb)) * T * Scale;
    SlotMM0[Slot] = 2 * (X.Fwd.Macs.at(Mb) * 1 + X.Bwd.Macs.at(Mb)) * T * Scale;
    SlotMM1[Slot] = 2 * (X.Fwd.Macs.at(Mb) * 2 + X.Bwd.Macs.at(Mb)) * T * Scale;
  }
  const uint8_t *Sel = RecSel.data(), *Full = RecFull.data();
  const double *STF = SlotTF.data(), *STB = SlotTB.data();
  const double *TPTs = G.TPT.data(), *TPFs = G.TPF.data();
  double *P0 = G.Prefix[0].data(), *P1 = G.Prefix[1].data(), *P2 = G.Prefix[2].data();
  const double *SMF = SlotMF.data(), *SM0 = SlotMM0.data(), *SM1 = SlotMM1.data();
  // The prefixes at the stage boundaries are taken as they pass (gathered
  // after, they read the three prefix tables again, a cache line a read).
  for (auto &C : G.Collapsed)
    C[0] = 0;
  double *C0 = G.Collapsed[0].data(), *C1 = G.Collapsed[1].data(),
         *C2 = G.Collapsed[2].data();
  const size_t *Bd = Boundaries.data();
  size_t NextB = 0, NumB = Boundaries.size();
  double TotBwd = 0, TotTP = 0, Rec1 = 0, Rec2 = 0;
  double Pre0 = 0, Pre1 = 0, Pre2 = 0;
  double ModelFlops = 0, M0 = 0, M1s = 0, M2s = 0;
  for (size_t P = 0; P < NPos; ++P) {
    uint32_t Slot = Slots[P];
    double TF = STF[Slot], TB = STB[Slot], TPt = TPTs[P], TPf = TPFs[P];
    ModelFlops += SMF[Slot];
    M0 += SM0[Slot];
    M1s += Sel[P] ? SM1[Slot] : SM0[Slot];
    M2s += Full[P] ? SM1[Slot] : SM0[Slot];
    TotBwd += TB;
    TotTP += TPt;
    // Full recomputation replays a segment's forward, its tensor-parallel
    // collectives included (Megatron re-runs the layer's all-reduces).
    // (Group::cost() is this, position by position.)
    double Zero = 0, RS = Sel[P] ? TF : 0, RF = Full[P] ? TF + TPf : 0;
    Rec1 += RS;
    Rec2 += RF;
    double X0 = TF + TB + Zero, X1 = TF + TB + RS, X2 = TF + TB + RF;
    X0 += TPt;
    X1 += TPt;
    X2 += TPt;
    P0[P + 1] = Pre0 += X0;
    P1[P + 1] = Pre1 += X1;
    P2[P + 1] = Pre2 += X2;
    if (NextB < NumB && Bd[NextB] == P + 1) {
      C0[NextB + 1] = Pre0;
      C1[NextB + 1] = Pre1;
      C2[NextB + 1] = Pre2;
      ++NextB;
    }
  }
  // Every cost finite and non-negative: so are the slots' times and the
  // collectives (a cost adds at most four of them), and the total is finite.
  bool Bad = false;
  for (uint32_t I : TP.UsedSlots)
    Bad |= !(STF[I] >= 0 && STF[I] <= std::numeric_limits<double>::max()) ||
           !(STB[I] >= 0 && STB[I] <= std::numeric_limits<double>::max());
  for (uint32_t Q : TP.CollPos)
    Bad |= !(TPTs[Q] >= 0 && TPTs[Q] <= std::numeric_limits<double>::max());
  {
    double *PA = G.PreA.data(), *PAS = G.PreAS.data(), *PCk = G.PreCk.data();
    const Affine *SA = SavedAff.data(), *SelA = SelAff.data();
    // With sequence parallelism the replicated regions are split too.
    const double Scales[2] = {1.0, 1.0 / T};
    unsigned SPBit = SP;
    double A = 0, AS = 0, Ck = 0;
    for (size_t P = 0; P < NPos; ++P) {
      double ActScale = Scales[Split[P] | SPBit];
      PA[P + 1] = A += SA[P].at(Mb) * ActScale;
      PAS[P + 1] = AS += SelA[P].at(Mb) * ActScale;
    }
    // Checkpoints, at the cuts only (summed over every position, the zero
    // terms between them changed nothing).
    for (size_t K = 0; K < CutPos.size(); ++K)
      PCk[K + 1] = Ck += CutCk[K].at(Mb) * Scales[Split[CutPos[K]] | SPBit];
  }
  G.ModelFlops = ModelFlops;
  G.MatrixFlops[0] = M0;
  G.MatrixFlops[1] = M1s;
  G.MatrixFlops[2] = M2s;
  G.TotBwd = TotBwd;
  G.TotTP = TotTP;
  G.TotRec[0] = 0;
  G.TotRec[1] = Rec1;
  G.TotRec[2] = Rec2;
  for (int R = 0; R < 3; ++R) {
    G.Bounded[R] = !Bad && G.Prefix[R][NPos] <= std::numeric_limits<double>::max();
    for (size_t K = NextB; K < NumB; ++K) // boundaries the loop did not pass (none at 0)
      G.Collapsed[R][K + 1] = G.Prefix[R][Boundaries[K]];
  }

  // Whether the activation prefix sums are exact: whole-number terms scaled
  // by 1 or 1/t with t a power of two, else checked term by term.
  bool AnyScaled = SP || TP.AnySplit;
  int Shift = !AnyScaled ? 0 : (T & (T - 1)) == 0 ? __builtin_ctz(T) : -1;
  auto Check = [&](const IntegralTerms &I, const std::vector<Affine> &Aff, bool OnlyCuts) {
    if (I.exactAt(Mb, Shift))
      return true;
    ExactSum X;
    for (size_t P = 0; P < NPos; ++P)
      if (!OnlyCuts || Cut[P])
        X.add(Aff[P].at(Mb) * ((Split[P] || SP) ? 1.0 / T : 1.0));
    return X.exact();
  };
  G.AExact = Check(SavedInt, SavedAff, false);
  G.ASExact = Check(SelInt, SelAff, false);
  G.CkExact = Check(CkInt, CkAff, true);
  for (size_t K = 0; K + 1 < CutPos.size(); ++K)
    G.SegSum[K] = G.PreA[CutPos[K + 1]] - G.PreA[CutPos[K]];
  return G;
}

const StageAgg &Planner::stageAgg(Group &Gr, Config::Recompute Rc, unsigned P, unsigned V) {
  int R = Rc == Config::Recompute::Full ? 2 : Rc == Config::Recompute::Selective ? 1 : 0;
  std::array<unsigned, 3> Key{unsigned(R), P, V};
  auto Found = Gr.Aggs.find(Key);
  if (Found != Gr.Aggs.end())
    return Found->second;
  StageAgg &A = Gr.Aggs[Key];
  const TPPlan &TP = *Gr.TP;
  size_t NPos = Pos.size();
  double Mb = double(Gr.B);
  unsigned Chunks = P * V;
  const std::vector<double> &Prefix = Gr.Prefix[R];

  // Pipeline stages: P*V chunks balanced by time; chunk c runs on stage c % P.
  auto EndsIt = Gr.Ends[R].find(Chunks);
  if (EndsIt == Gr.Ends[R].end()) {
    std::vector<size_t> Ends;
    if (Chunks > 1) {
      // Over AllBoundaries (every position) the collapsed prefix is the
      // prefix itself.
      bool Few = Boundaries.size() >= Chunks;
      const std::vector<double> &Seg = Few ? Gr.Collapsed[R] : Prefix;
      double &MaxSeg = Gr.MaxSeg[R][Few];
      if (Gr.Bounded[R] && MaxSeg < 0)
        MaxSeg = maxSegment(Seg);
      Ends = balance(Seg, Chunks, Few ? Boundaries : AllBoundaries, Gr.Bounded[R], MaxSeg);
    } else {
      Ends = {NPos};
    }
    EndsIt = Gr.Ends[R].emplace(Chunks, std::move(Ends)).first;
  }
  const std::vector<size_t> &Ends = EndsIt->second;
  auto StartOf = [&](unsigned Ch) { return Ch == 0 ? size_t(0) : Ends[Ch - 1]; };

  // Shared weights whose readers land on several stages: a copy on each
  // stage but the owner's, their gradients all-reduced across them.
  A.CopyParams.assign(P, 0);
  A.CopySplit.assign(P, 0);
  if (P > 1)
    for (const SharedParam &Sp : Shared) {
      auto StageOf = [&](uint32_t Q) {
        return unsigned(std::upper_bound(Ends.begin(), Ends.end(), size_t(Q)) - Ends.begin()) %
               P;
      };
      llvm::SmallVector<unsigned, 4> Stages;
      for (uint32_t Q : Sp.Readers)
        if (!llvm::is_contained(Stages, StageOf(Q)))
          Stages.push_back(StageOf(Q));
      if (Stages.size() < 2)
        continue;
      bool Split = TP.Sharding.SplitParams.count(Sp.V);
      for (size_t I = 1; I < Stages.size(); ++I)
        (Split ? A.CopySplit : A.CopyParams)[Stages[I]] += Sp.Elems;
      A.Tied.emplace_back(unsigned(Stages.size()), Split, Sp.Elems);
    }

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
  struct Sums {
    double T = 0, B = 0, TP = 0, Rec = 0;
  };
  // Stages' sums position by position, two stages at a time (independent
  // chains of additions), each in its own order.
  const uint32_t *SlotOf = Gr.SlotOf;
  const double *STF = Gr.SlotTF.data(), *STB = Gr.SlotTB.data(), *TPTP = Gr.TPT.data(),
               *TPFP = Gr.TPF.data();
  // Position Q's terms added to X: Group::cost() inline (the same
  // additions in the same order), its backward, TP and recompute times
  // (the replay, its forward collectives included under full
  // recomputation, as the whole-graph sum TotRec counts it).
  auto Add = [&](auto HasFlag, size_t Q, Sums &X) {
    uint32_t S = SlotOf[Q];
    double TF = STF[S], TB = STB[S], TPt = TPTP[Q];
    double Rec = !HasFlag || !Flag[Q] ? 0 : R == 1 ? TF : TF + TPFP[Q];
    double C = TF + TB + Rec;
    X.T += C += TPt;
    X.B += TB;
    X.TP += TPt;
    if (HasFlag)
      X.Rec += Rec;
  };
  // Sums Q in [Q0, Q1) into X, and Q in [R0, R0 + Q1 - Q0) into Y, with
  // local accumulators (independent chains).
  auto Walk = [&](auto HasFlag, size_t Q0, size_t Q1, Sums &X, const size_t *R0, Sums &Y) {
    Sums A = X;
    if (R0) {
      Sums B = Y;
      for (size_t Q = Q0, Q2 = *R0; Q < Q1; ++Q, ++Q2) {
        Add(HasFlag, Q, A);
        Add(HasFlag, Q2, B);
      }
      Y = B;
    } else {
      for (size_t Q = Q0; Q < Q1; ++Q)
        Add(HasFlag, Q, A);
    }
    X = A;
  };
  auto Exact = [&](unsigned Sa, const unsigned *Sb, Sums &Xa, Sums &Xb) {
    if (P == 1 && Ends.back() == NPos) { // stage 0 sums every position in order
      Xa.T = Prefix[NPos];
      Xa.B = Gr.TotBwd;
      Xa.TP = Gr.TotTP;
      Xa.Rec = Gr.TotRec[R];
      return;
    }
    auto Run = [&](auto HasFlag) {
      for (unsigned C = 0; C < V; ++C) {
        unsigned Ca = Sa + C * P;
        size_t A0 = StartOf(Ca), A1 = Ends[Ca];
        if (!Sb) {
          Walk(HasFlag, A0, A1, Xa, nullptr, Xa);
          continue;
        }
        unsigned Cb = *Sb + C * P;
        size_t B0 = StartOf(Cb), B1 = Ends[Cb];
        size_t N = std::min(A1 - A0, B1 - B0);
        Walk(HasFlag, A0, A0 + N, Xa, &B0, Xb);
        Walk(HasFlag, A0 + N, A1, Xa, nullptr, Xa);
        Walk(HasFlag, B0 + N, B1, Xb, nullptr, Xb);
      }
    };
    if (Flag)
      Run(std::true_type());
    else
      Run(std::false_type());
  };
  if (Gr.Bounded[R]) {
    std::vector<double> Approx(P, 0);
    for (unsigned Ch = 0; Ch < Chunks; ++Ch)
      Approx[Ch % P] += Prefix[Ends[Ch]] - Prefix[StartOf(Ch)];
    double MaxA = *std::max_element(Approx.begin(), Approx.end());
    double Err = 1.5 * (2.0 * V + 2) * (double(NPos) + 2) * 0x1p-53 * Prefix[NPos];
    // A stage whose costs are those of an earlier candidate, position by
    // position, sums to the same time and is not the first of the largest:
    // it need not be summed.
    auto SameCosts = [&](unsigned S1, unsigned S2) {
      for (unsigned C = 0; C < V; ++C) {
        unsigned C1 = S1 + C * P, C2 = S2 + C * P;
        size_t B1 = StartOf(C1), B2 = StartOf(C2), L = Ends[C1] - B1;
        if (Ends[C2] - B2 != L)
          return false;
        for (size_t I = 0; I < L; ++I)
          if (llvm::bit_cast<uint64_t>(Gr.cost(R, Flag, B1 + I)) !=
              llvm::bit_cast<uint64_t>(Gr.cost(R, Flag, B2 + I)))
            return false;
      }
      return true;
    };
    std::vector<unsigned> Cands;
    for (unsigned S = 0; S < P; ++S) {
      if (Approx[S] < MaxA - 2 * Err)
        continue;
      bool Dup = false;
      for (unsigned C : Cands)
        if ((Dup = SameCosts(C, S)))
          break;
      if (!Dup)
        Cands.push_back(S);
    }
    std::vector<Sums> X(Cands.size());
    for (size_t I = 0; I < Cands.size(); I += 2)
      Exact(Cands[I], I + 1 < Cands.size() ? &Cands[I + 1] : nullptr, X[I],
            I + 1 < Cands.size() ? X[I + 1] : X[I]);
    // The first of the largest, as evaluate() took it.
    size_t Best = 0;
    for (size_t I = 1; I < Cands.size(); ++I)
      if (X[I].T > X[Best].T)
        Best = I;
    A.Slowest = Cands[Best];
    A.Time = X[Best].T;
    A.Bwd = X[Best].B;
    A.TP = X[Best].TP;
    A.Rec = X[Best].Rec;
  } else {
    std::vector<double> Time(P, 0), Bwd(P, 0), TPs(P, 0), Rec(P, 0);
    for (unsigned Ch = 0; Ch < Chunks; ++Ch) {
      unsigned S = Ch % P;
      for (size_t Q = StartOf(Ch); Q < Ends[Ch]; ++Q) {
        Time[S] += Gr.cost(R, Flag, Q);
        Bwd[S] += Gr.tb(Q);
        TPs[S] += Gr.TPT[Q];
        Rec[S] += !Flag || !Flag[Q] ? 0 : R == 1 ? Gr.tf(Q) : Gr.tf(Q) + Gr.TPF[Q];
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
        auto CkAt = [&](size_t Q) {
          return Gr.PreCk[std::lower_bound(CutPos.begin(), CutPos.end(), Q) - CutPos.begin()];
        };
        A.Ckpt[S] += CkAt(End) - CkAt(Start);
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
        A.Params[S] += PosParams[Q] - TP.SplitParams[Q];
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

PlanEval Planner::evaluate(Workspace &W, const PlanConfig &PC, unsigned N) {
  PlanEval E;
  E.C = PC;
  Group &Gr = group(W, PC.MicroBatch, PC.T, PC.SP);
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
    double P = A.Params[S] + A.SplitParams[S] / PC.T + A.CopyParams[S] + A.CopySplit[S] / PC.T;
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
  double Hidden = Opts.OverlapGradReduce ? std::min(E.DPSeconds, A.Bwd) : 0.0;
  E.DPExposedSeconds = E.DPSeconds - Hidden;
  E.OverlapSlowdownSeconds = Hidden * Opts.OverlapSlowdown;
  // Shared weights on several stages: their copies' gradients all-reduced
  // over those stages after the backward (Megatron's embedding all-reduce).
  for (auto &[Stages, Split, Elems] : A.Tied)
    E.TiedSyncSeconds += collectiveSeconds(CollectiveKind::AllReduce,
                                           Elems / (Split ? PC.T : 1) * WBytes, Stages,
                                           linkBandwidth(PPInter), linkLatency(PPInter));
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
                  E.TiedSyncSeconds + E.OptimizerSeconds + E.FeedExposedSeconds;
  int R = PC.Recomp == Config::Recompute::Full ? 2 : PC.Recomp == Config::Recompute::Selective ? 1 : 0;
  E.ModelFlops = Gr.ModelFlops * PC.M * PC.D;
  E.MatrixFlops = Gr.MatrixFlops[R] * PC.M * PC.D;
  double Peak = Dev.peak(Cfg.ComputeDType.value_or(DType::Float)).value_or(0);
  E.MFU = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N / Peak : 0;
  E.TFlopsPerDevice = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N : 0;
  return E;
}

/// Evaluates Cs grouped by what they share (t, sp, micro-batch, then
/// recomputation and partition), returning the results in Cs's order.
std::vector<PlanEval> Planner::evaluateAll(const std::vector<Job> &Jobs) {
  std::vector<size_t> Order(Jobs.size());
  std::iota(Order.begin(), Order.end(), size_t(0));
  auto Key = [](const PlanConfig &C) {
    return std::make_tuple(C.T, C.SP, C.MicroBatch, int(C.Recomp), C.P * C.V, C.P, C.V);
  };
  std::stable_sort(Order.begin(), Order.end(),
                   [&](size_t A, size_t B) { return Key(Jobs[A].C) < Key(Jobs[B].C); });
  std::vector<PlanEval> Out(Jobs.size());
  // Two threads, each with its own workspace, take the groups (t, sp,
  // micro-batch) of the order one at a time, the next free one as each
  // finishes. A group's per-position tables cost more than its
  // configurations on a large graph, and groups differ: halves cut by
  // configuration count left one thread idle for a third of the 1M-node
  // search. Jobs of every device count share a group's tables (the single-
  // device baseline and a scaling study reuse the search's). What the
  // threads share is read only: the tensor-parallel plans are made first.
  // Each configuration's result does not depend on which workspace
  // evaluates it, nor on what else is evaluated.
  auto GroupOf = [&](size_t I) {
    return std::make_tuple(Jobs[I].C.T, Jobs[I].C.SP, Jobs[I].C.MicroBatch);
  };
  std::vector<size_t> Starts;
  for (size_t K = 0; K < Order.size(); ++K)
    if (K == 0 || GroupOf(Order[K]) != GroupOf(Order[K - 1]))
      Starts.push_back(K);
  Starts.push_back(Order.size());
  std::atomic<size_t> Next{0};
  auto Run = [&](Workspace &W) {
    for (size_t G = Next++; G + 1 < Starts.size(); G = Next++)
      for (size_t K = Starts[G]; K < Starts[G + 1]; ++K)
        Out[Order[K]] = evaluate(W, Jobs[Order[K]].C, Jobs[Order[K]].N);
  };
  std::thread Second;
  if (Starts.size() > 2 && Order.size() >= 64) {
    for (const Job &J : Jobs)
      (void)tpPlan(J.C.T, J.C.SP);
    sizeWorkspace(Work[1]);
    try {
      Second = std::thread(Run, std::ref(Work[1]));
    } catch (const std::system_error &) {
    }
  }
  Run(Work[0]);
  if (Second.joinable())
    Second.join();
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
      // Powers of two, or exactly the micro-batch asked for.
      std::vector<int64_t> Sizes;
      if (Opts.MicroBatch)
        Sizes.push_back(*Opts.MicroBatch);
      else
        for (int64_t B = 1; B <= Opts.GlobalBatch / D; B *= 2)
          Sizes.push_back(B);
      for (int64_t B : Sizes) {
        if (B > Opts.GlobalBatch / D || (Opts.GlobalBatch / D) % B)
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

/// The fastest of Evals (that fits, with FitsOnly; the first of equals), if
/// any.
static const PlanEval *fastest(llvm::ArrayRef<PlanEval> Evals, bool FitsOnly) {
  const PlanEval *Best = nullptr;
  for (const PlanEval &E : Evals)
    if ((E.Fits || !FitsOnly) && (!Best || E.StepSeconds < Best->StepSeconds))
      Best = &E;
  return Best;
}

llvm::Expected<PlanResult> Planner::search() {
  Timing::Scope Phase(Opts.Timer, "plan: search");
  auto Start = std::chrono::steady_clock::now();
  PlanResult R;
  R.Dev = &Dev;
  R.Opts = Opts;
  R.StepType = Cfg.ComputeDType.value_or(DType::Float);
  R.Params = Params;
  bool Fixed = Opts.TP && Opts.PP && Opts.DP;
  // One evaluation for the search, the single-device baseline and the
  // scaling study: the configurations of every device count that share a
  // group (t, sp, micro-batch) share its per-position tables.
  std::vector<Job> Jobs;
  for (const PlanConfig &C : enumerate(Opts.Devices, Opts))
    Jobs.push_back({C, Opts.Devices});
  size_t NumMain = Jobs.size();
  if (NumMain == 0)
    return usageError(formatv("plan: no configuration of {0} device(s) splits global batch "
                              "{1} as asked: the data-parallel degree must divide the global "
                              "batch and the micro-batch size each replica's share",
                              Opts.Devices, Opts.GlobalBatch));
  // Single device: the same global batch, best micro-batch and
  // recomputation, whether or not it fits (the speedup baseline).
  for (int64_t B = 1; B <= Opts.GlobalBatch; B *= 2) {
    if (Opts.GlobalBatch % B)
      continue;
    for (Config::Recompute Rc : {Config::Recompute::None, Config::Recompute::Full})
      Jobs.push_back({PlanConfig{1, 1, 1, 1, 0, B, Opts.GlobalBatch / B, Rc, false}, 1});
  }
  size_t NumBaseline = Jobs.size() - NumMain;
  // Strong scaling: the same global batch on 1, 2, 4, ... devices, each
  // with its best configuration (a fixed one is not imposed here).
  std::vector<std::pair<unsigned, size_t>> ScalingEnds; ///< device count, end in Jobs
  if (Opts.Scaling) {
    PlanOptions Free = Opts;
    Free.TP.reset();
    Free.PP.reset();
    Free.DP.reset();
    for (unsigned N = 1; N <= Opts.Devices; N *= 2) {
      for (const PlanConfig &C : enumerate(N, Free))
        Jobs.push_back({C, N});
      ScalingEnds.emplace_back(N, Jobs.size());
    }
  }
  std::vector<PlanEval> Evals = evaluateAll(Jobs);
  llvm::ArrayRef<PlanEval> All(Evals);

  R.Evaluated = NumMain;
  size_t NotFit = 0;
  for (const PlanEval &E : All.take_front(NumMain)) {
    if (E.Fits)
      R.Ranked.push_back(E);
    else
      ++NotFit;
  }
  std::stable_sort(R.Ranked.begin(), R.Ranked.end(),
                   [](const PlanEval &A, const PlanEval &B) { return A.StepSeconds < B.StepSeconds; });
  if (Fixed && R.Ranked.empty()) {
    // The fixed configuration does not fit: still report its breakdown.
    R.Fixed = All.front();
  } else if (Fixed) {
    R.Fixed = R.Ranked.front();
  }
  if (NotFit)
    R.RejectReasons.emplace_back("does not fit device memory", NotFit);
  R.Rejected = R.Evaluated - R.Ranked.size();
  const PlanEval *Base = fastest(All.slice(NumMain, NumBaseline), /*FitsOnly=*/false);
  R.SingleDevice = Base ? *Base : PlanEval();
  if (!R.Ranked.empty()) {
    const PlanEval &W = R.Ranked.front();
    const TPPlan &TP = tpPlan(W.C.T, W.C.SP);
    for (size_t P = 0; P < Pos.size(); ++P)
      if (WeightSplitKind K = TP.Sharding.WeightSplit[P]; K != WeightSplitKind::None)
        R.WeightSplits.emplace_back(Pos[P].N->Name, weightSplitName(K));
  }
  size_t Begin = NumMain + NumBaseline;
  for (auto [N, End] : ScalingEnds) {
    if (const PlanEval *Best = fastest(All.slice(Begin, End - Begin), /*FitsOnly=*/true))
      R.Scaling.emplace_back(N, *Best);
    Begin = End;
  }
  R.SearchSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  // The worker may still be propagating a degree the search did not ask
  // for, on M1's graph: the models move to the result, which outlives the
  // worker (joined when the planner ends).
  R.Models.push_back(std::move(M1));
  R.Warnings = Diags.warnings();
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
  if (Opts.DP && Opts.GlobalBatch % *Opts.DP)
    return usageError(formatv("plan: --dp {0} does not divide --global-batch {1}", *Opts.DP,
                              Opts.GlobalBatch));
  if (Opts.DP && Opts.MicroBatch && (Opts.GlobalBatch / *Opts.DP) % *Opts.MicroBatch)
    return usageError(formatv("plan: --micro-batch {0} does not divide the {1} samples of "
                              "each of the {2} data-parallel replicas",
                              *Opts.MicroBatch, Opts.GlobalBatch / *Opts.DP, *Opts.DP));
  if (Opts.Devices > 1 && !Cfg.Dev->IntraNode.present() && !Cfg.Dev->InterNode.present())
    return usageError(formatv("plan: device {0} describes no links between devices; "
                              "cannot plan {1} devices",
                              Cfg.Dev->Name, Opts.Devices));
  Planner P(Cfg, Opts, Diags);
  if (llvm::Error E = P.prepare(Load))
    return E;
  return P.search();
}
