//===- Enumerate.cpp - The planner: the configurations to search ----------===//
#include "passes/plan/PlannerImpl.h"

using namespace ridge;

namespace ridge::plan {

std::vector<unsigned> divisors(unsigned N) {
  std::vector<unsigned> D;
  for (unsigned I = 1; I <= N; ++I)
    if (N % I == 0)
      D.push_back(I);
  return D;
}

size_t Planner::kernelPositions() const {
  // A transcendental-only op (Tanh, Exp) or a copy runs a kernel too.
  size_t N = 0;
  for (const Position &X : Pos) {
    const PolyPhase &F = fwd(X);
    N += F.Flops.at(1) > 0 || F.Transc.at(1) > 0 || F.Bytes.at(1) > 0;
  }
  return N;
}

std::vector<PlanConfig> Planner::enumerate(unsigned N, const PlanOptions &Opts) const {
  std::vector<PlanConfig> Out;
  unsigned MaxTP = Opts.MaxTP ? Opts.MaxTP : K;
  size_t Work = kernelPositions();
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
          // Megatron-LM's interleaved schedule needs the layers to divide
          // into p * v chunks (a stack of identical layers: StackLayers).
          if (!Opts.Interleave && V > 1 && StackLayers && StackLayers % (P * V))
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

} // namespace ridge::plan
