//===- PrintRoofline.cpp - "print<roofline>": each phase on the roofline --===//
#include "analyzer/Format.h"
//
#include "analyzer/Format.h"
//   roofline "mm" MatMul f32: fwd I=99.0 P=9.9e+13 t=4.2e-05 bound=memory
#include "analyzer/Format.h"
//                             bwd I=... (absent when no backward)
#include "analyzer/Format.h"
//
#include "analyzer/Format.h"
//===----------------------------------------------------------------------===//
#include "analyzer/Format.h"
#include "passes/roofline/Roofline.h"
#include "analyzer/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>

using namespace ridge;

static void printPhase(llvm::raw_ostream &OS, const char *Name, const PhaseCost &C,
                       const PhaseTime &P) {
  double I = intensity(C);
  OS << ' ' << Name << " I=" << (std::isfinite(I) ? llvm::formatv("{0:F2}", I).str() : "inf")
     << llvm::formatv(" P={0:e} t={1:e} compute={2:e} memory={3:e} bound={4}",
                      attainable(C, P), P.Seconds, P.ComputeS, P.MemoryS, boundName(P.B));
}

llvm::Error PrintRooflinePass::run(Model &M, AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  auto R = AM.getResult<RooflineAnalysis>();
  if (!R)
    return R.takeError();
  llvm::raw_ostream &OS = *AM.config().Out;
  OS << llvm::formatv("device {0}: peak={1:e} vector={2:e} bandwidth={3:e} ridge={4:F2}\n",
                      R->Dev->Name, R->MatrixPeak, R->VectorPeak, R->Bandwidth,
                      R->RidgePoint);
  for (size_t I = 0; I < C->Nodes.size(); ++I) {
    const NodeCost &NC = C->Nodes[I];
    OS << "roofline \"" << NC.N->Name << "\" " << NC.N->OpType << ' '
       << dtypeName(R->Nodes[I].type()) << ':';
    printPhase(OS, "fwd", NC.Fwd, R->terms(*C, NC, false, AM.config()));
    if (NC.NeedsBackward)
      printPhase(OS, "bwd", NC.Bwd, R->terms(*C, NC, true, AM.config()));
    OS << '\n';
  }
  OS << llvm::formatv("step: fwd={0:e} bwd={1:e} recompute={2:e} optimizer={3:e} "
                      "total={4:e} memory_bound={5:e} mfu={6:F4} launches={7} "
                      "host_stall={8:e}\n",
                      R->FwdSeconds, R->BwdSeconds, R->RecomputeSeconds,
                      R->OptimizerSeconds, R->stepSeconds(), R->MemoryBoundSeconds, R->MFU,
                      exactNumber(R->launches()), R->hostStallSeconds());
  return llvm::Error::success();
}
