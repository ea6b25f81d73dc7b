//===- Microsoft.cpp - Shape rules: com.microsoft contrib ops -------------===//
#include "analyzer/shapes/Rules.h"
#include <algorithm>

namespace ridge::shapes {

void ruleMsBiasGelu(Ctx &C) { broadcastRule(C, 0, C.elem(0)); }

/// FusedMatMul: MatMul with the last two dims of A and/or B transposed.
void ruleMsFusedMatMul(Ctx &C) {
  DType T = C.elem(0);
  const Shape *A = C.shape(0), *B = C.shape(1);
  if (!A || !B || A->rank() < 2 || B->rank() < 2)
    return C.setType(0, T);
  Shape SA = *A, SB = *B;
  if (C.N.attrInt("transA", 0))
    std::swap(SA.Dims[SA.rank() - 1], SA.Dims[SA.rank() - 2]);
  if (C.N.attrInt("transB", 0))
    std::swap(SB.Dims[SB.rank() - 1], SB.Dims[SB.rank() - 2]);
  Shape Out;
  if (matmulShape(SA, SB, Out))
    C.set(0, T, std::move(Out));
  else
    C.setType(0, T);
}

/// MatMulNBits: A [..., K] times a packed [K, N] weight.
void ruleMsMatMulNBits(Ctx &C) {
  DType T = C.elem(0);
  const Shape *A = C.shape(0);
  const Attribute *N = C.N.attr("N");
  if (!A || A->rank() < 1 || !N)
    return C.setType(0, T);
  Shape Out = *A;
  Out.Dims.back() = Dim::known(N->I);
  C.set(0, T, std::move(Out));
}

/// GatherBlockQuantized(data, indices, scales[, zero_points]): Gather on the
/// dequantized data, of the scales' type. uint8 data holds 8/bits values a
/// byte along quantize_axis (default 1), which the output unpacks; int4 and
/// uint4 data hold one value an element. Output: data dims before
/// gather_axis (default 0), the indices' dims, the dims after.
void ruleMsGatherBlockQuantized(Ctx &C) {
  DType T = C.elem(2);
  const Shape *D = C.shape(0), *I = C.shape(1);
  int64_t Rank = D ? int64_t(D->rank()) : 0;
  int64_t G = C.N.attrInt("gather_axis", 0), Q = C.N.attrInt("quantize_axis", 1);
  int64_t Bits = C.N.attrInt("bits", 4);
  if (G < 0)
    G += Rank;
  if (Q < 0)
    Q += Rank;
  if (!D || !I || G < 0 || G >= Rank || Q < 0 || Q >= Rank || Bits <= 0 || Bits > 8 ||
      8 % Bits)
    return C.setType(0, T);
  Shape Unpacked = *D;
  if (C.elem(0) == DType::UInt8 && Bits < 8)
    Unpacked.Dims[Q] = mulDim(D->Dims[Q], 8 / Bits);
  Shape Out;
  for (int64_t K = 0; K < G; ++K)
    Out.Dims.push_back(Unpacked.Dims[K]);
  for (const Dim &X : I->Dims)
    Out.Dims.push_back(X);
  for (int64_t K = G + 1; K < Rank; ++K)
    Out.Dims.push_back(Unpacked.Dims[K]);
  C.set(0, T, std::move(Out));
}

/// SkipLayerNormalization, SkipSimplifiedLayerNormalization: output and the
/// input+skip+bias sum (output 3) have the input's shape; the optional mean
/// and inv_std_var (outputs 1, 2) hold one f32 per row of the last axis,
/// [..., 1] (the contrib op doc: float statistics).
void ruleMsSkipLayerNorm(Ctx &C) {
  C.copy(0, 0);
  const Shape *X = C.shape(0);
  for (unsigned O = 1; O < 3 && O < C.numOuts(); ++O) {
    if (!X || X->rank() == 0) {
      C.setType(O, DType::Float);
      continue;
    }
    Shape S = *X;
    S.Dims.back() = Dim::known(1);
    C.set(O, DType::Float, S);
  }
  if (C.numOuts() > 3)
    C.copy(3, 0);
}

/// Attention (com.microsoft): input [B, S, hidden] projected by weights
/// [hidden, 3 * hidden] (or qkv_hidden_sizes).
void ruleMsAttention(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *W = C.shape(1);
  if (!X || X->rank() != 3)
    return C.setType(0, T);
  Dim Hv;
  if (auto Sizes = C.N.attrInts("qkv_hidden_sizes"); Sizes && Sizes->size() == 3)
    Hv = Dim::known((*Sizes)[2]);
  else if (W && W->rank() == 2)
    Hv = divDim(W->Dims[1], 3);
  C.setDims(0, T, {X->Dims[0], X->Dims[1], Hv});
}

/// MultiHeadAttention, GroupQueryAttention: output [B, S, v_hidden].
void ruleMsMultiHeadAttention(Ctx &C) {
  DType T = C.elem(0);
  const Shape *Q = C.shape(0), *V = C.shape(2);
  if (!Q || Q->rank() != 3)
    return C.setType(0, T);
  Dim Hv;
  int64_t NumHeads = C.N.attrInt("num_heads", 0);
  if (V && V->rank() == 3) {
    if (C.N.OpType == "GroupQueryAttention") {
      int64_t KvHeads = C.N.attrInt("kv_num_heads", 0);
      Dim Head = KvHeads > 0 ? divDim(V->Dims[2], KvHeads) : Dim{};
      Hv = NumHeads > 0 ? mulDim(Head, NumHeads) : Dim{};
    } else {
      Hv = V->Dims[2];
    }
  } else if (V && V->rank() == 4 && NumHeads > 0) {
    Hv = mulDim(V->Dims[3], NumHeads);
  } else if (!C.has(1) && !C.has(2) && C.N.OpType == "GroupQueryAttention") {
    // Packed QKV: hidden = (num_heads + 2 * kv_num_heads) * head.
    int64_t KvHeads = C.N.attrInt("kv_num_heads", 0);
    Dim Head = divDim(Q->Dims[2], NumHeads + 2 * KvHeads);
    Hv = mulDim(Head, NumHeads);
  } else if (C.N.OpType == "MultiHeadAttention" && !C.has(2)) {
    Hv = Dim{};
  } else {
    Hv = Q->Dims[2];
  }
  C.setDims(0, T, {Q->Dims[0], Q->Dims[1], Hv});
}

} // namespace ridge::shapes
