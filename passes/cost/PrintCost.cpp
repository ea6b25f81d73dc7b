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

llvm::Error PrintCostPass::run(Model &M, AnalysisManager &AM) {
  auto R = AM.getResult<CostAnalysis>();
  if (!R)
    return R.takeError();
  llvm::raw_ostream &OS = *AM.config().Out;
  for (const NodeCost &NC : R->Nodes) {
    OS << "cost \"" << NC.N->Name << "\" "
       << NC.N->qualifiedOpType() << ":";
    if (!NC.Modeled) {
      OS << " unmodeled (" << NC.Unmodeled << ")\n";
      continue;
    }
    OS << " fwd_flops=" << exactNumber(NC.Fwd.Flops)
       << " macs=" << exactNumber(NC.Fwd.Macs)
       << " transc=" << exactNumber(NC.Fwd.Transcendentals)
       << " fwd_bytes=" << exactNumber(NC.Fwd.Bytes);
    if (NC.NeedsBackward) {
      double Saved = nodeSavedBytes(NC, *R, floatBytes(AM.config()));
      OS << " bwd_flops=" << exactNumber(NC.Bwd.Flops)
         << " bwd_macs=" << exactNumber(NC.Bwd.Macs)
         << " bwd_transc=" << exactNumber(NC.Bwd.Transcendentals)
         << " bwd_bytes=" << exactNumber(NC.Bwd.Bytes)
         << " saved=" << exactNumber(Saved);
    } else {
      OS << " no-backward";
    }
    if (NC.Multiplier != 1)
      OS << " x" << exactNumber(NC.Multiplier);
    OS << "\n";
  }
  OS << "total: fwd_flops=" << exactNumber(R->Fwd.Flops)
     << " macs=" << exactNumber(R->Fwd.Macs)
     << " transc=" << exactNumber(R->Fwd.Transcendentals)
     << " fwd_bytes=" << exactNumber(R->Fwd.Bytes)
     << " bwd_flops=" << exactNumber(R->Bwd.Flops)
     << " bwd_macs=" << exactNumber(R->Bwd.Macs)
     << " bwd_transc=" << exactNumber(R->Bwd.Transcendentals)
     << " bwd_bytes=" << exactNumber(R->Bwd.Bytes)
     << " saved=" << exactNumber(R->SavedActivationBytes) << "\n";
  OS << "params: trainable=" << exactNumber(R->TrainableParams)
     << " frozen=" << exactNumber(R->FrozenInitElements);
  if (R->NodeParamTensors) // part of trainable: weights computed from constants
    OS << " from_nodes=" << exactNumber(R->NodeParams) << " in " << R->NodeParamTensors
       << " tensor(s)";
  OS << "\n";
  OS << "coverage: " << R->ModeledNodes << " of "
     << R->ModeledNodes + R->UnmodeledNodes << " nodes modeled\n";
  for (const auto &[What, Count] : R->UnmodeledOps)
    OS << "unmodeled: " << What << " x" << Count << "\n";
  return llvm::Error::success();
}
