//===- Planner.h - Recommend a parallel strategy for N devices ---*- C++ -*-===//
//
// laws.md sections 4 to 6 on a whole training step. For every configuration
// (data d, tensor t, pipeline p with m micro-batches and v interleaved
// chunks, recomputation, ZeRO stage, sequence parallelism) with d*t*p = N:
//   per micro-batch and stage: node times on the device's roofline, split t
//     ways where the sharding propagation splits them, plus the tensor-
//     parallel collectives (on the critical path);
//   pipeline: stages balanced by time over the topological order; 1F1B time
//     = (m + (p-1)/v) * slowest stage (bubble (p-1)/(v m + p - 1)), plus
//     point-to-point sends of the boundary activations;
//   data parallel: ring all-reduce of the stage's gradients, 2(d-1)/d bytes
//     (ZeRO-3: 1.5x), hidden behind the last micro-batch's backward up to its
//     length, the overlapped part slowing compute by a factor;
//   optimizer on the device's share of parameters; the input feed over the
//     host link, hidden when compute per step exceeds it;
//   collective time = latency terms + factor * bytes / (bandwidth * eff) on
//     the tier the group spans (ranks: tensor fastest, then data, then
//     pipeline).
// Configurations that do not fit device memory are dropped with the reason.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_PLAN_PLANNER_H
#define RIDGE_PASSES_PLAN_PLANNER_H

