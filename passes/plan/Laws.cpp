//===- Laws.cpp - laws.md's collective and Amdahl formulas ---------------===//
#include "passes/plan/Planner.h"

using namespace ridge;

double ridge::collectiveSeconds(CollectiveKind K, double Bytes, unsigned N, double Bandwidth,
                                double Latency) {
  if (N <= 1 || Bytes <= 0)
    return 0;
  double Steps = N - 1;
  double Factor = Steps / N;
  if (K == CollectiveKind::AllReduce) {
    Factor *= 2; // reduce-scatter then all-gather
    Steps *= 2;
  }
  return Steps * Latency + Factor * Bytes / Bandwidth;
}

LinkUse ridge::linkFor(const Device &D, bool Inter) {
  const LinkSpec &L = Inter ? D.InterNode : D.IntraNode;
  const LinkSpec &Other = Inter ? D.IntraNode : D.InterNode;
  const LinkSpec &Use = L.present() ? L : Other;
  return {Use.Bandwidth * (Inter ? D.EffInterNode : D.EffIntraNode), Use.Latency};
}

unsigned ridge::ringMembersPerNode(unsigned Stride, unsigned Size, unsigned PerNode) {
  return Stride >= PerNode ? 1u : std::max(1u, std::min(Size, PerNode / Stride));
}

LinkUse ridge::ringLink(const Device &D, unsigned Stride, unsigned Size, unsigned PerNode) {
  bool Inter = Size > 1 && uint64_t(Stride) * Size > PerNode;
  LinkUse L = linkFor(D, Inter);
  if (!Inter)
    return L;
  L.Bandwidth *= ringMembersPerNode(Stride, Size, PerNode);
  if (D.IntraNode.present())
    L.Bandwidth = std::min(L.Bandwidth, linkFor(D, false).Bandwidth);
  return L;
}

double ridge::amdahlSpeedup(double P, double S) { return 1.0 / ((1.0 - P) + P / S); }
