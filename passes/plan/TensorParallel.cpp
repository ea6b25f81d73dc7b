//===- TensorParallel.cpp - The planner: tensor-parallel plans per degree ---===//
#include "passes/plan/PlannerImpl.h"

using namespace ridge;

namespace ridge::plan {

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
  for (size_t I = 0; I < ParamVal.size(); ++I) {
    bool Split = !TP.Sharding.SplitParams.empty() && TP.Sharding.SplitParams.count(ParamVal[I]);
    if (Split)
      TP.SplitParams[ParamPos[I]] += ParamElems[I];
    double &Max = Split ? TP.MaxSplitElems : TP.MaxOwnElems;
    Max = std::max(Max, ParamElems[I]);
  }
  TP.SplitU8.resize(Pos.size());
  TP.PreOwn.assign(Pos.size() + 1, 0);
  TP.PreSplit.assign(Pos.size() + 1, 0);
  ExactSum XOwn, XSplit;
  TP.SlotOf.resize(Pos.size());
  std::vector<uint8_t> SlotSeen(4 * ClassRep.size(), 0);
  for (size_t P = 0; P < Pos.size(); ++P) {
    TP.SplitU8[P] = TP.Sharding.Split[P];
    TP.AnySplit |= TP.SplitU8[P];
    // 4 class + 0 (not split), 1 (a column-split weight product), 2 (row),
    // 3 (split otherwise): the kernel model splits a product's N, K or batch.
    WeightSplitKind W = TP.Sharding.WeightSplit[P];
    uint32_t Kind = !TP.SplitU8[P]                  ? 0
                    : W == WeightSplitKind::Col     ? 1
                    : W == WeightSplitKind::Row     ? 2
                                                    : 3;
    uint32_t Slot = 4 * ClassOf[P] + Kind;
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
  // (None without frozen weights: most graphs, and no per-degree arrays.)
  if (!FrozenVal.empty()) {
    TP.PreFrozenOwn.assign(Pos.size() + 1, 0);
    TP.PreFrozenSplit.assign(Pos.size() + 1, 0);
    for (size_t I = 0; I < FrozenVal.size(); ++I)
      (TP.Sharding.SplitParams.count(FrozenVal[I]) ? TP.PreFrozenSplit
                                                   : TP.PreFrozenOwn)[FrozenPos[I] + 1] +=
          FrozenVal[I]->numElements().value_or(0);
    for (size_t P = 0; P < Pos.size(); ++P) {
      TP.PreFrozenOwn[P + 1] += TP.PreFrozenOwn[P];
      TP.PreFrozenSplit[P + 1] += TP.PreFrozenSplit[P];
    }
  }
  if (TP.ParamsExact)
    std::vector<double>().swap(TP.SplitParams);
  // Collectives of equal kind and bytes cost the same: each distinct one
  // gets an index (per tensor and kind, then by value).
  if (!CollCostOf) {
    CollCostIndex None;
    None.fill(UINT32_MAX);
    CollCostOf.emplace(*M1->Main, None);
  }
  const std::vector<TPCollective> &Colls = TP.Sharding.Collectives;
  TP.CollPos.reserve(Colls.size());
  TP.CollCost.reserve(Colls.size());
  for (size_t I = 0; I < Colls.size(); ++I) {
    const TPCollective &Col = Colls[I];
    // The tensor's Value some collectives ahead into the cache (a miss a
    // collective was a third of this function).
    if (I + 16 < Colls.size())
      __builtin_prefetch(Colls[I + 16].Tensor);
    const Value *T = Col.Tensor;
    uint32_t &Id = (*CollCostOf)[T][unsigned(Col.Kind)];
    if (Id == UINT32_MAX) {
      // Its size as a polynomial in the micro-batch.
      BatchPoly Bytes = bytesOf(T);
      auto [VIt, VNew] =
          CollCostIds.try_emplace({unsigned(Col.Kind), Bytes.C}, uint32_t(CollCosts.size()));
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

} // namespace ridge::plan
