//===- PlannerImpl.h - The planner's tables and steps ----------*- C++ -*-===//
//
// Internal to passes/plan/. The planner (Planner) prepares per-position
// costs of the model (Prepare.cpp), propagates tensor-parallel shardings
// (TensorParallel.cpp), enumerates configurations (Enumerate.cpp), balances
// pipeline stages (StageBalance.cpp), evaluates each configuration
// (Evaluate.cpp) and recommends the fastest that fits (Recommend.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_PLAN_PLANNERIMPL_H
#define RIDGE_PASSES_PLAN_PLANNERIMPL_H

#include "passes/plan/Planner.h"
#include "passes/cost/CostModel.h"
#include "analyzer/Format.h"
#include "passes/roofline/Roofline.h"
#include "passes/roofline/KernelModel.h"
#include "llvm/ADT/DenseMap.h"
#include "passes/cost/TrainingStep.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <numeric>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

namespace ridge::plan {

using llvm::formatv;


/// A quantity polynomial in the micro-batch size b: sum of C[k] b^k, k <=
/// MaxDegree, taken exactly from the costs analyzed once with the batch a
/// symbol (Prepare.cpp): a [B, B] product's FLOPs are quadratic in b.
struct BatchPoly {
  static constexpr unsigned MaxDegree = 3;
  std::array<double, MaxDegree + 1> C{};
  static BatchPoly constant(double X) {
    BatchPoly P;
    P.C[0] = X;
    return P;
  }
  double at(double Mb) const {
    double V = C[MaxDegree];
    for (unsigned K = MaxDegree; K-- > 0;)
      V = V * Mb + C[K];
    return std::max(0.0, V);
  }
  BatchPoly &operator+=(const BatchPoly &O) {
    for (unsigned K = 0; K <= MaxDegree; ++K)
      C[K] += O.C[K];
    return *this;
  }
  BatchPoly operator*(double F) const {
    BatchPoly P = *this;
    for (double &X : P.C)
      X *= F;
    return P;
  }
};

struct PolyPhase {
  BatchPoly Flops, Macs, Transc, Bytes;
  PhaseCost at(double Mb, double Scale) const {
    return {Flops.at(Mb) * Scale, Macs.at(Mb) * Scale, Transc.at(Mb) * Scale,
            Bytes.at(Mb) * Scale};
  }
  PolyPhase &operator+=(const PolyPhase &O) {
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
  /// The forward's and backward's costs: indices into Planner::Phases (a
  /// graph of repeated layers has few distinct ones; 0 is all zero).
  uint32_t Fwd = 0, Bwd = 0;
  bool NeedsBackward = false;
  DType Type = DType::Float;
  /// A matrix product (MatMul, Gemm) whose dims are known as formulas in
  /// the batch: its GEMM's batch, M, N and K (productDims: Planner::Gemms[
  /// GemmIdx], kept apart, as most positions are no product), and which
  /// operands' gradients the backward computes. The kernel model times it,
  /// as `analyze` does.
  bool Product = false, GradA = false, GradB = false;
  uint32_t GemmIdx = 0;
  /// A convolution or a recurrent layer whose every dim but the batch is
  /// known: its geometry (Planner::Convs or Planner::Recurrents[ShapeIdx]);
  /// GradA, GradB and GradC are its first three inputs' gradients (a
  /// convolution's bias, a recurrent layer's recurrent weights). The kernel
  /// model times it.
  bool Conv = false, Recurrent = false, GradC = false;
  uint32_t ShapeIdx = 0;
};
using GemmDims = std::array<BatchPoly, 4>;

/// A tensor-parallel collective's kind and full tensor bytes.
struct CollectiveCost {
  CollectiveKind Kind;
  BatchPoly Bytes;
};

constexpr uint64_t FnvBasis = 1469598103934665603ULL;
/// FNV-1a over 64-bit words from H, each step folding the high bits down.
inline uint64_t hashWords(uint64_t H, llvm::ArrayRef<uint64_t> Words) {
  for (uint64_t B : Words) {
    H = (H ^ B) * 1099511628211ULL;
    H ^= H >> 29;
  }
  return H;
}

/// A segmentation of the positions into segments, and each segment's class
/// under one tensor-parallel plan. Segments are what a stage boundary never
/// splits: the coarse segmentation runs between the graph's cuts
/// (Planner::Boundaries), the fine one gives each position its own (for
/// partitions into more chunks than there are coarse segments). Two
/// segments share a class when they match position by position in all
/// that a group's sums read of them (slot, collectives, recomputation flags
/// and activation terms: Planner::PosKey): a group sums each class once,
/// over its first segment (its representative), and every stage sum adds
/// its segments' class sums in order (a transformer's layers are a few
/// classes, so a group costs O(segments), not O(positions)).
struct SegmentClasses {
  bool Made = false;
  std::vector<uint32_t> ClassOf;          ///< per segment
  std::vector<uint32_t> RepBegin, RepEnd; ///< per class: its representative's positions
  /// The representatives' collectives, by position (at one position in the
  /// plan's order): position, cost (Planner::CollCosts) and forward flag;
  /// class c's are ClassColl[c] .. ClassColl[c + 1] - 1.
  std::vector<uint32_t> CollAt, CollCost, ClassColl;
  std::vector<uint8_t> CollFwd;
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
  /// Prefix sums of the frozen weights' elements left whole and split t
  /// ways (memory only: a stage's share need not be exact to the element);
  /// empty when the graph has none.
  std::vector<double> PreFrozenOwn, PreFrozenSplit;
  /// The largest parameter tensor left whole and the largest split t ways,
  /// in elements (ZeRO-3's gathered working set).
  double MaxOwnElems = 0, MaxSplitElems = 0;
  /// Its segments' classes: [0] coarse, [1] fine (made only when some
  /// partition needs it).
  SegmentClasses Seg[2];
};

// The search evaluates thousands of configurations on graphs of up to
// millions of positions; every time it reports is defined by one order of
// summation, whatever the configuration:
//  - a stage's time is its segments' times added in order, each segment's
//    its positions' costs added in order from zero (SegmentClasses: the
//    segments run between the graph's cuts, or hold one position each when
//    a partition has more chunks than there are such segments, and then
//    the sum is the position-by-position one);
//  - a Group holds what depends on (micro-batch, t, sp) only: each slot's
//    times (positions with equal costs share one roofline placement), each
//    segment class's sums (once a class: a transformer's layers are a few
//    classes) and their running sums over the segments (the balance's
//    prefix, the launches, the activations) and totals;
//  - a StageAgg holds what a partition (recomputation, p, v) adds: the
//    chunk ends, the slowest stage's times and each stage's memory terms;
//    the ZeRO stages (and d) only enter evaluate()'s O(p) tail;
//  - prefix differences bound each stage's time, and only the stages that
//    can be the slowest are summed (once per distinct sequence of classes);
//  - parameter and activation sums are whole numbers of bytes (or halves,
//    quarters ... under a power-of-two t): while no partial sum rounds, a
//    prefix difference is the exact sum, in any order; otherwise they are
//    summed position by position.

/// What the search needs of one partition (micro-batch, t, sp,
/// recomputation, p, v): the slowest stage's times and each stage's memory
/// terms, as evaluate() sums them position by position.
struct StageAgg {
  unsigned Slowest = 0;
  double Time = 0, Bwd = 0, TP = 0, Rec = 0; ///< of the slowest stage
  /// The slowest stage's kernels per micro-batch, and the time its device
  /// waits for the host to issue them: on an asynchronous device
  /// (Device::streamSeconds) a stage takes max(Time, Launches x the launch
  /// overhead), and HostStall is what that adds to Time.
  double Launches = 0, HostStall = 0;
  double MaxBoundary = 0;
  std::vector<double> Params, SplitParams, Act, Ckpt, SegMax; ///< per stage
  std::vector<double> Frozen; ///< per stage: frozen weight elements on a device
  /// Per stage: the weight elements on a device whose gradient is ready
  /// last in the backward (the first chunk's first weight-holding
  /// position's): their all-reduce has no backward left to hide behind.
  std::vector<double> LastReady;
  /// Per stage: the backward the stages before it run after its last one
  /// (1F1B's cool-down: chunks s-1 .. 0 of the last micro-batch).
  std::vector<double> CoolDown;
  /// Copies of shared weights held by stages other than their owner's
  /// (unsplit, and split t ways), per stage.
  std::vector<double> CopyParams, CopySplit;
  /// Each shared weight the partition puts on several stages: how many
  /// stages hold it, whether it is split t ways, its elements.
  std::vector<std::tuple<unsigned, bool, double>> Tied;
};

/// One segment class's sums in a group: each of its representative's
/// positions' terms (sumClasses) summed in order from zero.
struct ClassSum {
  double T[3];      ///< cost under recomputation R: forward, backward, replay, TP
  double B;         ///< backward kernels and backward TP collectives
  double Bwd, TP;   ///< backward kernels; TP collectives
  double Rec[3];    ///< the replay under R (0 under none)
  double Flops, Matrix[3]; ///< model FLOPs; matrix FLOPs under R
  double L[3];      ///< kernels launched under R (asynchronous devices)
  double A, AS;     ///< saved activations (held with selective recomputation),
                    ///< times their scale
};

/// A group's sums over one segmentation: per boundary k (0 .. segments), the
/// class sums of segments 0 .. k-1 added in order; and their totals.
struct SegSums {
  bool Made = false;
  std::vector<ClassSum> Class; ///< by class (SegmentClasses)
  std::vector<double> Pre[3];  ///< costs (the balance's prefix)
  std::vector<double> PreB;    ///< backward (ClassSum::B)
  std::vector<double> LPre[3]; ///< kernels launched (asynchronous devices only)
  std::vector<double> PreA, PreAS;
  double TotBwd = 0, TotTP = 0, TotRec[3] = {0, 0, 0};
  double ModelFlops = 0, MatrixFlops[3] = {0, 0, 0};
  bool Bounded[3] = {false, false, false}; ///< every cost finite and non-negative
  double MaxSeg[3] = {-1, -1, -1};         ///< largest segment of Pre[R] (-1: not yet)
};

/// A partition's chunk ends: positions, and the boundaries (indices into a
/// SegSums) of the segmentation they fall on.
struct ChunkEnds {
  std::vector<size_t> Ends;
  std::vector<uint32_t> Bd;
  int Fine = 0;
};

/// Everything that depends on (micro-batch, t, sp) only; [R] by
/// recomputation (none, selective, full).
struct Group {
  bool Valid = false;
  int64_t B = 0;
  unsigned T = 0;
  bool SP = false;
  const TPPlan *TP = nullptr;
  /// Per position: its slot (TPPlan::SlotOf), whose forward and backward
  /// times are SlotTF and SlotTB (positions of one class and split have
  /// equal times).
  const uint32_t *SlotOf = nullptr;
  std::vector<double> SlotTF, SlotTB;
  /// The kernels a slot's forward and backward launch.
  std::vector<double> SlotLF, SlotLB;
  /// Per slot: FLOP terms, for the slots the plan uses.
  std::vector<double> SlotMF, SlotMM0, SlotMM1;
  std::vector<double> CollSeconds; ///< by CollCosts index, for those the plan uses
  /// Every used slot's times and collective's seconds finite and non-negative.
  bool TermsFinite = false;
  SegSums Seg[2]; ///< coarse, fine (made when a partition needs it)
  std::map<unsigned, ChunkEnds> Ends[3]; ///< by chunk count
  size_t TPCount = 0;
  /// The checkpoint terms' prefix sums over the cuts alone (they are zero
  /// elsewhere): PreCk[k] sums those of CutPos[0 .. k-1].
  std::vector<double> PreCk;
  /// Whether the activation sums are exact (so a stage's sum in any order
  /// is the difference of two prefixes).
  bool AExact = false, ASExact = false, CkExact = false;
  std::vector<double> SegSum; ///< PreA between consecutive cuts
  std::map<std::array<unsigned, 3>, StageAgg> Aggs; ///< by (recompute, p, v)
};

/// Polynomial terms that are whole numbers (bytes): their values at an
/// integer micro-batch, scaled by a power of two, sum exactly while the
/// magnitudes stay below 2^52 units.
struct IntegralTerms {
  bool Integral = true;
  std::array<double, BatchPoly::MaxDegree + 1> SumAbs{};
  void add(const BatchPoly &X) {
    for (unsigned K = 0; K <= BatchPoly::MaxDegree; ++K) {
      Integral &= std::isfinite(X.C[K]) && X.C[K] == std::trunc(X.C[K]);
      SumAbs[K] += std::fabs(X.C[K]);
    }
  }
  /// Exact at micro-batch Mb with every term times 1 or 2^-Shift.
  bool exactAt(double Mb, int Shift) const {
    double Bound = 0, Pow = 1;
    for (unsigned K = 0; K <= BatchPoly::MaxDegree; ++K, Pow *= Mb)
      Bound += SumAbs[K] * Pow;
    return Integral && Shift >= 0 && Bound * (1 + 1e-6) <= std::ldexp(1.0, 52 - Shift);
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
  /// prepare()'s steps: load the model once with the batch a symbol and
  /// cost it (formulas in the batch), take each position's costs and each
  /// value's bytes as polynomials in the micro-batch, bind the batch to 1
  /// in place and evaluate the formulas there for what needs numbers
  /// (recomputation cuts, sharding, parameters; the graph is costed again
  /// only when some node has no exact formula, to tell why), then find each
  /// parameter's owner, the stage boundaries, and the classes of positions
  /// with equal costs.
  llvm::Error loadSymbolic(const BatchLoader &Load);
  /// loadSymbolic's end, once C1 holds the costs at micro-batch 1.
  llvm::Error finishLoad();
  llvm::Error takePolynomials(const CostResult &Sym);
  void bindMicroBatchOne();
  /// The binding of the batch symbol to 1 (and nothing else).
  sym::Binding microBatchOne() const;
  void sumPositions();
  /// V's bytes as a polynomial in the micro-batch (taken before the bind).
  BatchPoly bytesOf(const Value *V) const;
  void assignParameters();
  void findBoundaries();
  void classifyPositions();

  const Config &Cfg;
  const PlanOptions &Opts;
  DiagnosticEngine &Diags;
  const Device &Dev;
  /// The model, loaded with a symbolic batch and then bound to micro-batch 1.
  std::unique_ptr<Model> M1;
  std::string BatchSymbol;
  /// Each value's bytes as a polynomial in the micro-batch, by value
  /// (main graph and subgraphs), taken while the batch was a symbol.
  /// (A value whose bytes do not grow with the batch has none.)
  /// (An index into BytePolys, each distinct polynomial once; NoBytePoly:
  /// none.)
  std::unique_ptr<ValueMap<uint32_t>> ValueBytes;
  std::vector<BatchPoly> BytePolys;
  static constexpr uint32_t NoBytePoly = UINT32_MAX;
  /// Per cost row (of both analyses: one graph, one order): modeled with
  /// the batch a symbol; and the extra saved bytes (masks, statistics) of
  /// the rows that have them, as polynomials.
  std::vector<uint8_t> SymModeled;
  llvm::DenseMap<size_t, std::string> SymUnmodeled; ///< the reason, for rows not modeled
  /// Nodes with multiply-accumulates whose costs hold an input dim the plan
  /// does not set (the first of them): the plan refuses those.
  size_t UnboundMacNodes = 0;
  const Node *FirstUnboundMac = nullptr;

  llvm::DenseMap<size_t, BatchPoly> SavedExtra;
  std::vector<Position> Pos;
  /// The distinct phase costs positions hold (Position::Fwd, Bwd), the zero
  /// phase first, each once (PhaseIndex: by their bits).
  std::vector<PolyPhase> Phases;
  using PhaseKey = std::array<uint64_t, 4 * (BatchPoly::MaxDegree + 1)>; ///< a phase's bits
  struct PhaseKeyHash {
    size_t operator()(const PhaseKey &K) const;
  };
  std::unordered_map<PhaseKey, uint32_t, PhaseKeyHash> PhaseIndex;
  /// P's index in Phases, added when new.
  uint32_t internPhase(const PolyPhase &P);
  const PolyPhase &fwd(const Position &X) const { return Phases[X.Fwd]; }
  const PolyPhase &bwd(const Position &X) const { return Phases[X.Bwd]; }
  std::vector<BatchPoly> LiveBytes; ///< activation bytes live on boundary k (before position k)
  /// Stage boundaries: after the last position of each segment between the
  /// graph's single-tensor cuts (a transformer's layer halves, a CNN's
  /// blocks), and the end; AllBoundaries when a graph has too few cuts.
  std::vector<size_t> Boundaries, AllBoundaries;
  /// When the cuts delimit a stack of identical layers (blockPeriod 1):
  /// their number, the layers being the segments that end at
  /// Boundaries[0 .. StackLayers - 1] (the first also holds what precedes
  /// the stack, an embedding); 0 otherwise.
  size_t StackLayers = 0;
  BatchPoly InputBytes;          ///< graph inputs per micro-batch
  double Params = 0;
  std::optional<double> FloatBytes; ///< --dtype's bytes (none: as stored)
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
  /// The products' GEMM dims (Position::GemmIdx), each distinct one once
  /// (GemmIds: by its bits).
  std::vector<GemmDims> Gemms;
  std::map<std::array<uint64_t, 4 * (BatchPoly::MaxDegree + 1)>, uint32_t> GemmIds;
  /// Positions whose node holds control-flow bodies: the kernels its
  /// forward and backward launch (each body node's times its multiplier,
  /// and the node's own), where the position's summed cost is one kernel.
  llvm::DenseMap<uint32_t, std::array<double, 2>> NestedKernels;
  /// A matrix product inside a control-flow position's bodies (a Loop's
  /// MatMul): the kernel model times it each trip, as `analyze` times it.
  /// Its counts stay in the position's phase (FLOPs, MFU) and are taken out
  /// of the rest, which runs as streaming kernels.
  struct NestedProduct {
    GemmDims Dims;
    PolyPhase Fwd, Bwd; ///< its own counts, times its multiplier
    double Mult = 1;    ///< its trips
    bool GradA = false, GradB = false, NeedsBackward = false;
    /// Whether its forward and backward count among NestedKernels.
    std::array<bool, 2> Counted = {false, false};
  };
  llvm::DenseMap<uint32_t, std::vector<NestedProduct>> NestedProducts;
  /// A convolution's geometry with its batch as a formula in the
  /// micro-batch (Position::Conv).
  struct ConvDims {
    BatchPoly Batch;
    ConvGeometry Geo;
  };
  std::vector<ConvDims> Convs; ///< each distinct one once (ConvIds: by its bits)
  std::map<std::array<uint64_t, 12>, uint32_t> ConvIds;
  /// A recurrent layer's geometry with its batch as a formula in the
  /// micro-batch (Position::Recurrent).
  struct RecurrentDims {
    BatchPoly Batch;
    RecurrentGeometry Geo;
  };
  std::vector<RecurrentDims> Recurrents; ///< each distinct one once (RecurrentIds)
  std::map<std::array<uint64_t, 9>, uint32_t> RecurrentIds;
  std::vector<uint8_t> RecFull, RecSel, Cut;
  /// Per position: the key of what its sums read beside its slot and
  /// collectives (recomputation flags, saved activations held without and
  /// with selective recomputation); KeyTerms by key.
  struct PosTerms {
    BatchPoly Saved, Sel;
    uint8_t RecSel = 0, RecFull = 0;
    bool operator==(const PosTerms &O) const {
      return Saved.C == O.Saved.C && Sel.C == O.Sel.C && RecSel == O.RecSel &&
             RecFull == O.RecFull;
    }
  };
  std::vector<uint32_t> PosKey;
  std::vector<PosTerms> KeyTerms;
  const BatchPoly &savedAff(size_t P) const { return KeyTerms[PosKey[P]].Saved; }
  const BatchPoly &selAff(size_t P) const { return KeyTerms[PosKey[P]].Sel; }
  /// Whether some partition of the search has more chunks than the coarse
  /// segmentation has segments (so needs the fine one).
  bool NeedFine = false;
  std::vector<size_t> CutPos;           ///< positions with Cut, ascending
  /// CutPos[k]'s boundary index in each segmentation (coarse, fine).
  std::vector<uint32_t> CutBd[2];
  std::vector<BatchPoly> CutCk;         ///< CkAff at each of CutPos
  IntegralTerms SavedInt, SelInt, CkInt;
  // Trainable parameters in order of position: owner, value, elements.
  std::vector<uint32_t> ParamPos;
  std::vector<const Value *> ParamVal;
  std::vector<double> ParamElems;
  std::vector<double> PosParams;
  /// Frozen weights (CostResult::FrozenWeights) in order of their first
  /// reader's position: held, with no gradient or optimizer state.
  std::vector<uint32_t> FrozenPos;
  std::vector<const Value *> FrozenVal;
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
  std::map<std::pair<unsigned, std::array<double, BatchPoly::MaxDegree + 1>>, uint32_t>
      CollCostIds; ///< by kind and bytes
  /// Each collective's index in CollCosts, by tensor and kind (UINT32_MAX:
  /// none yet); made with the first tensor-parallel plan.
  using CollCostIndex = std::array<uint32_t, NumCollectiveKinds>;
  std::optional<ValueMap<CollCostIndex>> CollCostOf;
  /// What evaluating a configuration writes: one per search thread.
  struct Workspace {
    Group G; ///< the current group
    GemmMemo Memo; ///< products timed by the kernel model (one per thread)
  };
  Workspace Work[2];
  /// Sharding propagations computed ahead on Worker, by (t, sp).
  std::map<std::pair<unsigned, bool>, std::future<ShardingResult>> Ahead;
  std::thread Worker;

  /// Sizes W's per-slot tables for this graph (a no-op once done).
  void sizeWorkspace(Workspace &W);
  void propagateAhead();
  const TPPlan &tpPlan(unsigned T, bool SP);
  /// TP's segments' classes in segmentation Fine (Segments.cpp).
  void segmentClasses(TPPlan &TP, int Fine);
  /// The group of (micro-batch B, t, sp), made in W unless W holds it:
  /// its collectives' and slots' times, the coarse segments' sums and
  /// their prefixes, and whether the activation sums are exact.
  Group &group(Workspace &W, int64_t B, unsigned T, bool SP);
  void sumCollectives(Group &G);
  void placeSlots(Workspace &W);
  /// G's sums over segmentation Fine (made once a group): each class's,
  /// then their running sums segment by segment.
  const SegSums &segSums(Group &G, int Fine);
  void sumClasses(Group &G, int Fine);
  /// A matrix product's forward and backward time by the kernel model, at
  /// micro-batch Mb and degree T (Kind: its slot's split kind).
  void productTimes(Workspace &W, const Position &X, double Mb, unsigned Kind, unsigned T,
                    double &Fwd, double &Bwd, double &FwdLaunches, double &BwdLaunches);
  /// A control-flow position's forward and backward times and launches
  /// with its bodies' K kernels (NestedKernels), not one.
  void nestedKernels(const std::array<double, 2> &K, bool Kernels, double &Fwd, double &Bwd,
                     double &FwdLaunches, double &BwdLaunches) const;
  /// Position X's convolution or recurrent layer geometry (Convs,
  /// Recurrents) when every dim but the batch is known.
  void takeKernelGeometry(const NodeCost &NC, Position &X);
  /// A convolution's forward and backward time by the kernel model, at
  /// micro-batch Mb and degree T (Kind: its slot's split kind); F and B
  /// its phases' counts (the depthwise case streams them).
  void convTimes(Workspace &W, const Position &X, double Mb, unsigned Kind, unsigned T,
                 const PhaseCost &F, const PhaseCost &B, double &Fwd, double &Bwd,
                 double &FwdLaunches, double &BwdLaunches);
  /// A recurrent layer's forward and backward time by the kernel model, at
  /// micro-batch Mb and degree T (a split divides its batch).
  void recurrentTimes(Workspace &W, const Position &X, double Mb, unsigned Kind, unsigned T,
                      double &Fwd, double &Bwd, double &FwdLaunches, double &BwdLaunches);
  /// A control-flow position's slot times with its bodies' products timed
  /// by the kernel model (NestedProducts) and the rest streamed.
  void nestedSlot(Workspace &W, const Position &X, const std::vector<NestedProduct> &Prods,
                  double Mb, double Scale, unsigned T, double &Fwd, double &Bwd,
                  double &FwdLaunches, double &BwdLaunches);
  void checkExactSums(Group &G);
  /// What the partition (recomputation, P stages, V chunks each) of Gr's
  /// positions adds: the chunk ends, shared weights' copies, the largest
  /// boundary, the slowest stage's times and each stage's memory terms.
  const StageAgg &stageAgg(Group &Gr, Config::Recompute Rc, unsigned P, unsigned V);
  /// One partition being aggregated: its chunk ends and recomputation flags.
  struct StageView {
    const Group &Gr;
    int R;
    unsigned P, V;
    const ChunkEnds &CE;
    const SegSums &Sums;          ///< of the segmentation the ends fall on
    const SegmentClasses &Cls;
    const uint8_t *Flag; ///< positions recomputed (null: none)
    const std::vector<size_t> &Ends = CE.Ends;
    size_t start(unsigned Ch) const { return Ch == 0 ? size_t(0) : Ends[Ch - 1]; }
    /// Chunk Ch's first and end boundary (segments bd0 .. bd1 - 1).
    uint32_t bd0(unsigned Ch) const { return Ch == 0 ? 0 : CE.Bd[Ch - 1]; }
    uint32_t bd1(unsigned Ch) const { return CE.Bd[Ch]; }
  };
  const ChunkEnds &stageEnds(Group &Gr, int R, unsigned Chunks);
  void tiedCopies(const StageView &S, StageAgg &A);
  std::vector<unsigned> slowestCandidates(const StageView &S);
  /// A stage's time and the parts of it evaluate() reports.
  struct StageSums {
    double T = 0, B = 0, TP = 0, Rec = 0;
  };
  void sumStagesExactly(const StageView &S, unsigned Sa, const unsigned *Sb, StageSums &Xa,
                        StageSums &Xb);
  /// The kernels stage St of S launches per micro-batch (0 on a device that
  /// runs each kernel as it is issued: there the launch is in each time).
  double stageLaunches(const StageView &S, unsigned St) const;
  /// A stage of Device seconds and Launches kernels as one stream.
  double stageSeconds(double Device, double Launches) const {
    return Dev.streamSeconds(Device, Launches);
  }
  /// The slowest stage and its times: among the candidates the prefix
  /// sums leave (Bounded), else among every stage.
  void slowestStage(const StageView &S, bool Bounded, StageAgg &A);
  void stageMemory(const StageView &S, StageAgg &A);
  /// One configuration on N devices: the pipeline's time, the fullest
  /// stage's memory, then the gradient reduction, optimizer and input feed.
  PlanEval evaluate(Workspace &W, const PlanConfig &PC, unsigned N);
  /// Which of a configuration's groups cross nodes.
  struct Links {
    bool TPInter = false, DPInter = false, PPInter = false;
  };
  Links linksOf(const PlanConfig &PC) const;
  /// Returns the pipeline's time (micro-batches and bubble).
  double evalPipeline(const PlanConfig &PC, const StageAgg &A, const Links &L,
                      PlanEval &E) const;
  /// The memory of the fullest stage (E.MemoryBytes and its terms, E.Fits).
  void evalMemory(const PlanConfig &PC, const StageAgg &A, const TPPlan &TP,
                  PlanEval &E) const;
  /// The parameters (elements) on one device of stage S.
  double stageParamCount(const PlanConfig &PC, const StageAgg &A, unsigned S) const;
  /// The data-parallel collectives of a stage of ParamCount elements a
  /// device: Times per step of PerMicroBatch (the gradients' reduction, or
  /// ZeRO-3's gathers and reduction), then Tail after the update (ZeRO's
  /// parameter all-gather).
  struct DataParallelComm {
    double PerMicroBatch = 0;
    unsigned Times = 1;
    double Tail = 0;
    double total() const { return Times * PerMicroBatch + Tail; }
  };
  DataParallelComm dataParallelComm(const PlanConfig &PC, const Links &L,
                                    double ParamCount) const;
  /// The gradient reductions (the stage whose reduction ends last), the
  /// optimizer, the input feed and the step's time; E's pipeline terms
  /// (evalPipeline) already set.
  void evalUpdate(const PlanConfig &PC, const StageAgg &A, const Links &L, double Pipeline,
                  PlanEval &E) const;
  /// A configuration to evaluate on N devices.
  struct Job {
    PlanConfig C;
    unsigned N;
  };
  std::vector<PlanEval> evaluateAll(const std::vector<Job> &Jobs);
  std::vector<PlanConfig> enumerate(unsigned N, const PlanOptions &O) const;
  /// The positions whose forward runs a kernel: a pipeline has at most one
  /// stage per such position.
  size_t kernelPositions() const;

  double linkBandwidth(bool Inter) const { return linkFor(Dev, Inter).Bandwidth; }
  /// The per-rank bandwidth of a ring collective over a group of Size ranks
  /// Stride apart (ringLink: min(g x inter, intra) across nodes; g = 1, one
  /// member per node, as for the data-parallel group of t = 8: the
  /// inter-node link alone).
  double groupBandwidth(unsigned Stride, unsigned Size) const {
    return ringLink(Dev, Stride, Size, K).Bandwidth;
  }
  /// "intra-node", "inter-node", or "inter-node, g NICs per node".
  std::string tierName(unsigned Stride, unsigned Size) const {
    if (!crossesNodes(Stride, Size))
      return "intra-node";
    unsigned G = ringMembersPerNode(Stride, Size, K);
    return G > 1 ? "inter-node, " + std::to_string(G) + " NICs per node" : "inter-node";
  }
  double linkLatency(bool Inter) const { return linkFor(Dev, Inter).Latency; }
  /// A group of Size ranks Stride apart crosses nodes when it spans more
  /// than one node's devices.
  bool crossesNodes(unsigned Stride, unsigned Size) const {
    return Size > 1 && uint64_t(Stride) * Size > K;
  }
};

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

// Prepare.cpp
/// Sums each node's costs into the position of its main-graph ancestor.
void collect(const Model &M, const CostResult &C, const RecomputePlan &Full,
             const RecomputePlan &Sel, std::optional<double> FloatBytes,
             std::vector<PhaseCost> &Fwd, std::vector<PhaseCost> &Bwd,
             std::vector<double> &Saved, std::vector<double> &SavedSel,
             std::vector<double> &Checkpoint);
/// Activation bytes live on each boundary of the main graph.
std::vector<double> liveBytes(const Graph &G, std::optional<double> FloatBytes);

// StageBalance.cpp
/// The largest single segment of a prefix sum (the smallest feasible bound).
double maxSegment(const std::vector<double> &Prefix);
/// Chunk ends that balance Seg, the prefix sum collapsed to the Allowed
/// boundaries, over Chunks chunks (Sorted: Seg non-decreasing, its largest
/// segment MaxSeg).
std::vector<size_t> balance(const std::vector<double> &Seg, unsigned Chunks,
                            const std::vector<size_t> &Allowed, bool Sorted, double MaxSeg);
/// balance() of chunk streams: each chunk's device time (Seg) and its
/// host's time to issue its kernels (Host, a prefix over the same
/// boundaries), the larger of the two balanced (both non-decreasing).
std::vector<size_t> balanceStream(const std::vector<double> &Seg,
                                  const std::vector<double> &Host, unsigned Chunks,
                                  const std::vector<size_t> &Allowed);

// Enumerate.cpp
/// The divisors of N, ascending.
std::vector<unsigned> divisors(unsigned N);

} // namespace ridge::plan

#endif
