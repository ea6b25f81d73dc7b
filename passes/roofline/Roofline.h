//===- Roofline.h - Place every node on the device's roofline ---*- C++ -*-===//
//
// laws.md section 3: attainable rate P(I) = min(pi, beta * I). Per node and
// phase, with pi and beta derated by the device's efficiency factors:
//   compute time = 2*MACs / pi_matrix(dtype) + (FLOPs - 2*MACs) / pi_vector
//   memory time  = bytes / beta
//   transc time  = transcendentals / tau
//   time = max(compute, memory, transc) (or their sum, --no-overlap)
//          + the device's launch floor for every phase that runs a kernel.
// Matrix products and convolutions run at the dtype's (tensor-core) peak;
// every other FLOP at the vector fp32 rate, as element-wise kernels do.
// On a GPU whose file gives its SM count, each node's time is instead that
// of its kernels (KernelModel.h); the roofline terms stay as the bound.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_ROOFLINE_ROOFLINE_H
#define RIDGE_PASSES_ROOFLINE_ROOFLINE_H

#include "devices/Device.h"
#include "passes/cost/CostModel.h"
#include "passes/cost/TrainingStep.h"
#include "passes/roofline/KernelModel.h"

namespace ridge {

enum class Bound : uint8_t { None, Compute, Memory, Transcendental, Launch };
const char *boundName(Bound B);

struct PhaseTime {
  double Seconds = 0;
  double ComputeS = 0, MemoryS = 0, TranscS = 0;
  Bound B = Bound::None;
  /// With the kernel model: the effect that costs the phase's slowest
  /// kernel most (waves, K depth, bandwidth, launch, ...); None without it.
  Limit Why = Limit::None;
  /// Kernels the host issues for the phase (0: nothing runs).
  double Launches = 0;
};

/// A phase's operational intensity: FLOP per byte (infinity when no bytes
/// move).
double intensity(const PhaseCost &P);
/// The rate the roofline lets phase P (placed as T) reach, FLOP/s:
/// min(pi_eff, beta * I) = FLOPs / max(compute, memory term); 0 when
/// nothing runs. Derived, not kept.
double attainable(const PhaseCost &P, const PhaseTime &T);

/// What the analysis keeps of a placed phase: its time and verdicts. The
/// roofline terms behind them follow from the node's counts, device and
/// dtype, and are recomputed where a report shows them
/// (RooflineResult::terms): a million nodes' rows are 32 MB, not 120.
struct PlacedPhase {
  double Seconds = 0; ///< on the device (the host's launches: Launches)
  Bound B = Bound::None;
  Limit Why = Limit::None;
  /// The dtype whose peak applied (both phases of a node have the same;
  /// held here, in the padding, where a field of the node's row took 8
  /// bytes more a node).
  DType Type = DType::Float;
  uint32_t Launches = 0; ///< kernels the host issues (in the padding)
  PlacedPhase() = default;
  PlacedPhase(const PhaseTime &T)
      : Seconds(T.Seconds), B(T.B), Why(T.Why),
        Launches(uint32_t(std::min(T.Launches, double(UINT32_MAX)))) {}
};

struct NodeRoofline {
  PlacedPhase Fwd, Bwd;
  DType type() const { return Fwd.Type; } ///< the dtype whose peak applied
};
static_assert(sizeof(NodeRoofline) == 32, "a million nodes' rows are 32 MB");

struct RooflineResult {
  const Device *Dev = nullptr;
  DType StepType = DType::Float;   ///< dtype of the step (MFU's peak)
  double MatrixPeak = 0;           ///< datasheet peak for StepType, FLOP/s
  double VectorPeak = 0;           ///< datasheet fp32 peak
  double Bandwidth = 0;            ///< datasheet bytes/s
  double RidgePoint = 0;           ///< MatrixPeak / Bandwidth, FLOP/byte
  std::vector<NodeRoofline> Nodes; ///< parallel to CostResult::Nodes
  /// The device's time in each part of the step, and the kernels the host
  /// issues for it.
  double FwdSeconds = 0, BwdSeconds = 0, RecomputeSeconds = 0, OptimizerSeconds = 0;
  double FwdLaunches = 0, BwdLaunches = 0, RecomputeLaunches = 0, OptimizerLaunches = 0;
  double MemoryBoundSeconds = 0; ///< phases whose larger term is memory
  double deviceSeconds() const {
    return FwdSeconds + BwdSeconds + RecomputeSeconds + OptimizerSeconds;
  }
  double launches() const {
    return FwdLaunches + BwdLaunches + RecomputeLaunches + OptimizerLaunches;
  }
  /// The step as one stream: Device::streamSeconds of the device's time and
  /// the launches (on an asynchronous device, the host's issue rate can
  /// bound it).
  double stepSeconds() const {
    return Dev ? Dev->streamSeconds(deviceSeconds(), launches()) : deviceSeconds();
  }
  /// The time the device waits for the host to issue kernels (0 unless the
  /// step is host-bound).
  double hostStallSeconds() const { return stepSeconds() - deviceSeconds(); }
  /// The forward pass alone as one stream (inference).
  double forwardSeconds() const {
    return Dev ? Dev->streamSeconds(FwdSeconds, FwdLaunches) : FwdSeconds;
  }
  /// Node N's step time (forward and backward phases, its multiplier
  /// applied); N is one of C.Nodes, the costs this result placed.
  double nodeSeconds(const CostResult &C, const NodeCost &N) const {
    const NodeRoofline &R = Nodes[&N - C.Nodes.data()];
    return (R.Fwd.Seconds + R.Bwd.Seconds) * N.multiplier();
  }
  /// Node N's phase (the backward when Bwd) in full: its roofline terms
  /// recomputed (placeOnDevice under Cfg, the configuration this result was
  /// placed with), its time and verdicts as placed. N is one of C.Nodes.
  PhaseTime terms(const CostResult &C, const NodeCost &N, bool Bwd, const Config &Cfg) const;
  /// Model FLOPs utilization: forward + backward FLOPs (not recomputation
  /// or optimizer) per second of step, over the datasheet peak.
  double MFU = 0;
};

struct RooflineAnalysis {
  using Result = RooflineResult;
  static constexpr const char *Name = "roofline";
  static llvm::Expected<Result> run(Model &M, AnalysisManager &AM);
};

/// One phase of an op in dtype T on device D: the matrix peak for T (TF32
/// for fp32 with --tf32), the vector rate for T for other FLOPs, each derated
/// by the device's efficiency (its curves by op size when it has them), and
/// time = max of the terms, or their sum with --no-overlap or a device whose
/// kernels do not overlap.
PhaseTime placeOnDevice(const PhaseCost &P, const Device &D, DType T, const Config &Cfg);

/// One phase of node NC: on a device with the kernel model (hasKernelModel),
/// the roofline terms of placeOnDevice with the time and bound of the
/// node's kernels (KernelModel.h); else placeOnDevice.
PhaseTime placeNode(const NodeCost &NC, bool Bwd, const Device &D, DType T,
                    const Config &Cfg, GemmMemo *Memo = nullptr);

/// One phase on the roofline with explicit rates; exposed for unit tests.
/// The phase's time is its work plus PerKernel (the kernel gap on an
/// asynchronous device, else the launch); it is launch-bound when its
/// work is shorter than Launch, the host's time to issue it.
PhaseTime placePhase(const PhaseCost &P, double MatrixPeak, double VectorPeak,
                     double Bandwidth, double TranscRate, double Launch, double PerKernel,
                     bool Sum);
/// The same on a device that runs each kernel as it is issued (PerKernel =
/// Launch).
inline PhaseTime placePhase(const PhaseCost &P, double MatrixPeak, double VectorPeak,
                            double Bandwidth, double TranscRate, double Launch, bool Sum) {
  return placePhase(P, MatrixPeak, VectorPeak, Bandwidth, TranscRate, Launch, Launch, Sum);
}

/// `print<roofline>`: each node's intensity, attainable rate, time and bound.
RIDGE_DECLARE_PASS(PrintRooflinePass)
/// `print<partition>`: each weighted op's intensity under data- and
/// tensor-parallel splits (PartitionIntensity.cpp).
RIDGE_DECLARE_PASS(PrintPartitionPass)

} // namespace ridge

#endif
