//===- Roofline.cpp - Place every node on the device's roofline -----------===//
#include "passes/roofline/Roofline.h"
#include "analyzer/Parallel.h"
#include "llvm/Support/FormatVariadic.h"
#include <array>
#include <cmath>
#include <limits>
#include <set>

using namespace ridge;

const char *ridge::boundName(Bound B) {
  switch (B) {
  case Bound::None: return "-";
  case Bound::Compute: return "compute";
  case Bound::Memory: return "memory";
  case Bound::Transcendental: return "transc";
  case Bound::Launch: return "launch";
  }
  return "?";
}

double ridge::intensity(const PhaseCost &P) {
  return P.Bytes > 0 ? P.Flops / P.Bytes : std::numeric_limits<double>::infinity();
}

double ridge::attainable(const PhaseCost &P, const PhaseTime &T) {
  double Slowest = std::max(T.ComputeS, T.MemoryS);
  return Slowest > 0 ? P.Flops / Slowest : 0;
}

PhaseTime ridge::placePhase(const PhaseCost &P, double MatrixPeak, double VectorPeak,
                            double Bandwidth, double TranscRate, double Launch,
                            double PerKernel, bool Sum) {
  PhaseTime T;
  double MatrixFlops = 2 * P.Macs;
  double VectorFlops = std::max(0.0, P.Flops - MatrixFlops);
  T.ComputeS = MatrixFlops / MatrixPeak + VectorFlops / VectorPeak;
  T.MemoryS = P.Bytes / Bandwidth;
  T.TranscS = TranscRate > 0 ? P.Transcendentals / TranscRate
                             : P.Transcendentals / VectorPeak;
  double Work = Sum ? T.ComputeS + T.MemoryS + T.TranscS
                    : std::max({T.ComputeS, T.MemoryS, T.TranscS});
  if (Work <= 0)
    return T; // nothing runs: a view or metadata op launches no kernel
  T.B = T.ComputeS >= T.MemoryS && T.ComputeS >= T.TranscS ? Bound::Compute
        : T.MemoryS >= T.TranscS                             ? Bound::Memory
                                                             : Bound::Transcendental;
  if (Launch > Work)
    T.B = Bound::Launch;
  T.Seconds = Work + PerKernel;
  T.Launches = 1;
  return T;
}

PhaseTime ridge::placeOnDevice(const PhaseCost &P, const Device &D, DType T,
                               const Config &Cfg) {
  double MatrixFlops = 2 * P.Macs;
  double VectorFlops = std::max(0.0, P.Flops - MatrixFlops);
  std::optional<double> Peak = D.peak(T);
  double VectorPeak = D.vectorPeak(T);
  double MatrixPeak =
      T == DType::Float && Cfg.TF32 && D.Tf32Flops > 0 ? D.Tf32Flops : Peak.value_or(VectorPeak);
  double Pi = MatrixPeak * D.matrixEfficiency(MatrixFlops);
  double Vector = VectorPeak * D.vectorEfficiency(VectorFlops);
  double Beta = D.MemBandwidth * D.memoryEfficiency(P.Bytes);
  double Tau = D.TranscendentalsPerS * D.EffCompute;
  return placePhase(P, Pi, Vector, Beta, Tau, D.LaunchOverhead, D.perKernelOverhead(),
                    Cfg.SumTerms || !D.KernelOverlap);
}

PhaseTime ridge::placeNode(const NodeCost &NC, bool Bwd, const Device &D, DType T,
                           const Config &Cfg, GemmMemo *Memo) {
  PhaseTime P = placeOnDevice(Bwd ? NC.Bwd : NC.Fwd, D, T, Cfg);
  if (!hasKernelModel(D, Cfg))
    return P;
  PhaseKernels K = nodeKernels(NC, Bwd, D, T, Cfg, Memo, &P);
  P.Seconds = K.seconds();
  P.Launches = K.launches();
  P.Why = K.why();
  switch (P.Why) {
  case Limit::None: P.B = Bound::None; break;
  case Limit::Bandwidth:
  case Limit::Latency: P.B = Bound::Memory; break;
  case Limit::Launch: P.B = Bound::Launch; break;
  case Limit::Vector:
    P.B = P.TranscS > P.ComputeS ? Bound::Transcendental : Bound::Compute;
    break;
  default: P.B = Bound::Compute; break;
  }
  return P;
}

PhaseTime RooflineResult::terms(const CostResult &C, const NodeCost &N, bool Bwd,
                                const Config &Cfg) const {
  if (Bwd && !N.NeedsBackward)
    return PhaseTime(); // no backward was placed
  const NodeRoofline &R = Nodes[&N - C.Nodes.data()];
  PhaseTime T = placeOnDevice(Bwd ? N.Bwd : N.Fwd, *Dev, R.type(), Cfg);
  const PlacedPhase &Kept = Bwd ? R.Bwd : R.Fwd;
  T.Seconds = Kept.Seconds;
  T.B = Kept.B;
  T.Why = Kept.Why;
  T.Launches = Kept.Launches;
  return T;
}

