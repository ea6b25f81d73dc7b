//===- Recurrent.cpp - Shape rules: RNN, GRU, LSTM ------------------------===//
#include "analyzer/shapes/Rules.h"

namespace ridge::shapes {

void ruleRNN(Ctx &C) {
  DType T = C.elem(0);
  for (unsigned O = 0; O < C.numOuts(); ++O)
    C.setType(O, T);
  const Shape *X = C.shape(0);
  if (!X || X->rank() != 3)
    return;
  bool Layout1 = C.N.attrInt("layout", 0) != 0;
  Dim Seq = X->Dims[Layout1 ? 1 : 0], Batch = X->Dims[Layout1 ? 0 : 1];
  Dim NumDir = Dim::known(C.N.attrString("direction", "forward") == "bidirectional" ? 2 : 1);
  Dim Hidden;
  if (const Attribute *H = C.N.attr("hidden_size"))
    Hidden = Dim::known(H->I);
  else if (const Shape *R = C.shape(2); R && R->rank() == 3)
    Hidden = R->Dims[2];
  if (Layout1)
    C.setDims(0, T, {Batch, Seq, NumDir, Hidden});
  else
    C.setDims(0, T, {Seq, NumDir, Batch, Hidden});
  for (unsigned O = 1; O < C.numOuts() && O < 3; ++O) {
    if (Layout1)
      C.setDims(O, T, {Batch, NumDir, Hidden});
    else
      C.setDims(O, T, {NumDir, Batch, Hidden});
  }
}

} // namespace ridge::shapes
