//===- Training.cpp - Shape rules: losses, optimizers, Gradient -----------===//
#include "analyzer/shapes/Rules.h"

namespace ridge::shapes {

/// SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss.
void ruleLoss(Ctx &C) {
  DType T = C.elem(0);
  std::string Reduction = C.N.attrString("reduction", "mean");
  if (Reduction == "none")
    C.copy(0, 1, T);
  else
    C.setDims(0, T, {});
  if (C.numOuts() > 1)
    C.copy(1, 0);
}

/// ai.onnx.preview.training Adagrad, Adam, Momentum: inputs R, T, then K
/// groups of n tensors (X, G, states...); outputs the groups but G.
void ruleOptimizer(Ctx &C) {
  size_t K = C.N.OpType == "Adam" ? 4 : 3;
  size_t NIn = C.N.Inputs.size();
  if (NIn < 2 || (NIn - 2) % K)
    return;
  size_t N = (NIn - 2) / K;
  if (C.numOuts() != N * (K - 1))
    return;
  for (size_t O = 0; O < C.numOuts(); ++O) {
    size_t Group = O / N, Idx = O % N;
    size_t InGroup = Group == 0 ? 0 : Group + 1;
    C.copy(O, 2 + InGroup * N + Idx);
  }
}

/// ai.onnx.preview.training Gradient: d(y)/d(xs[i]) has xs[i]'s type.
void ruleGradient(Ctx &C) {
  const Attribute *Xs = C.N.attr("xs");
  if (!Xs)
    return;
  for (size_t O = 0; O < C.numOuts() && O < Xs->strings().size(); ++O)
    if (Value *V = C.N.Parent ? C.N.Parent->lookup(Xs->strings()[O]) : nullptr) {
      C.setType(O, V->Elem);
      if (V->Shp)
        C.set(O, V->Elem, *V->Shp);
    }
}

} // namespace ridge::shapes