llvm::Expected<RooflineResult> RooflineAnalysis::run(Model &M, AnalysisManager &AM) {
  const Config &Cfg = AM.config();
  if (!Cfg.Dev)
    return usageError("roofline: no device selected");
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  if (C->Sym)
    return needsNumbers(M, *C, "times, roofline bounds and MFU");
  auto T = AM.getResult<TrainingStepAnalysis>();
  if (!T)
    return T.takeError();
  const Device &D = *Cfg.Dev;
  RooflineResult R;
  R.Dev = &D;
  R.Bandwidth = D.MemBandwidth;
  R.VectorPeak = D.peak(DType::Float).value_or(0);
  std::set<DType> Fallbacks;
  // The step's dtype, MFU's peak: --dtype, else the type that carries the
  // most matrix FLOPs as the graph stores it (an fp16 export's products
  // run at the fp16 peak; dividing by fp32's gave an MFU of 500%).
  // (By ONNX type code: an array, no map lookup per node.)
  std::array<double, 256> MatrixFlopsByType{};

  // Each op placed (on two threads for a large graph, a memo each), then
  // the sums in graph order.
  R.Nodes.resize(C->Nodes.size());
  std::array<GemmMemo, 2> Memos;
  onTwoThreads(C->Nodes.size(), Cfg.TwoThreadsFrom, [&](size_t I, unsigned Thread) {
    const NodeCost &NC = C->Nodes[I];
    NodeRoofline &NR = R.Nodes[I];
    // The op's arithmetic type: a quantized product's (int8, float8), else
    // --dtype, else its first floating output.
    DType Ty = Cfg.ComputeDType.value_or(DType::Float);
    if (NC.QuantizedMath != DType::Undefined)
      Ty = NC.QuantizedMath;
    else if (!Cfg.ComputeDType)
      for (const Value *V : NC.N->Outputs)
        if (V && isFloatingPoint(V->Elem)) {
          Ty = V->Elem;
          break;
        }
    NR.Fwd = placeNode(NC, false, D, Ty, Cfg, &Memos[Thread]);
    if (NC.NeedsBackward)
      NR.Bwd = placeNode(NC, true, D, Ty, Cfg, &Memos[Thread]);
    NR.Fwd.Type = NR.Bwd.Type = Ty;
  });
  for (const NodeCost &NC : C->Nodes) {
    const NodeRoofline &NR = R.Nodes[&NC - C->Nodes.data()];
    DType Ty = NR.Fwd.Type;
    if (!D.peak(Ty) && !(Ty == DType::Float && Cfg.TF32 && D.Tf32Flops > 0))
      Fallbacks.insert(Ty);
    double K = NC.multiplier();
    MatrixFlopsByType[uint8_t(Ty)] +=
        2 * (NC.Fwd.Macs + (NC.NeedsBackward ? NC.Bwd.Macs : 0)) * K;
    R.FwdSeconds += NR.Fwd.Seconds * K;
    R.BwdSeconds += NR.Bwd.Seconds * K;
    R.FwdLaunches += NR.Fwd.Launches * K;
    R.BwdLaunches += NR.Bwd.Launches * K;
    for (const PlacedPhase *P : {&NR.Fwd, &NR.Bwd})
      if (P->B == Bound::Memory)
        R.MemoryBoundSeconds += P->Seconds * K;
    // Recomputation replays the forward phases TrainingStep marked.
    if (T->Recomputed[&NC - C->Nodes.data()]) {
      R.RecomputeSeconds += NR.Fwd.Seconds * K;
      R.RecomputeLaunches += NR.Fwd.Launches * K;
    }
  }
  R.StepType = Cfg.ComputeDType.value_or(DType::Float);
  if (!Cfg.ComputeDType) {
    double Most = 0;
    for (size_t Ty = 0; Ty < MatrixFlopsByType.size(); ++Ty)
      if (MatrixFlopsByType[Ty] > Most) {
        Most = MatrixFlopsByType[Ty];
        R.StepType = DType(Ty);
      }
  }
  R.MatrixPeak = R.StepType == DType::Float && Cfg.TF32 && D.Tf32Flops > 0
                     ? D.Tf32Flops
                     : D.matrixPeak(R.StepType);
  if (R.VectorPeak <= 0)
    R.VectorPeak = R.MatrixPeak; // a device with no fp32 figure
  R.RidgePoint = R.MatrixPeak / R.Bandwidth;
  // The optimizer: one fused multi-tensor update, streaming its bytes.
  // fp32 master weights and state: vector work at fp32.
  PhaseTime Opt = placeOnDevice(T->Optimizer, D, DType::Float, Cfg);
  R.OptimizerSeconds = Opt.Seconds;
  R.OptimizerLaunches = Opt.Launches;
  if (Opt.B == Bound::Memory)
    R.MemoryBoundSeconds += Opt.Seconds;
  double Step = R.stepSeconds();
  R.MFU = Step > 0 && R.MatrixPeak > 0 ? (C->Fwd.Flops + C->Bwd.Flops) / Step / R.MatrixPeak : 0;
  for (DType Ty : Fallbacks)
    AM.diags().warn(M.Path, llvm::formatv("device {0} lists no {1} peak; ops in {1} "
                                          "are timed at its vector rate",
                                          D.Name, dtypeName(Ty)));
  return R;
}
