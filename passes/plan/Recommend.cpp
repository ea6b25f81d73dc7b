//===- Recommend.cpp - The planner: search and recommendation -------------===//
#include "passes/plan/PlannerImpl.h"
#include <chrono>

using namespace ridge;
using namespace ridge::plan;

namespace ridge::plan {

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
  if (NumMain == 0 && Opts.PP) {
    size_t Stages = std::max<size_t>(1, kernelPositions());
    if (*Opts.PP > Stages)
      return usageError(formatv("plan: --pp {0} asks for more pipeline stages than the graph's "
                                "{1} operation(s) that run a kernel (a stage holds at least "
                                "one)",
                                *Opts.PP, Stages));
  }
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
        R.WeightSplits.emplace_back(Pos[P].N->Name.str(), weightSplitName(K));
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

} // namespace ridge::plan

llvm::Expected<PlanResult> ridge::planParallelism(const BatchLoader &Load, const Config &Cfg,
                                                  const PlanOptions &Opts,
                                                  DiagnosticEngine &Diags) {
  if (!Cfg.Dev)
    return usageError("plan: no device");
  if (Opts.Devices == 0)
    return usageError("plan: --devices must be at least 1");
  if (Opts.Recomp == Config::Recompute::Cheap)
    return usageError("plan: --recompute cheap is analyze's; the plan searches none, "
                      "selective (Megatron-LM's) and full, which the engines run");
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
