//===- PrintCost.cpp - "print<cost>": one line per node, then totals ------===//
//
//   cost "fc1" Gemm: fwd_flops=.. macs=.. transc=.. fwd_bytes=.. bwd_flops=..
//        bwd_macs=.. bwd_transc=.. bwd_bytes=.. saved=..
//
// Exact integers, topological order: what the lit tests CHECK next to the
// formula each number comes from.
//
//===----------------------------------------------------------------------===//
#include "passes/cost/CostModel.h"
#include "analyzer/Format.h"

using namespace ridge;

namespace {

std::string text(const sym::Count &C) {
  return C.isNumber() ? exactNumber(C.number()) : C.str();
}

void printPhases(const PhaseCount &F, const PhaseCount *B, const sym::Count &Saved,
                 llvm::raw_ostream &OS) {
  OS << " fwd_flops=" << text(F.Flops) << " macs=" << text(F.Macs)
     << " transc=" << text(F.Transcendentals) << " fwd_bytes=" << text(F.Bytes);
  if (!B) {
    OS << " no-backward";
    return;
  }
  OS << " bwd_flops=" << text(B->Flops) << " bwd_macs=" << text(B->Macs)
     << " bwd_transc=" << text(B->Transcendentals) << " bwd_bytes=" << text(B->Bytes)
     << " saved=" << text(Saved);
}

} // namespace

llvm::Error PrintCostPass::run(Model &M, AnalysisManager &AM) {
  auto R = AM.getResult<CostAnalysis>();
  if (!R)
    return R.takeError();
  llvm::raw_ostream &OS = *AM.config().Out;
  std::optional<double> FloatBytes = floatBytes(AM.config());
  for (const NodeCost &NC : R->Nodes) {
    OS << "cost \"" << NC.N->Name << "\" "
       << NC.N->qualifiedOpType() << ":";
    if (!NC.Modeled) {
      OS << " unmodeled (" << NC.unmodeled() << ")\n";
      continue;
    }
    PhaseCount F = NC.fwdCounts(), B = NC.bwdCounts();
    printPhases(F, NC.NeedsBackward ? &B : nullptr, nodeSavedCount(NC, *R, FloatBytes), OS);
    if (NC.multiplier() != 1)
      OS << " x" << exactNumber(NC.multiplier());
    OS << "\n";
  }
  OS << "total:";
  PhaseCount TF = R->Sym ? R->Sym->Fwd : countsOf(R->Fwd);
  PhaseCount TB = R->Sym ? R->Sym->Bwd : countsOf(R->Bwd);
  printPhases(TF, &TB,
              R->Sym ? R->Sym->SavedActivationBytes : sym::Count(R->SavedActivationBytes), OS);
  OS << "\n";
  OS << "params: trainable=" << exactNumber(R->TrainableParams)
     << " frozen=" << exactNumber(R->FrozenInitElements);
  if (R->NodeParamTensors) // part of trainable: weights computed from constants
    OS << " from_nodes=" << exactNumber(R->NodeParams) << " in " << R->NodeParamTensors
       << " tensor(s)";
  OS << "\n";
  OS << "coverage: " << R->ModeledNodes << " of "
     << R->ModeledNodes + R->UnmodeledNodes << " nodes modeled";
  if (R->Sym)
    OS << " (" << R->Sym->Nodes << " as formulas)";
  OS << "\n";
  for (const auto &[What, Count] : R->UnmodeledOps)
    OS << "unmodeled: " << What << " x" << Count << "\n";
  return llvm::Error::success();
}