#include "analyzer/Config.h"
#include "devices/Device.h"
#include "analyzer/Diagnostics.h"
#include "analyzer/ir/IR.h"
#include "analyzer/Timing.h"
#include "passes/plan/Sharding.h"
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ridge {

struct PlanOptions {
  unsigned Devices = 1;
  unsigned DevicesPerNode = 0;  ///< 0: the device file's
  int64_t GlobalBatch = 0;      ///< samples per step (required)
  std::optional<int64_t> MicroBatch;
  // A fixed configuration (evaluate exactly it) when set.
  std::optional<unsigned> TP, PP, DP, Interleave, Zero;
  std::optional<Config::Recompute> Recomp;
  std::optional<bool> SequenceParallel;
  unsigned MaxTP = 0;           ///< 0: devices per node
  double OverlapSlowdown = 0.1; ///< compute slowdown while communication overlaps it
  /// Data-parallel gradient reduction overlaps the last backward (PyTorch
  /// DDP, Megatron-LM's --overlap-grad-reduce); false: it starts after the
  /// whole backward (Megatron-LM's default).
  bool OverlapGradReduce = true;
  /// Every partition over one position a segment (the sums position by
  /// position), not between the graph's cuts: a check of the segment
  /// classes (hidden --plan-fine-segments; the same plan to rounding).
  bool FineSegments = false;
  unsigned Top = 5;             ///< configurations printed
  bool Scaling = false;         ///< also a scaling curve over 1..N devices
  std::string ScalingSvg;       ///< and write it as SVG
  std::string Emit;             ///< megatron | deepspeed | torch
  Timing *Timer = nullptr;      ///< --timing: the plan's phases
};

struct PlanConfig {
  unsigned D = 1, T = 1, P = 1, V = 1, Zero = 0;
  int64_t MicroBatch = 1, M = 1; ///< micro-batch size, micro-batches per step
  Config::Recompute Recomp = Config::Recompute::None;
  bool SP = false;
};

struct PlanEval {
  PlanConfig C;
  bool Fits = true;
  std::string Why;          ///< when it does not fit
  // Seconds.
  double StepSeconds = 0;
  double ComputeSeconds = 0;  ///< m * slowest stage compute (incl. recompute)
  double RecomputeSeconds = 0;
  /// m * what the slowest stage's device waits per micro-batch for the host
  /// to issue its kernels (an asynchronous device: Device::streamSeconds);
  /// StageLaunches: that stage's kernels per micro-batch.
  double HostStallSeconds = 0, StageLaunches = 0;
  double TPSeconds = 0;       ///< tensor-parallel collectives on the critical path
  double P2PSeconds = 0;
  double BubbleSeconds = 0;
  /// The data-parallel reduction of the stage whose reduction ends last
  /// (DPStage, 0 the first), and what of it the step waits for.
  double DPSeconds = 0, DPExposedSeconds = 0, OverlapSlowdownSeconds = 0;
  unsigned DPStage = 0;
  /// How much earlier than the first stage's that stage's backward ends
  /// (1F1B's cool-down reaches it DPStage chunk backwards and sends sooner).
  double DPHeadStartSeconds = 0;
  /// The share of that stage's gradient its backward computes last (its
  /// first weights): overlapped or not, its reduction is exposed.
  double DPLastReadyShare = 0;
  /// Gradient all-reduce of weights shared across pipeline stages (a tied
  /// embedding), after the backward.
  double TiedSyncSeconds = 0;
  double OptimizerSeconds = 0, FeedExposedSeconds = 0;
  double Bubble = 0;          ///< fraction of the pipeline time
  double MemoryBytes = 0;     ///< the fullest device, its reserve included
  double ParamBytes = 0, ActivationBytes = 0;
  /// Of ParamBytes: ZeRO-3's gathered parameters and gradient (0 otherwise).
  double GatheredBytes = 0;
  /// The reserve on it: Device::withReserve's runtime, collective buffers
  /// (when the configuration communicates) and fragmentation.
  double ReserveBytes = 0;
  double ModelFlops = 0;      ///< forward + backward per step (no recomputation)
  double MatrixFlops = 0;     ///< 2*MACs of forward, backward and recomputation
  double MFU = 0;
  double TFlopsPerDevice = 0; ///< ModelFlops / step / N
  std::string TPTier, DPTier, PPTier;
  size_t TPCollectivesPerStep = 0;
};

struct PlanResult {
  const Device *Dev = nullptr;
  PlanOptions Opts;
  DType StepType = DType::Float;
  double Params = 0;
  std::vector<PlanEval> Ranked;      ///< fitting, fastest first
  size_t Evaluated = 0, Rejected = 0;
  std::vector<std::pair<std::string, size_t>> RejectReasons;
  std::optional<PlanEval> Fixed;     ///< the evaluated fixed configuration
  PlanEval SingleDevice;             ///< the baseline for speedup
  std::vector<std::pair<unsigned, PlanEval>> Scaling;
  /// Tensor-parallel splits the propagation chose at the winner's degree.
  std::vector<std::pair<std::string, std::string>> WeightSplits; ///< node, col|row|vocab
  double SearchSeconds = 0;
  /// The load's and the planner's warnings, as the JSON output lists them
  /// (the text output's are printed to stderr).
  std::vector<std::string> Warnings;
  /// The graph planned (at micro-batch 1), handed to the caller, who
  /// decides when to free it (ridge exits without).
  std::vector<std::unique_ptr<Model>> Models;
};

/// Loads the model with its batch dimension left a symbol (Batch =
/// PlanSymbolicBatch; the model's BatchSymbol names it: loadModelAtBatch
/// with SymbolicBatch), warnings to Diags, timed by --timing when Timed.
/// Called once: the planner costs the model as formulas in the batch and
/// evaluates them at every micro-batch.
using BatchLoader = std::function<llvm::Expected<std::unique_ptr<Model>>(
    int64_t Batch, DiagnosticEngine &Diags, bool Timed)>;
constexpr int64_t PlanSymbolicBatch = -1;

llvm::Expected<PlanResult> planParallelism(const BatchLoader &Load, const Config &Cfg,
                                           const PlanOptions &Opts, DiagnosticEngine &Diags);

void printPlan(const PlanResult &R, const Config &Cfg, llvm::raw_ostream &OS);
/// The scaling curve (speedup vs devices) with the linear ideal and
/// Amdahl's bound, as SVG.
llvm::Error writeScalingSvg(const PlanResult &R, llvm::StringRef Path);
/// The same chart to OS (R.Scaling not empty).
void renderScalingSvg(const PlanResult &R, llvm::raw_ostream &OS);
/// `ridge plan --report OUT.html`: the page of passes/report/HtmlReport.h
/// for R, from the JSON document printPlan gives; Model names the model.
llvm::Error writePlanHtml(const PlanResult &R, const Config &Cfg, llvm::StringRef Model,
                          llvm::StringRef Path);

/// Ring collective time on n devices: latency terms plus the ring factor
/// times bytes over the link: all-reduce 2(n-1)/n, all-gather and
/// reduce-scatter (n-1)/n, all-to-all (n-1)/n.
double collectiveSeconds(CollectiveKind K, double Bytes, unsigned N, double Bandwidth,
                         double Latency);

/// The link a group uses: the inter-node link when it spans nodes, else the
/// intra-node one (either falling back to the other when the device file
/// lacks it), its bandwidth derated by the device's efficiency for that tier.
struct LinkUse {
  double Bandwidth = 0, Latency = 0;
};
LinkUse linkFor(const Device &D, bool InterNode);

/// Members on one node of a group of Size ranks Stride apart, PerNode
/// devices to a node (1 when each node holds one).
unsigned ringMembersPerNode(unsigned Stride, unsigned Size, unsigned PerNode);

/// The link a ring collective over such a group gets per rank. Within a
/// node: the intra-node link. Across nodes, a device file's inter-node
/// figure is per device (a DGX/HGX node has one NIC per GPU) and NCCL runs a
/// ring per NIC, so a group with g members on each node spreads its
/// inter-node traffic over their g NICs while each member's intra-node link
/// carries all of it: min(g x inter, intra), at the inter-node latency.
LinkUse ringLink(const Device &D, unsigned Stride, unsigned Size, unsigned PerNode);

/// Amdahl's law: speedup of a fraction P sped up S times.
double amdahlSpeedup(double P, double S);

/// `ridge laws`: each formula evaluated for the values given (skipped when
/// its inputs are absent).
void printLaws(double P, llvm::ArrayRef<double> Speedups, double Bytes, unsigned Ranks,
               double Bandwidth, double Latency, unsigned Stages, unsigned Micro,
               unsigned Chunks, llvm::raw_ostream &OS);

} // namespace ridge

#endif
