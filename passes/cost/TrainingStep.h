//===- TrainingStep.h - Optimizer, memory footprint, recomputation -*- C++ -*-===//
//
// What a whole training step costs on top of the per-node forward and
// backward: the optimizer update, the memory a device holds (weights,
// gradients, optimizer state, saved activations), and what activation
// recomputation trades (memory for forward FLOPs).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_COST_TRAININGSTEP_H
#define RIDGE_PASSES_COST_TRAININGSTEP_H

#include "passes/cost/CostModel.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace ridge {

struct OptimizerCost {
  double FlopsPerParam = 0, TranscPerParam = 0;
  double StateBytesPerParam = 0; ///< fp32 state (momentum, Adam's m and v)
};
/// Per-parameter update cost of each optimizer; formulas in TrainingStep.cpp.
OptimizerCost optimizerCost(Config::Optimizer O);
const char *optimizerName(Config::Optimizer O);
const char *recomputeName(Config::Recompute R);

/// What activation recomputation keeps and replays (TrainingStep.cpp).
struct RecomputePlan {
  double ActivationBytes = 0;            ///< held after recomputation
  double ActivationBytesNoRecompute = 0;
  double RecomputeFlops = 0, RecomputeMacs = 0, RecomputeBytes = 0;
  size_t Checkpoints = 0;
  std::vector<size_t> Cuts;              ///< full: main-graph positions of checkpoints
  std::vector<const Value *> CutValues;  ///< full: the checkpointed tensors
  /// full: tensors every segment reads (rotary tables), held once.
  std::vector<const Value *> SideValues;
  std::vector<bool> Recomputed;          ///< per CostResult node
  std::vector<bool> KeptSaved;           ///< per CostResult node: its saved tensors are held
  /// selective: tensors the recomputed regions produce; no node keeps them.
  llvm::DenseSet<const Value *> Dropped;
  size_t Regions = 0;                    ///< selective: attention cores found
  /// With formula costs (CostResult::Sym): the sums as formulas in place of
  /// the numbers above (which then hold the numeric nodes' part only).
  struct Formulas {
    sym::Count ActivationBytes = 0, ActivationBytesNoRecompute = 0;
    sym::Count RecomputeFlops = 0, RecomputeMacs = 0, RecomputeBytes = 0;
    /// Non-empty: a choice of the policy depends on the binding (whether
    /// attention's scores outgrow q and k): it needs numbers.
    std::string Undecided;
  };
  Boxed<Formulas> Sym;
};
/// The main graph's activations (tensors computed from a graph input: not
/// parameters, not constants), each with the position that defines it (-1:
/// a graph input) and the last that needs it (the end for graph outputs and
/// values read inside subgraphs), in definition order; those read by no
/// later position are skipped. FloatOnly: floating-point tensors only.
/// OutputsToEnd = false: a graph output ends at its last reader too (what
/// full recomputation asks: the caller holds an output anyway, so it is
/// not a tensor a segment must keep for the next).
void forEachActivationRange(const Graph &G, bool FloatOnly,
                            llvm::function_ref<void(const Value *, long Def, long Last)> F,
                            bool OutputsToEnd = true);

RecomputePlan planRecompute(const Model &M, const CostResult &C, Config::Recompute Mode,
                            std::optional<double> FloatBytes);

/// A stack of repeated blocks between the cuts Cuts of G's main graph
/// (ascending positions, each a boundary before that position): the
/// shortest period K, in segments, of the op types of the segments between
/// the cuts, the first and last segments (an embedding, a head) left out of
/// the comparison and at least two repetitions required; 0 when there is
/// none (a CNN's stages). A transformer layer has two cuts where one tensor
/// carries the state (after each residual add): K = 2, and its layer
/// boundaries are Cuts[K - 1], Cuts[2K - 1], ...
size_t blockPeriod(const Graph &G, llvm::ArrayRef<size_t> Cuts);

struct TrainingStepResult {
  double Params = 0;
  // Bytes per parameter (ZeRO's accounting, Rajbhandari et al. 2020, sec. 3.1).
  double WeightBytes = 0;        ///< working weights at the compute dtype
  /// Of WeightBytes, the frozen tensors' (initializers no gradient reaches,
  /// --freeze): held, but without gradient, master copy or optimizer state.
  double FrozenWeightBytes = 0;
  double MasterWeightBytes = 0;  ///< fp32 copy under mixed precision
  double GradientBytes = 0;
  double OptimizerStateBytes = 0;
  double ActivationBytes = 0;    ///< after recomputation
  double ActivationBytesNoRecompute = 0;
  double totalBytes() const {
    return WeightBytes + MasterWeightBytes + GradientBytes + OptimizerStateBytes +
           ActivationBytes;
  }
  PhaseCost Optimizer;     ///< the update, whole model
  double RecomputeFlops = 0;
  double RecomputeMacs = 0;
  double RecomputeBytes = 0;
  size_t Checkpoints = 0;  ///< full recomputation: segment boundaries used
  /// Full recomputation: the checkpointed tensors, in order.
  std::vector<const Value *> CheckpointValues;
  /// Full recomputation: tensors a gradient flows through that every
  /// segment reads (rotary tables), held once beside the checkpoints.
  std::vector<const Value *> SideValues;
  /// Per CostResult node: is its forward replayed in the backward?
  std::vector<bool> Recomputed;
  /// With formula costs: activations and recomputation as formulas.
  Boxed<RecomputePlan::Formulas> Sym;
  double stepFlops(const CostResult &C) const {
    return C.Fwd.Flops + C.Bwd.Flops + RecomputeFlops + Optimizer.Flops;
  }
};

struct TrainingStepAnalysis {
  using Result = TrainingStepResult;
  static constexpr const char *Name = "training-step";
  static llvm::Expected<Result> run(Model &M, AnalysisManager &AM);
};

} // namespace ridge

#endif
