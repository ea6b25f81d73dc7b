//===- Linear.cpp - Shape rules: matrix products, Einsum, Attention -------===//
#include "analyzer/shapes/Rules.h"
#include <cctype>

namespace ridge::shapes {

bool matmulShape(const Shape &A, const Shape &B, Shape &Out) {
  if (A.rank() == 0 || B.rank() == 0)
    return false;
  Shape SA = A, SB = B;
  bool VecA = A.rank() == 1, VecB = B.rank() == 1;
  if (VecA)
    SA.Dims.insert(SA.Dims.begin(), Dim::known(1));
  if (VecB)
    SB.Dims.push_back(Dim::known(1));
  const Dim &KA = SA.Dims[SA.rank() - 1], &KB = SB.Dims[SB.rank() - 2];
  if (KA.isKnown() && KB.isKnown() && KA.extent() != KB.extent())
    return false;
  Shape BA, BB;
  BA.Dims.assign(SA.Dims.begin(), SA.Dims.end() - 2);
  BB.Dims.assign(SB.Dims.begin(), SB.Dims.end() - 2);
  if (!broadcastInto(BA, BB))
    return false;
  Out = std::move(BA);
  if (!VecA)
    Out.Dims.push_back(SA.Dims[SA.rank() - 2]);
  if (!VecB)
    Out.Dims.push_back(SB.Dims[SB.rank() - 1]);
  return true;
}

static void matmulRule(Ctx &C, unsigned IA, unsigned IB, DType T) {
  const Shape *A = C.shape(IA), *B = C.shape(IB);
  Shape Out;
  if (A && B && matmulShape(*A, *B, Out)) {
    C.set(0, T, std::move(Out));
    return;
  }
  C.setType(0, T);
  if (A && B && A->rank() > 0 && B->rank() > 0)
    C.invalid(llvm::formatv("operands {0} and {1} do not multiply (inner dims differ or the "
                            "batch dims do not broadcast)",
                            A->str(), B->str()));
}

void ruleMatMul(Ctx &C) { matmulRule(C, 0, 1, C.elem(0)); }
void ruleMatMulInteger(Ctx &C) { matmulRule(C, 0, 1, DType::Int32); }
void ruleQLinearMatMul(Ctx &C) {
  matmulRule(C, 0, 3, C.has(7) ? C.elem(7) : C.elem(0));
}

void ruleGemm(Ctx &C) {
  DType T = C.elem(0);
  const Shape *A = C.shape(0), *B = C.shape(1);
  if (!A || !B || A->rank() != 2 || B->rank() != 2) {
    C.setType(0, T);
    return;
  }
  bool TA = C.N.attrInt("transA", 0), TB = C.N.attrInt("transB", 0);
  const Dim &KA = A->Dims[TA ? 0 : 1], &KB = B->Dims[TB ? 1 : 0];
  if (KA.isKnown() && KB.isKnown() && KA.extent() != KB.extent()) {
    C.setType(0, T);
    C.invalid(llvm::formatv("A {0}{1} and B {2}{3}: inner dims {4} and {5} differ", A->str(),
                            TA ? " (transposed)" : "", B->str(), TB ? " (transposed)" : "",
                            KA.extent(), KB.extent()));
    return;
  }
  C.setDims(0, T, {A->Dims[TA ? 1 : 0], B->Dims[TB ? 0 : 1]});
}

/// Einsum of integer constants (no ellipsis): every assignment of the
/// letters, each operand's element multiplied, summed into the output's.
static void einsumValues(Ctx &C, ArrayRef<StringRef> Terms, StringRef Rhs, bool Explicit) {
  SmallVector<IVec, 2> Vals(Terms.size());
  SmallVector<SmallVector<int64_t, 4>, 2> Dims(Terms.size());
  int64_t Extent[128];
  std::fill(std::begin(Extent), std::end(Extent), -1);
  unsigned Uses[128] = {0};
  for (size_t I = 0; I < Terms.size(); ++I) {
    if (!shapedVals(C, I, Vals[I], Dims[I]) || Dims[I].size() != Terms[I].size())
      return;
    for (size_t P = 0; P < Terms[I].size(); ++P) {
      unsigned char Ch = Terms[I][P];
      int64_t D = Dims[I][P];
      if (Extent[Ch] < 0 || Extent[Ch] == 1)
        Extent[Ch] = D;
      else if (D != 1 && D != Extent[Ch])
        return;
      ++Uses[Ch];
    }
  }
  std::string OutLetters;
  if (Explicit)
    OutLetters = Rhs.str();
  else
    for (unsigned Ch = 0; Ch < 128; ++Ch)
      if (Uses[Ch] == 1)
        OutLetters += char(Ch);
  SmallVector<unsigned char, 8> All;
  for (unsigned Ch = 0; Ch < 128; ++Ch)
    if (Uses[Ch])
      All.push_back(Ch);
  size_t Work = 1, N = 1;
  for (unsigned char Ch : All)
    if (__builtin_mul_overflow(Work, size_t(Extent[Ch]), &Work) || Work > (size_t(1) << 20))
      return;
  SmallVector<int64_t, 4> OD;
  for (char Ch : OutLetters)
    OD.push_back(Extent[(unsigned char)Ch]);
  for (int64_t D : OD)
    N *= size_t(D);
  if (N > MaxValueElems || !Work)
    return;
  IVec Res(N, IV::known(0));
  int64_t At[128] = {0};
  SmallVector<int64_t, 4> Idx;
  for (size_t W = 0; W < Work; ++W) {
    size_t Rem = W;
    for (size_t L = All.size(); L-- > 0;) {
      At[All[L]] = int64_t(Rem % size_t(Extent[All[L]]));
      Rem /= size_t(Extent[All[L]]);
    }
    IV Prod = IV::known(1);
    for (size_t I = 0; I < Terms.size(); ++I) {
      Idx.clear();
      for (size_t P = 0; P < Terms[I].size(); ++P)
        Idx.push_back(Dims[I][P] == 1 ? 0 : At[(unsigned char)Terms[I][P]]);
      Prod = evalInt(BinOp::Mul, Prod, Vals[I][ravel(Idx, Dims[I])], false);
    }
    Idx.clear();
    for (char Ch : OutLetters)
      Idx.push_back(At[(unsigned char)Ch]);
    IV &Dst = Res[ravel(Idx, OD)];
    Dst = evalInt(BinOp::Add, Dst, Prod, false);
  }
  C.setVals(0, Res);
}

void ruleEinsum(Ctx &C) {
  DType T = C.elem(0);
  C.setType(0, T);
  std::string Eq;
  for (char Ch : C.N.attrString("equation", ""))
    if (Ch != ' ')
      Eq += Ch;
  StringRef E(Eq);
  auto [Lhs, Rhs] = E.split("->");
  bool Explicit = E.contains("->");
  SmallVector<StringRef, 4> Terms;
  Lhs.split(Terms, ',');
  if (Terms.size() != C.N.Inputs.size())
    return;
  Dim Letter[128];
  unsigned Count[128] = {0};
  Shape Ell;
  bool AnyEll = false;
  for (size_t I = 0; I < Terms.size(); ++I) {
    const Shape *S = C.shape(I);
    if (!S)
      return;
    StringRef Term = Terms[I];
    size_t EllPos = Term.find("...");
    size_t Letters = Term.size() - (EllPos == StringRef::npos ? 0 : 3);
    if (Letters > S->rank() || (EllPos == StringRef::npos && Letters != S->rank()))
      return;
    size_t EllRank = S->rank() - Letters;
    size_t Axis = 0;
    for (size_t P = 0; P < Term.size();) {
      if (P == EllPos) {
        Shape Part;
        Part.Dims.assign(S->Dims.begin() + Axis, S->Dims.begin() + Axis + EllRank);
        if (!AnyEll)
          Ell = Part;
        else if (!broadcastInto(Ell, Part))
          return;
        AnyEll = true;
        Axis += EllRank;
        P += 3;
        continue;
      }
      unsigned char Ch = Term[P++];
      if (!std::isalpha(Ch))
        return;
      const Dim &D = S->Dims[Axis++];
      if (Count[Ch] == 0) {
        Letter[Ch] = D;
      } else {
        if (Letter[Ch].isKnown() && D.isKnown() && Letter[Ch].extent() != D.extent() &&
            D.extent() != 1 && Letter[Ch].extent() != 1)
          return;
        Dim R;
        broadcastDim(Letter[Ch], D, R);
        Letter[Ch] = R;
      }
      ++Count[Ch];
    }
  }
  Shape Out;
  if (Explicit) {
    for (size_t P = 0; P < Rhs.size();) {
      if (Rhs.substr(P).starts_with("...")) {
        Out.Dims.append(Ell.Dims.begin(), Ell.Dims.end());
        P += 3;
        continue;
      }
      unsigned char Ch = Rhs[P++];
      if (!std::isalpha(Ch) || !Count[Ch])
        return;
      Out.Dims.push_back(Letter[Ch]);
    }
  } else {
    Out.Dims.append(Ell.Dims.begin(), Ell.Dims.end());
    for (unsigned Ch = 0; Ch < 128; ++Ch)
      if (Count[Ch] == 1)
        Out.Dims.push_back(Letter[Ch]);
  }
  C.set(0, T, Out);
  if (!AnyEll)
    einsumValues(C, Terms, Explicit ? Rhs : StringRef(), Explicit);
}

void ruleDet(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X || X->rank() < 2)
    return C.setType(0, T);
  Shape Out;
  Out.Dims.assign(X->Dims.begin(), X->Dims.end() - 2);
  C.set(0, T, Out);
}

