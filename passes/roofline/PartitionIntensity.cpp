//===- PartitionIntensity.cpp - "print<partition>": which split suits an op ---===//
//
// laws.md, "Intensity relative to a link": the roofline with the link in
// place of memory. Per op, for one training step at the model's batch:
//   data parallel: the op's weights' gradients are all-reduced,
//     I_dp = (fwd + bwd FLOPs) / (2 x gradient bytes)        (ring, large n)
//   tensor parallel: the op's output is all-reduced forward and its
//     gradient backward,
//     I_tp = (fwd + bwd FLOPs) / (2 x 2 x output bytes)
// and each is compared with its link's ridge point pi / beta_link
// (inter-node link for data parallelism, intra-node for tensor). An op whose
// intensity exceeds the link's ridge point hides that communication behind
// its compute; the split with the higher margin suits it. Convolutions have
// high I_dp (much compute per gradient byte); large fully-connected layers
// have high I_tp (large weights, small activations).
//
//===----------------------------------------------------------------------===//
#include "passes/cost/CostModel.h"
#include "passes/roofline/Roofline.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <map>

using namespace ridge;
using llvm::formatv;

namespace {

struct Row {
  double Flops = 0, GradBytes = 0, ActBytes = 0;
  size_t Count = 0;
};

std::string intensityText(double Flops, double Bytes) {
  if (Bytes <= 0)
    return "inf";
  return formatv("{0:F1}", Flops / Bytes).str();
}

/// "dp", "tp" or "-" (no weights: nothing to split by either).
const char *verdict(const Row &R, double RidgeDP, double RidgeTP) {
  if (R.GradBytes <= 0)
    return "-";
  double MarginDP = (R.Flops / (2 * R.GradBytes)) / RidgeDP;
  double MarginTP = R.ActBytes > 0 ? (R.Flops / (4 * R.ActBytes)) / RidgeTP : INFINITY;
  return MarginDP >= MarginTP ? "dp" : "tp";
}

} // namespace

llvm::Error PrintPartitionPass::run(Model &M, AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  const Config &Cfg = AM.config();
  const Device &D = *Cfg.Dev;
  std::optional<double> FB = floatBytes(Cfg);
  DType T = Cfg.ComputeDType.value_or(DType::Float);
  double Pi = D.matrixPeak(T);
  auto LinkRidge = [&](const LinkSpec &L, double Eff) {
    return L.present() ? Pi / (L.Bandwidth * Eff) : INFINITY;
  };
  double RidgeDP = LinkRidge(D.InterNode.present() ? D.InterNode : D.IntraNode,
                             D.InterNode.present() ? D.EffInterNode : D.EffIntraNode);
  double RidgeTP = LinkRidge(D.IntraNode.present() ? D.IntraNode : D.InterNode,
                             D.IntraNode.present() ? D.EffIntraNode : D.EffInterNode);
  llvm::raw_ostream &OS = *Cfg.Out;
  OS << formatv("partition intensity on {0} ({1} peak {2:e} FLOP/s): data parallel over "
                "{3} (ridge {4:F1} FLOP/B), tensor parallel over {5} (ridge {6:F1} FLOP/B)\n",
                D.Name, dtypeName(T), Pi,
                D.InterNode.present() ? D.InterNode.Name : D.IntraNode.Name, RidgeDP,
                D.IntraNode.present() ? D.IntraNode.Name : D.InterNode.Name, RidgeTP);
  std::map<std::string, Row> ByType;
  for (const NodeCost &NC : C->Nodes) {
    if (!NC.Modeled || NC.multiplier() == 0)
      continue;
    Row R;
    R.Count = 1;
    R.Flops = (NC.Fwd.Flops + NC.Bwd.Flops) * NC.multiplier();
    for (const Value *In : NC.N->Inputs)
      if (In && C->Trainable.count(In))
        R.GradBytes += valueBytes(In, FB);
    for (const Value *Out : NC.N->Outputs)
      if (Out && isFloatingPoint(Out->Elem))
        R.ActBytes += valueBytes(Out, FB) * NC.multiplier();
    if (R.GradBytes > 0)
      OS << formatv("partition \"{0}\" {1}: flops={2:e} grad_bytes={3:e} I_dp={4} "
                    "act_bytes={5:e} I_tp={6} suits={7}\n",
                    NC.N->Name, NC.N->OpType, R.Flops, R.GradBytes,
                    intensityText(R.Flops, 2 * R.GradBytes), R.ActBytes,
                    intensityText(R.Flops, 4 * R.ActBytes), verdict(R, RidgeDP, RidgeTP));
    Row &T = ByType[NC.N->OpType.str()];
    T.Count += 1;
    T.Flops += R.Flops;
    T.GradBytes += R.GradBytes;
    T.ActBytes += R.GradBytes > 0 ? R.ActBytes : 0;
  }
  for (const auto &[Op, R] : ByType)
    if (R.GradBytes > 0)
      OS << formatv("partition type {0}: nodes={1} flops={2:e} I_dp={3} I_tp={4} suits={5}\n",
                    Op, R.Count, R.Flops, intensityText(R.Flops, 2 * R.GradBytes),
                    intensityText(R.Flops, 4 * R.ActBytes), verdict(R, RidgeDP, RidgeTP));
  return llvm::Error::success();
}
