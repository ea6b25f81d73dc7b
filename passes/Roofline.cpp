//===- Roofline.cpp - Place every node on the device's roofline -----------===//
#include "passes/Roofline.h"
#include "llvm/Support/FormatVariadic.h"
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

PhaseTime ridge::placePhase(const PhaseCost &P, double MatrixPeak, double VectorPeak,
                            double Bandwidth, double TranscRate, double Launch,
                            bool Sum) {
  PhaseTime T;
  double MatrixFlops = 2 * P.Macs;
  double VectorFlops = std::max(0.0, P.Flops - MatrixFlops);
  T.ComputeS = MatrixFlops / MatrixPeak + VectorFlops / VectorPeak;
  T.MemoryS = P.Bytes / Bandwidth;
  T.TranscS = TranscRate > 0 ? P.Transcendentals / TranscRate
                             : P.Transcendentals / VectorPeak;
  T.Intensity = P.Bytes > 0 ? P.Flops / P.Bytes : std::numeric_limits<double>::infinity();
  double PiEff = T.ComputeS > 0 ? P.Flops / T.ComputeS : MatrixPeak;
  T.Attainable = std::min(PiEff, Bandwidth * T.Intensity);
  double Work = Sum ? T.ComputeS + T.MemoryS + T.TranscS
                    : std::max({T.ComputeS, T.MemoryS, T.TranscS});
  if (Work <= 0)
    return T; // nothing runs: a view or metadata op launches no kernel
  T.B = T.ComputeS >= T.MemoryS && T.ComputeS >= T.TranscS ? Bound::Compute
        : T.MemoryS >= T.TranscS                             ? Bound::Memory
                                                             : Bound::Transcendental;
  if (Launch > Work)
    T.B = Bound::Launch;
  T.Seconds = Work + Launch;
  return T;
}

llvm::Expected<RooflineResult> RooflineAnalysis::run(Model &M, AnalysisManager &AM) {
  const Config &Cfg = AM.config();
  if (!Cfg.Dev)
    return usageError("roofline: no device selected");
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  auto T = AM.getResult<TrainingStepAnalysis>();
  if (!T)
    return T.takeError();
  const Device &D = *Cfg.Dev;
  RooflineResult R;
  R.Dev = &D;
  R.Bandwidth = D.MemBandwidth;
  R.VectorPeak = D.peak(DType::Float).value_or(0);
  std::set<DType> Fallbacks;
  // The matrix peak for a dtype; fp32 may run on TF32 tensor cores.
  auto MatrixPeakOf = [&](DType Ty) -> double {
    if (Ty == DType::Float && Cfg.TF32 && D.Tf32Flops > 0)
      return D.Tf32Flops;
    if (auto P = D.peak(Ty))
      return *P;
    Fallbacks.insert(Ty);
    return R.VectorPeak;
  };
  R.StepType = Cfg.ComputeDType.value_or(DType::Float);
  R.MatrixPeak = MatrixPeakOf(R.StepType);
  if (R.VectorPeak <= 0)
    R.VectorPeak = R.MatrixPeak; // a device with no fp32 figure (TPU files give one)
  R.RidgePoint = R.MatrixPeak / R.Bandwidth;
  double Beta = D.MemBandwidth * D.EffMemory;
  double Vector = R.VectorPeak * D.EffCompute;
  double Tau = D.TranscendentalsPerS * D.EffCompute;

  for (const NodeCost &NC : C->Nodes) {
    NodeRoofline NR;
    // The op's arithmetic type: --dtype, else its first floating output.
    NR.Type = Cfg.ComputeDType.value_or(DType::Float);
    if (!Cfg.ComputeDType)
      for (const Value *V : NC.N->Outputs)
        if (V && isFloatingPoint(V->Elem)) {
          NR.Type = V->Elem;
          break;
        }
    double Pi = MatrixPeakOf(NR.Type) * D.EffCompute;
    NR.Fwd = placePhase(NC.Fwd, Pi, Vector, Beta, Tau, D.LaunchOverhead, Cfg.SumTerms);
    if (NC.NeedsBackward)
      NR.Bwd = placePhase(NC.Bwd, Pi, Vector, Beta, Tau, D.LaunchOverhead, Cfg.SumTerms);
    double K = NC.Multiplier;
    R.FwdSeconds += NR.Fwd.Seconds * K;
    R.BwdSeconds += NR.Bwd.Seconds * K;
    for (const PhaseTime *P : {&NR.Fwd, &NR.Bwd})
      if (P->B == Bound::Memory)
        R.MemoryBoundSeconds += P->Seconds * K;
    // Recomputation replays the forward phases TrainingStep marked.
    if (T->Recomputed[&NC - C->Nodes.data()])
      R.RecomputeSeconds += NR.Fwd.Seconds * K;
    R.Nodes.push_back(NR);
  }
  // The optimizer: one fused multi-tensor update, streaming its bytes.
  PhaseTime Opt = placePhase(T->Optimizer, Vector, Vector, Beta, Tau, D.LaunchOverhead,
                             Cfg.SumTerms);
  R.OptimizerSeconds = Opt.Seconds;
  if (Opt.B == Bound::Memory)
    R.MemoryBoundSeconds += Opt.Seconds;
  double Step = R.stepSeconds();
  R.MFU = Step > 0 ? (C->Fwd.Flops + C->Bwd.Flops) / Step / R.MatrixPeak : 0;
  for (DType Ty : Fallbacks)
    AM.diags().warn(M.Path, llvm::formatv("device {0} lists no {1} peak; ops in {1} "
                                          "are timed at its fp32 rate",
                                          D.Name, dtypeName(Ty)));
  return R;
}