/// Attention (opset 23): Q, K, V as [B, heads, seq, head] or [B, seq,
/// heads * head] with q_num_heads / kv_num_heads; optional past_key/value.
void ruleAttention(Ctx &C) {
  DType T = C.elem(0);
  for (unsigned O = 0; O < C.numOuts(); ++O)
    C.setType(O, T);
  const Shape *Q = C.shape(0), *K = C.shape(1), *V = C.shape(2);
  if (!Q || !K || !V || Q->rank() != K->rank() || Q->rank() != V->rank() ||
      (Q->rank() != 3 && Q->rank() != 4))
    return;
  bool Four = Q->rank() == 4;
  int64_t Hq = C.N.attrInt("q_num_heads", 0), Hkv = C.N.attrInt("kv_num_heads", 0);
  if (!Four && (Hq <= 0 || Hkv <= 0))
    return;
  Dim B = mergeDim(Q->Dims[0], K->Dims[0]);
  Dim HQ = Four ? Q->Dims[1] : Dim::known(Hq), HKV = Four ? K->Dims[1] : Dim::known(Hkv);
  Dim S = Q->Dims[Four ? 2 : 1], L = K->Dims[Four ? 2 : 1];
  Dim Dh = Four ? K->Dims[3] : divDim(K->Dims[2], Hkv);
  Dim Dv = Four ? V->Dims[3] : divDim(V->Dims[2], Hkv);
  if (Four)
    C.setDims(0, T, {B, HQ, S, Dv});
  else
    C.setDims(0, T, {B, S, mulDim(Dv, Hq)});
  Dim Total = L;
  if (C.has(4)) {
    const Shape *PK = C.shape(4);
    Total = PK && PK->rank() == 4 ? addDims(PK->Dims[2], L) : Dim{};
  }
  C.setDims(1, T, {B, HKV, Total, Dh});
  C.setDims(2, T, {B, HKV, Total, Dv});
  C.setDims(3, T, {B, HQ, S, Total});
}

} // namespace ridge::shapes
