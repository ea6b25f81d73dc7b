//===- CostRules.cpp - The per-op cost formulas behind OpCosts.def --------===//
//
// Defaults first (bytes = inputs read + outputs written; backward bytes =
// output gradients read + saved tensors read + input gradients written), each
// handler states only what differs, with its formula beside it.
//
//===----------------------------------------------------------------------===//
#include "passes/cost/CostModel.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>

using namespace ridge;

using sym::Count;
using sym::max;
using sym::min;

Count formulas::matmulMacs(Count Batch, Count M, Count N, Count K) {
  return Batch * M * N * K;
}

Count formulas::convMacs(Count BatchN, Count Cout, Count OutSpatial,
                         Count CinPerGroup, Count KernelSpatial) {
  return BatchN * Cout * OutSpatial * CinPerGroup * KernelSpatial;
}

double ridge::elementBytes(const Value *V, std::optional<double> FloatBytes) {
  return FloatBytes && isFloatingPoint(V->Elem) ? *FloatBytes : dtypeBytes(V->Elem);
}

double CostContext::elemBytes(const Value *V) const { return elementBytes(V, FloatBytes); }

Count CostContext::bytes(const Value *V) const { return V ? valueCount(V, FloatBytes) : Count(0); }

double ridge::valueBytes(const Value *V, std::optional<double> FloatBytes) {
  return V->numElements().value_or(0) * elementBytes(V, FloatBytes);
}

Count ridge::elementCount(const Value *V) {
  if (std::optional<double> N = V->numElements())
    return *N;
  if (!V->Shp)
    return Count::undecided("'" + V->Name.str() + "' has no known rank");
  // Every value of one (interned) symbolic shape has the same formula: it
  // is made once per shape on this thread and then copied (a cost rule asks
  // for several a node; making each anew was a tenth of a batch-free
  // analyze). The key holds the univariate symbol, which decides the
  // formula's form. Shapes and symbols are never freed, so a key is never
  // reused by another. An unknown result is not kept: its reason must be
  // noted in the scope of each rule that meets it.
  struct Entry {
    const Shape *S = nullptr;
    sym::ExprRef Poly = nullptr;
    Count N;
  };
  thread_local std::array<Entry, 32> Memo;
  const Shape *S = &*V->Shp;
  sym::ExprRef Poly = sym::UnivariateScope::current();
  Entry &E = Memo[(reinterpret_cast<uintptr_t>(S) >> 4) % Memo.size()];
  if (E.S == S && E.Poly == Poly)
    return E.N;
  // The known extents multiply as a number first: a formula is made only
  // of the symbolic dims (no constant Expr interned for each known one).
  double Known = 1;
  Count N = 1;
  for (const Dim &D : S->Dims) {
    if (!D.isDetermined())
      return Count::undecided("'" + V->Name.str() + "' has unknown shape " + S->str());
    if (D.isKnown())
      Known *= double(D.extent());
    else
      N *= Count::of(D.expr());
  }
  N = N * Known;
  if (!N.isUnknown())
    E = {S, Poly, N};
  return N;
}

Count ridge::determinedBytes(const Value *V, std::optional<double> FloatBytes) {
  if (V->hasKnownShape() || !V->Shp || !V->Shp->isDetermined())
    return valueBytes(V, FloatBytes);
  return valueCount(V, FloatBytes);
}

Count ridge::valueCount(const Value *V, std::optional<double> FloatBytes) {
  double Each = elementBytes(V, FloatBytes);
  // A known shape (every value of a bound graph) multiplies as numbers.
  if (std::optional<double> N = V->numElements())
    return *N * Each;
  return elementCount(V) * Each;
}

void NodeCost::keepSaved(const Value *V) {
  size_t Pos = 0;
  auto Find = [&](llvm::ArrayRef<Value *> Operands) {
    for (const Value *O : Operands) {
      if (O == V)
        return true;
      ++Pos;
    }
    return false;
  };
  if (!V || !N || !(Find(N->Inputs) || Find(N->Outputs)))
    return; // not an operand of N: nothing of N's to keep
  if (Pos < 32) {
    SavedBits |= uint32_t(1) << Pos;
    return;
  }
  llvm::SmallVector<const Value *, 2> &Far = rare().FarSaved;
  if (llvm::find(Far, V) == Far.end())
    Far.push_back(V);
}

llvm::SmallVector<const Value *, 4> NodeCost::saved() const {
  llvm::SmallVector<const Value *, 4> Out;
  if (!N)
    return Out;
  size_t Pos = 0;
  for (llvm::ArrayRef<Value *> Operands : {llvm::ArrayRef<Value *>(N->Inputs),
                                           llvm::ArrayRef<Value *>(N->Outputs)})
    for (const Value *V : Operands) {
      if (Pos < 32 && (SavedBits >> Pos & 1))
        Out.push_back(V);
      ++Pos;
    }
  if (R)
    Out.append(R->FarSaved.begin(), R->FarSaved.end());
  return Out;
}

Count ridge::nodeSavedCount(const NodeCost &NC, const CostResult &C,
                            std::optional<double> FloatBytes) {
  Count B = NC.savedCounts();
  for (const Value *V : NC.saved())
    if (C.isActivation(V))
      B += valueCount(V, FloatBytes);
  return B;
}

std::optional<double> ridge::floatBytes(const Config &Cfg) {
  if (Cfg.ComputeDType)
    return dtypeBytes(*Cfg.ComputeDType);
  return std::nullopt;
}

double ridge::nodeSavedBytes(const NodeCost &NC, const CostResult &C,
                             std::optional<double> FloatBytes) {
  double B = NC.savedBytes();
  for (const Value *V : NC.saved())
    if (C.isActivation(V))
      B += valueBytes(V, FloatBytes);
  return B;
}

namespace {

/// A dim as a count: its extent, or its formula when symbolic.
Count dimCount(const Dim &D) {
  if (D.isKnown())
    return double(D.extent());
  return Count::of(D.expr()); // unknown dims: requireShapes excludes them
}

/// What a backward reads. Unary rows: In (the input), Out (the output),
/// None. Binary rows, per input's gradient: Other (the other inputs), All
/// (every input), None.
enum class Save { None, In, Out, Other, All };

Count inBytes(const CostContext &C) {
  Count B = 0;
  for (const Value *V : C.N.Inputs)
    B += C.bytes(V);
  return B;
}

Count outBytes(const CostContext &C) {
  Count B = 0;
  for (const Value *V : C.N.Outputs)
    B += C.bytes(V);
  return B;
}

/// Output-gradient bytes: the dY of every floating-point output that carries
/// a gradient is read; only an output that some node reads or that is a graph
/// output carries one (LayerNormalization's unused Mean and InvStdDev do not).
Count gradOutBytes(const CostContext &C) {
  Count B = 0;
  for (const Value *V : C.N.Outputs)
    if (V && isFloatingPoint(V->Elem) && (!V->Users.empty() || V->IsGraphOutput))
      B += C.bytes(V);
  return B;
}

/// Input-gradient bytes: each input that needs a gradient gets one written.
Count gradInBytes(const CostContext &C) {
  Count B = 0;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I)
    if (C.needsGrad(I))
      B += C.bytes(C.N.Inputs[I]);
  return B;
}

Count savedValueBytes(const CostContext &C, const RuleCost &Out) {
  Count B = 0;
  for (const Value *V : Out.Saved)
    B += C.bytes(V);
  return B + Out.SavedBytes;
}

/// The backward's default memory traffic, after Saved is filled.
void defaultBwdBytes(const CostContext &C, RuleCost &Out) {
  Out.Bwd.Bytes = gradOutBytes(C) + savedValueBytes(C, Out) + gradInBytes(C);
}

void save(RuleCost &Out, const Value *V) {
  if (V && llvm::find(Out.Saved, V) == Out.Saved.end())
    Out.Saved.push_back(V);
}

Count outElems(const CostContext &C) { return C.elems(C.N.output(0)); }
Count inElems(const CostContext &C, unsigned I = 0) { return C.elems(C.N.input(I)); }

/// Every present input and output needs a known shape, except values
/// declared as sequences, maps, optionals or sparse tensors (NonTensor: no
/// dense shape to know). A value with no type information at all has an
/// unknown shape: the op is unmodeled, as the loader's warning says.
bool requireShapes(const CostContext &C, RuleCost &Out) {
  auto Check = [&](const Value *V, const char *What) {
    if (!V || V->hasKnownShape())
      return true;
    if (C.Symbolic && V->Shp &&
        llvm::all_of(V->Shp->Dims, [](const Dim &D) { return D.isDetermined(); }))
      return true;
    if (V->NonTensor)
      return true;
    Out.Unmodeled = llvm::formatv("{0} '{1}' has unknown shape {2}", What,
                                  V->Name, V->Shp ? V->Shp->str() : "(rank unknown)")
                        .str();
    return false;
  };
  for (const Value *V : C.N.Inputs)
    if (!Check(V, "input"))
      return false;
  for (const Value *V : C.N.Outputs)
    if (!Check(V, "output"))
      return false;
  return true;
}

void unmodeled(RuleCost &Out, const llvm::Twine &Why) { Out.Unmodeled = Why.str(); }

//===-------------------------- element-wise ----------------------------===//

void unaryRule(const CostContext &C, RuleCost &Out, Count F, Count T,
               Count BF, Count BT, Save S) {
  Count N = outElems(C);
  Out.Fwd.Flops = F * N;
  Out.Fwd.Transcendentals = T * N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  if (S == Save::In)
    save(Out, C.N.input(0));
  else if (S == Save::Out)
    save(Out, C.N.output(0));
  Out.Bwd.Flops = BF * N;
  Out.Bwd.Transcendentals = BT * N;
  defaultBwdBytes(C, Out);
}

/// Binary and variadic element-wise ops. The gradient of input 0 costs BFA
/// per output element and reads SA; that of input 1 costs BFB and reads SB
/// (dA = dY/B and dB = -dY*A/B^2 differ); variadic ops (Sum, Max, Min, Mean)
/// use A's values for every input. Each gradient of a broadcast input then
/// sums dY's product back to the input's shape: N - |input| adds.
void binaryRule(const CostContext &C, RuleCost &Out, Count F, Count T,
                Count BFA, Count BFB, Count BT, Save SA, Save SB) {
  Count N = outElems(C);
  unsigned Present = 0;
  for (const Value *V : C.N.Inputs)
    Present += V != nullptr;
  // One operation per input after the first. Every binary row requires
  // input 0 (applyRule checks it), so Present >= 1; only a variadic op (Sum,
  // Max, Min, Mean) may have one input, and that is a copy: no operation.
  Count Pairs = Present - 1;
  Out.Fwd.Flops = F * N * Pairs;
  Out.Fwd.Transcendentals = T * N * Pairs;
  if (C.N.OpType == "Mean" && Present > 1)
    Out.Fwd.Flops += N; // the divide by the input count
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  llvm::StringRef Op = C.N.OpType;
  bool Variadic = C.N.Domain.empty() &&
                  (Op == "Sum" || Op == "Max" || Op == "Min" || Op == "Mean");
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I) {
    const Value *V = C.N.Inputs[I];
    if (!V || !C.needsGrad(I))
      continue;
    bool UseA = I == 0 || Variadic;
    Count BF = UseA ? BFA : BFB;
    Save S = UseA ? SA : SB;
    // dIn_i = g(dY, ...) then summed back over the broadcast dims.
    Out.Bwd.Flops += BF * N + (N - C.elems(V));
    Out.Bwd.Transcendentals += BT * N;
    for (unsigned J = 0; J < C.N.Inputs.size(); ++J)
      if (S == Save::All || (S == Save::Other && J != I))
        save(Out, C.N.Inputs[J]);
  }
  defaultBwdBytes(C, Out);
}

/// Clip(x, min, max): min and max per element (2); backward a masked copy
/// of dY (1), reading x. The bounds are non-differentiable (NonDiff 0x6).
void clip(const CostContext &C, RuleCost &Out) {
  unaryRule(C, Out, 2, 0, 1, 0, Save::In);
}

void unaryNoGrad(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}

/// Comparisons and logic: one operation per output element.
void compareNoGrad(const CostContext &C, RuleCost &Out) { unaryNoGrad(C, Out); }

/// (De)quantize: scale, shift (zero point) and round/clamp per element.
void quantize(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = 3 * outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}

/// Where(c, a, b): one select per output element; each gradient is a select
/// of dY plus the reduction back to a broadcast input's shape.
void where(const CostContext &C, RuleCost &Out) {
  Count N = outElems(C);
  Out.Fwd.Flops = N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  for (unsigned I = 1; I < 3; ++I)
    if (C.needsGrad(I))
      Out.Bwd.Flops += N + (N - inElems(C, I));
  defaultBwdBytes(C, Out);
}

//===------------------- matrix products, convolutions ------------------===//

/// Forward MACs plus 2*MACs FLOPs; backward: dA = dY.B^T and dB = A^T.dY,
/// each as many MACs as the forward.
void productBackward(const CostContext &C, RuleCost &Out, Count Macs,
                     unsigned A, unsigned B) {
  if (C.needsGrad(A)) {
    Out.Bwd.Macs += Macs;
    save(Out, C.N.input(B));
  }
  if (C.needsGrad(B)) {
    Out.Bwd.Macs += Macs;
    save(Out, C.N.input(A));
  }
  Out.Bwd.Flops += 2 * Out.Bwd.Macs;
}

/// MatMul [..., M, K] x [..., K, N] (numpy semantics, batch dims broadcast,
/// 1-D operands promoted): MACs = batch * M * N * K, batch = out / (M * N).
void matmul(const CostContext &C, RuleCost &Out) {
  const Value *A = C.N.input(0), *B = C.N.input(1), *Y = C.N.output(0);
  const Shape &SA = *A->Shp, &SB = *B->Shp;
  if (SA.rank() == 0 || SB.rank() == 0)
    return unmodeled(Out, "MatMul of a scalar");
  Count K = dimCount(SA.Dims.back());
  Count M = SA.rank() >= 2 ? dimCount(SA.Dims[SA.rank() - 2]) : 1;
  Count N = SB.rank() >= 2 ? dimCount(SB.Dims.back()) : 1;
  if (C.N.OpType == "FusedMatMul") {
    if (C.N.attrInt("transA", 0) && SA.rank() >= 2)
      std::swap(M, K);
    if (C.N.attrInt("transB", 0) && SB.rank() >= 2)
      N = dimCount(SB.Dims[SB.rank() - 2]);
  }
  Count Batch = (M * N) > 0 ? C.elems(Y) / (M * N) : 0;
  Count Macs = formulas::matmulMacs(Batch, M, N, K);
  Out.Fwd.Macs = Macs;
  Out.Fwd.Flops = 2 * Macs;
  if (C.N.OpType == "FusedMatMul" && C.N.attrFloat("alpha", 1.0) != 1.0)
    Out.Fwd.Flops += C.elems(Y);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  productBackward(C, Out, Macs, 0, 1);
  // FusedMatMul's alpha: as Gemm's rule, dY is scaled by alpha once (one
  // multiply per output, |Y|), shared by dA and dB.
  if (C.N.OpType == "FusedMatMul" && C.N.attrFloat("alpha", 1.0) != 1.0 &&
      (C.needsGrad(0) || C.needsGrad(1)))
    Out.Bwd.Flops += C.elems(Y);
  defaultBwdBytes(C, Out);
}

/// com.microsoft MatMulNBits(A [..., K], B packed [N, K/block, block*bits/8],
/// scales, zero_points, ...): Y [..., N] = A x dequantize(B)^T. MACs =
/// |A|/K * N * K; the kernel dequantizes each weight element as it loads it,
/// (q - zero_point) * scale: 2 FLOPs per weight element (K * N) per call.
/// Bytes: every input at its stored width (the packed weight 4 bits per
/// element), the output written. The weight is integer: no gradient.
void matmulNBits(const CostContext &C, RuleCost &Out) {
  const Value *A = C.N.input(0);
  Count K = Count(C.N.attrInt("K", 0)), N = Count(C.N.attrInt("N", 0));
  if (K <= 0 || N <= 0)
    return unmodeled(Out, "MatMulNBits without its K and N attributes");
  Count M = C.elems(A) / K;
  Count Macs = formulas::matmulMacs(1, M, N, K);
  Out.Fwd.Macs = Macs;
  Out.Fwd.Flops = 2 * Macs + 2 * K * N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.needsGrad(0))
    return;
  // dA = dY x dequantize(B): M*K*N MACs, the weight dequantized again.
  Out.Bwd.Macs = Macs;
  Out.Bwd.Flops = 2 * Macs + 2 * K * N;
  defaultBwdBytes(C, Out);
}

/// QLinearMatMul(a, a_scale, a_zp, b, ...): the product is inputs 0 and 3.
void qlinearMatmul(const CostContext &C, RuleCost &Out) {
  const Shape &SA = *C.N.input(0)->Shp, &SB = *C.N.input(3)->Shp;
  if (SA.rank() == 0 || SB.rank() == 0)
    return unmodeled(Out, "QLinearMatMul of a scalar");
  Count K = dimCount(SA.Dims.back());
  Count M = SA.rank() >= 2 ? dimCount(SA.Dims[SA.rank() - 2]) : 1;
  Count N = SB.rank() >= 2 ? dimCount(SB.Dims.back()) : 1;
  Count Macs = formulas::matmulMacs(outElems(C) / max(1.0, M * N), M, N, K);
  Out.Fwd.Macs = Macs;
  Out.Fwd.Flops = 2 * Macs + 3 * outElems(C); // + requantize per output
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}

/// Gemm: Y = alpha * A' B' + beta * C, A' [M,K], B' [K,N], C broadcast.
///   FLOPs = 2MNK (+ MN for alpha != 1) (+ MN add of C)
///           (+ |C| for beta != 1: C is scaled before it is broadcast)
///   backward: dY is scaled by alpha once (MN, when dA' or dB' is needed),
///   then dA', dB' MNK MACs each; dC = beta * dY summed to C's shape:
///   MN - |C| adds (+ |C| multiplies for beta != 1).
void gemm(const CostContext &C, RuleCost &Out) {
  const Shape &SA = *C.N.input(0)->Shp, &SB = *C.N.input(1)->Shp;
  if (SA.rank() != 2 || SB.rank() != 2)
    return unmodeled(Out, "Gemm operands must be 2-D");
  bool TA = C.N.attrInt("transA", 0), TB = C.N.attrInt("transB", 0);
  Count M = dimCount(SA.Dims[TA ? 1 : 0]), K = dimCount(SA.Dims[TA ? 0 : 1]);
  Count N = dimCount(SB.Dims[TB ? 0 : 1]);
  double Alpha = C.N.attrFloat("alpha", 1.0), Beta = C.N.attrFloat("beta", 1.0);
  const Value *Bias = C.N.input(2);
  Count Macs = formulas::matmulMacs(1, M, N, K);
  Out.Fwd.Macs = Macs;
  Out.Fwd.Flops = 2 * Macs + (Alpha != 1.0 ? M * N : 0) +
                  (Bias ? M * N + (Beta != 1.0 ? C.elems(Bias) : 0) : 0);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  productBackward(C, Out, Macs, 0, 1);
  if (Alpha != 1.0 && (C.needsGrad(0) || C.needsGrad(1)))
    Out.Bwd.Flops += M * N; // alpha * dY, shared by dA' and dB'
  if (Bias && C.needsGrad(2))
    Out.Bwd.Flops += M * N - C.elems(Bias) + (Beta != 1.0 ? C.elems(Bias) : 0);
  defaultBwdBytes(C, Out);
}

/// Einsum: labels bound to extents from the operands; a naive evaluation
/// visits every combination of all labels once (All = prod(all extents)):
///   FLOPs = (operands - 1) * All multiplies + (All - |Y|) adds (each of the
///           |Y| outputs sums All/|Y| products: n - 1 adds for n values);
///   MACs = All for two operands with a summed label (a contraction), else 0.
/// Backward, per operand i that needs a gradient:
///   one operand: 0 FLOPs (dY broadcast back, or copied onto a diagonal:
///     bytes only);
///   two or more: dX_i is the einsum of dY with the other operands:
///     (operands - 1) * All multiplies + (All - |X_i|) adds; MACs = All when
///     there are two operands and the gradient sums a label (All > |X_i|).
void einsum(const CostContext &C, RuleCost &Out) {
  std::string Eq = C.N.attrString("equation", "");
  Eq.erase(std::remove(Eq.begin(), Eq.end(), ' '), Eq.end());
  auto Arrow = Eq.find("->");
  std::string Lhs = Eq.substr(0, Arrow);
  llvm::SmallVector<llvm::StringRef, 3> Terms;
  llvm::StringRef(Lhs).split(Terms, ',');
  if (Terms.size() != C.N.Inputs.size())
    return unmodeled(Out, "Einsum equation does not match its inputs");
  std::map<std::string, Count> Extent; // label (or ellipsis dim) -> extent
  for (unsigned I = 0; I < Terms.size(); ++I) {
    const Shape &S = *C.N.Inputs[I]->Shp;
    llvm::StringRef T = Terms[I];
    size_t Dots = T.find("...");
    size_t Explicit = T.size() - (Dots == llvm::StringRef::npos ? 0 : 3);
    if (S.rank() < Explicit)
      return unmodeled(Out, "Einsum term rank does not match its input");
    size_t Ell = S.rank() - Explicit, Axis = 0;
    for (size_t P = 0; P < T.size(); ++P) {
      if (Dots != llvm::StringRef::npos && P == Dots) {
        for (size_t E = 0; E < Ell; ++E) // ellipsis dims align from the right
          Extent["..." + std::to_string(Ell - E)] =
              max(Extent["..." + std::to_string(Ell - E)],
                       dimCount(S.Dims[Axis++]));
        P += 2;
        continue;
      }
      Extent[std::string(1, T[P])] =
          max(Extent[std::string(1, T[P])], dimCount(S.Dims[Axis++]));
    }
  }
  Count All = 1;
  for (auto &[L, E] : Extent)
    All *= E;
  Count Outs = outElems(C);
  bool Summed = All > Outs;
  double Operands = C.N.Inputs.size();
  Count Mults = max(0.0, Operands - 1) * All;
  Out.Fwd.Macs = Operands == 2 && Summed ? All : 0;
  Out.Fwd.Flops = Mults + max(0.0, All - Outs);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I)
    if (C.needsGrad(I)) {
      if (Operands < 2)
        continue; // a broadcast or diagonal copy of dY: bytes only
      Count Xi = C.elems(C.N.Inputs[I]);
      Out.Bwd.Flops += Mults + max(0.0, All - Xi);
      Out.Bwd.Macs += Operands == 2 && All > Xi ? All : 0;
      for (unsigned J = 0; J < C.N.Inputs.size(); ++J)
        if (J != I)
          save(Out, C.N.Inputs[J]);
    }
  defaultBwdBytes(C, Out);
}

Count spatialProduct(const Shape &S, size_t From) {
  Count P = 1;
  for (size_t I = From; I < S.rank(); ++I)
    P *= dimCount(S.Dims[I]);
  return P;
}

/// Conv: X [N, Cin, ...], W [Cout, Cin/g, k...], Y [N, Cout, o...].
///   MACs = N * Cout * prod(o) * (Cin/g) * prod(k)   (every tap, padding included)
///   FLOPs = 2 * MACs + N*Cout*prod(o) for the bias
///   backward: dX and dW each MACs; dBias = dY summed over N and the
///   spatial dims: N*Cout*prod(o) - Cout adds (P values sum in P - 1).
void conv(const CostContext &C, RuleCost &Out) {
  const Shape &W = *C.N.input(1)->Shp, &Y = *C.N.output(0)->Shp; // DeformConv too
  if (W.rank() < 3 || Y.rank() != W.rank())
    return unmodeled(Out, "Conv weight and output ranks do not match");
  // The input's channels, the group count and the weight must agree (ONNX
  // Runtime refuses the node otherwise): X is [N, C, ...], W [M, C/group, ...].
  int64_t Group = C.N.attrInt("group", 1);
  if (Group <= 0)
    return unmodeled(Out, llvm::formatv("group {0} is not positive", Group).str());
  const Shape *X = C.N.input(0)->Shp ? &*C.N.input(0)->Shp : nullptr;
  if (X && X->rank() == W.rank() && X->Dims[1].isKnown() && W.Dims[1].isKnown() &&
      X->Dims[1].extent() != W.Dims[1].extent() * Group)
    return unmodeled(Out, llvm::formatv("the input has {0} channels, the weight {1} per group "
                                        "x group {2} = {3}",
                                        X->Dims[1].extent(), W.Dims[1].extent(), Group,
                                        W.Dims[1].extent() * Group)
                              .str());
  if (W.Dims[0].isKnown() && W.Dims[0].extent() % Group != 0)
    return unmodeled(Out, llvm::formatv("the weight's {0} output channels do not divide into "
                                        "group {1}",
                                        W.Dims[0].extent(), Group)
                              .str());
  Count N = dimCount(Y.Dims[0]), Cout = dimCount(Y.Dims[1]);
  Count OutSpatial = spatialProduct(Y, 2);
  Count Macs = formulas::convMacs(N, Cout, OutSpatial, dimCount(W.Dims[1]),
                                   spatialProduct(W, 2));
  Out.Fwd.Macs = Macs;
  bool HasBias = C.N.OpType == "Conv" && C.N.input(2);
  Out.Fwd.Flops = 2 * Macs + (HasBias ? N * Cout * OutSpatial : 0);
  if (C.N.OpType == "DeformConv") // bilinear sampling: 4 taps per tap, 7 FLOPs
    Out.Fwd.Flops += 7 * N * OutSpatial * dimCount(W.Dims[1]) * spatialProduct(W, 2);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  productBackward(C, Out, Macs, 0, 1);
  if (HasBias && C.needsGrad(2))
    Out.Bwd.Flops += N * Cout * OutSpatial - Cout;
  defaultBwdBytes(C, Out);
}

/// QLinearConv(x, xs, xzp, w, ws, wzp, ys, yzp, B): conv MACs + requantize.
void qlinearConv(const CostContext &C, RuleCost &Out) {
  const Shape &W = *C.N.input(3)->Shp, &Y = *C.N.output(0)->Shp;
  if (W.rank() < 3)
    return unmodeled(Out, "QLinearConv weight rank below 3");
  Count Macs = formulas::convMacs(dimCount(Y.Dims[0]), dimCount(Y.Dims[1]),
                                   spatialProduct(Y, 2), dimCount(W.Dims[1]),
                                   spatialProduct(W, 2));
  Out.Fwd.Macs = Macs;
  Out.Fwd.Flops = 2 * Macs + 3 * outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}

/// ConvTranspose: X [N, Cin, i...], W [Cin, Cout/g, k...]: every input
/// element scatters into Cout/g * prod(k) outputs:
///   MACs = N * Cin * prod(i) * (Cout/g) * prod(k)
///   FLOPs = 2 * MACs + |Y| for the bias; dBias = |Y| - Cout adds.
void convTranspose(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp, &W = *C.N.input(1)->Shp;
  const Shape &Y = *C.N.output(0)->Shp;
  if (W.rank() < 3 || X.rank() != W.rank())
    return unmodeled(Out, "ConvTranspose input and weight ranks do not match");
  Count Macs = formulas::convMacs(dimCount(X.Dims[0]), dimCount(X.Dims[1]),
                                   spatialProduct(X, 2), dimCount(W.Dims[1]),
                                   spatialProduct(W, 2));
  Out.Fwd.Macs = Macs;
  bool HasBias = C.N.input(2) != nullptr;
  Count YElems = C.elems(C.N.output(0));
  Out.Fwd.Flops = 2 * Macs + (HasBias ? YElems : 0);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  productBackward(C, Out, Macs, 0, 1);
  if (HasBias && C.needsGrad(2))
    Out.Bwd.Flops += YElems - (Y.rank() >= 2 ? dimCount(Y.Dims[1]) : 1);
  defaultBwdBytes(C, Out);
}

//===------------------------------ pooling -----------------------------===//

Count kernelSize(const Node &N) {
  Count K = 1;
  if (auto Ks = N.attrInts("kernel_shape"))
    for (int64_t X : *Ks)
      K *= X;
  return K;
}

/// MaxPool: (k - 1) comparisons per output; backward scatters dY to the
/// argmax (one add per output) and keeps int64 indices (8 bytes per output).
void maxPool(const CostContext &C, RuleCost &Out) {
  Count N = outElems(C), K = kernelSize(C.N);
  Out.Fwd.Flops = N * max(0.0, K - 1);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  Out.SavedBytes = 8 * N;
  Out.Bwd.Flops = N;
  defaultBwdBytes(C, Out);
}

/// AveragePool: k - 1 adds and a divide per output; backward spreads dY/k
/// over the window: k per output.
void averagePool(const CostContext &C, RuleCost &Out) {
  Count N = outElems(C), K = kernelSize(C.N);
  Out.Fwd.Flops = N * K;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  Out.Bwd.Flops = N * K;
  defaultBwdBytes(C, Out);
}

/// LpPool (p = 2 typical): per output, K squares, K - 1 adds and a root:
/// 2K - 1 FLOPs + 1 sqrt; backward dx = dy * x / y per tap: 2 per tap.
void lpPool(const CostContext &C, RuleCost &Out) {
  Count N = outElems(C), K = kernelSize(C.N);
  Out.Fwd.Flops = N * (2 * K - 1);
  Out.Fwd.Transcendentals = N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  save(Out, C.N.output(0));
  Out.Bwd.Flops = 2 * N * K;
  defaultBwdBytes(C, Out);
}

/// GlobalAveragePool, N inputs into R outputs: (N - R) adds + R divides = N;
/// backward broadcasts dY/n: one per input element.
void globalAveragePool(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = inElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  Out.Bwd.Flops = inElems(C);
  defaultBwdBytes(C, Out);
}

/// GlobalMaxPool: N - R compares; backward compares with the max and
/// selects dY: 2 per input element.
void globalMaxPool(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = inElems(C) - outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  save(Out, C.N.output(0));
  Out.Bwd.Flops = 2 * inElems(C); // compare with the max, select dY
  defaultBwdBytes(C, Out);
}

/// GlobalLpPool: M squares, M - R adds, R roots; backward 2 per input.
void globalLpPool(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = 2 * inElems(C) - outElems(C);
  Out.Fwd.Transcendentals = outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  save(Out, C.N.output(0));
  Out.Bwd.Flops = 2 * inElems(C);
  defaultBwdBytes(C, Out);
}

/// MaxRoiPool: each output visits its bin; without the ROI sizes statically,
/// the bound is one comparison per input element per ROI... too loose, so
/// ridge counts one comparison per output per pooled tap of a 2x2 bin.
void roiPool(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = 4 * outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad()) {
    Out.Bwd.Flops = outElems(C);
    defaultBwdBytes(C, Out);
  }
}

/// RoiAlign: sampling_ratio^2 bilinear samples per output bin (4 taps: 4
/// multiplies, 3 adds) plus the average. sampling_ratio 0 means "adaptive"
/// (data-dependent); ridge then assumes 2, the common default.
void roiAlign(const CostContext &C, RuleCost &Out) {
  Count S = C.N.attrInt("sampling_ratio", 0);
  if (S <= 0)
    S = 2;
  Out.Fwd.Flops = outElems(C) * (S * S * 8);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad()) {
    Out.Bwd.Flops = outElems(C) * S * S * 8;
    defaultBwdBytes(C, Out);
  }
}

//===-------------------- normalization and softmax ---------------------===//

/// Normalization of N elements in G groups, training mode: 8N forward:
///   mean: N - G adds + G divides = N;
///   variance: subtract the mean N, square N, sum N - G, divide G = 3N;
///   normalize (sub, mul by the inverse std) 2N; affine (mul, add) 2N;
///   one rsqrt per group.
///   backward: dx 8/elem; dscale 2/elem, dbias 1/elem when trainable.
///   saves the input and per-group mean and inverse std (fp32).
void normRule(const CostContext &C, RuleCost &Out, Count Groups,
              unsigned ScaleIdx, unsigned BiasIdx, Count FwdPerElem = 8) {
  Count N = inElems(C);
  Out.Fwd.Flops = FwdPerElem * N;
  Out.Fwd.Transcendentals = Groups;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  Out.SavedBytes = 2 * 4 * Groups;
  Out.Bwd.Flops = (C.needsGrad(0) ? 8 * N : 0) +
                  (C.needsGrad(ScaleIdx) ? 2 * N : 0) +
                  (C.needsGrad(BiasIdx) ? N : 0);
  defaultBwdBytes(C, Out);
}

/// BatchNormalization(X, scale, B, input_mean, input_var), training mode:
/// the normalization over C channel groups plus the running statistics
/// update running = running*momentum + current*(1 - momentum): mul, mul,
/// add = 3 FLOPs per statistic, 2 statistics: 6 per channel. The updated
/// statistics are written too (2*C at their element size) unless the node's
/// optional outputs 1, 2 (running_mean, running_var) already count them.
///
/// Inference mode: y = x * a + b with a = scale / sqrt(var + eps) and
/// b = B - mean * a per channel: 2 FLOPs per element, one rsqrt and 3 FLOPs
/// (add eps, multiply, multiply-subtract = 2) per channel, 4 per channel in
/// all; reads x and the four per-channel tensors, writes y.
void batchNorm(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp;
  Count Channels = X.rank() >= 2 ? dimCount(X.Dims[1]) : 1;
  if (C.Inference) {
    Out.Fwd.Flops = 2 * inElems(C) + 4 * Channels;
    Out.Fwd.Transcendentals = Channels;
    Out.Fwd.Bytes = inBytes(C) + C.bytes(C.N.output(0));
    return;
  }
  normRule(C, Out, Channels, 1, 2);
  Out.Fwd.Flops += 6 * Channels;
  for (unsigned I = 1; I <= 2; ++I)
    if (!C.N.output(I))
      Out.Fwd.Bytes += C.bytes(C.N.input(I + 2));
}

void instanceNorm(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp;
  Count Groups = X.rank() >= 2 ? dimCount(X.Dims[0]) * dimCount(X.Dims[1]) : 1;
  normRule(C, Out, Groups, 1, 2);
}

/// The groups of a norm over the dims from `axis` (default -1) on
/// (LayerNormalization, RMS norm): the product of the dims before it.
Count groupsBeforeAxis(const CostContext &C) {
  const Shape &X = *C.N.input(0)->Shp;
  int64_t Axis = C.N.attrInt("axis", -1);
  if (Axis < 0)
    Axis += X.rank();
  Count Groups = 1;
  for (int64_t I = 0; I < Axis && I < int64_t(X.rank()); ++I)
    Groups *= dimCount(X.Dims[I]);
  return Groups;
}

/// LayerNormalization: groups = product of the dims before `axis`.
void layerNorm(const CostContext &C, RuleCost &Out) {
  normRule(C, Out, groupsBeforeAxis(C), 1, 2);
}

void groupNorm(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp;
  Count Groups = (X.rank() ? dimCount(X.Dims[0]) : 1) * C.N.attrInt("num_groups", 1);
  normRule(C, Out, Groups, 1, 2);
}

/// Rows of the last axis: N / extent(last dim), the groups of the
/// Skip*Normalization ops (they normalize over the last axis only).
Count lastAxisRows(const CostContext &C) {
  const Shape &X = *C.N.input(0)->Shp;
  return X.rank() ? inElems(C) / max(Count(1), dimCount(X.Dims.back())) : 1;
}

/// RMS norm of N elements in G rows: square N, sum of squares N - G adds + G
/// divides (the mean) = N, scale by the row's rsqrt N, multiply by gamma N:
/// 4N FLOPs, one rsqrt per row. Saves the input and one inverse RMS per row
/// (fp32, 4 bytes: RMS norm has no mean). The forward only; the backward's
/// FLOPs are the caller's.
void rmsRule(const CostContext &C, RuleCost &Out, Count Groups) {
  Count N = inElems(C);
  Out.Fwd.Flops = 4 * N;
  Out.Fwd.Transcendentals = Groups;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  Out.SavedBytes = 4 * Groups;
}

/// RMS norm (SimplifiedLayerNormalization(X, scale), `axis` default -1):
/// G = product of the dims before axis; forward rmsRule's 4N + G rsqrt;
/// backward dx 5N (X needs a gradient), dscale 2N (scale needs one).
void rmsNorm(const CostContext &C, RuleCost &Out) {
  rmsRule(C, Out, groupsBeforeAxis(C));
  if (!C.anyGrad())
    return;
  Count N = inElems(C);
  Out.Bwd.Flops = (C.needsGrad(0) ? 5 * N : 0) + (C.needsGrad(1) ? 2 * N : 0);
  defaultBwdBytes(C, Out);
}

/// SkipLayerNormalization(input, skip, gamma, beta, bias): s = input + skip
/// (+ bias), then LayerNorm on the last axis (normRule, G rows):
///   forward 8N + 1 add per element (+1 with the bias) + G rsqrt;
///   backward: ds (normRule's 8N) when input, skip or bias needs a gradient
///   (all three flow through the same s: dinput = dskip = ds); dgamma 2N;
///   dbeta N; dbias = ds summed over the rows: N - |bias| adds.
void skipLayerNorm(const CostContext &C, RuleCost &Out) {
  normRule(C, Out, lastAxisRows(C), 2, 3);
  const Value *Bias = C.N.input(4);
  Count N = inElems(C);
  Out.Fwd.Flops += (Bias ? 2 : 1) * N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  bool GradSum = C.needsGrad(0) || C.needsGrad(1) || (Bias && C.needsGrad(4));
  Out.Bwd.Flops = (GradSum ? 8 * N : 0) + (C.needsGrad(2) ? 2 * N : 0) +
                  (C.needsGrad(3) ? N : 0) +
                  (Bias && C.needsGrad(4) ? N - C.elems(Bias) : 0);
  defaultBwdBytes(C, Out);
}

/// SkipSimplifiedLayerNormalization(input, skip, gamma, bias): s = input +
/// skip (+ bias), then RMS norm on the last axis (rmsRule, G rows):
///   forward 4N + 1 add per element (+1 with the bias) + G rsqrt;
///   backward: ds 5N when input, skip or bias needs a gradient (one s);
///   dgamma 2N; dbias = ds summed over the rows: N - |bias| adds;
///   saves one inverse RMS per row (4 bytes).
void skipRmsNorm(const CostContext &C, RuleCost &Out) {
  rmsRule(C, Out, lastAxisRows(C));
  const Value *Bias = C.N.input(3);
  Count N = inElems(C);
  Out.Fwd.Flops += (Bias ? 2 : 1) * N;
  if (!C.anyGrad())
    return;
  bool GradSum = C.needsGrad(0) || C.needsGrad(1) || (Bias && C.needsGrad(3));
  Out.Bwd.Flops = (GradSum ? 5 * N : 0) + (C.needsGrad(2) ? 2 * N : 0) +
                  (Bias && C.needsGrad(3) ? N - C.elems(Bias) : 0);
  defaultBwdBytes(C, Out);
}

/// LRN: per element, a sum of `size` squares, then (bias + alpha/size*sum)^beta
/// and a divide: 2*size + 3 FLOPs and one pow.
void lrn(const CostContext &C, RuleCost &Out) {
  Count N = inElems(C), S = C.N.attrInt("size", 1);
  Out.Fwd.Flops = N * (2 * S + 3);
  Out.Fwd.Transcendentals = N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  save(Out, C.N.output(0));
  Out.Bwd.Flops = N * (2 * S + 5);
  Out.Bwd.Transcendentals = N;
  defaultBwdBytes(C, Out);
}

void meanVarianceNorm(const CostContext &C, RuleCost &Out) {
  normRule(C, Out, outElems(C) / max(1.0, inElems(C)), 99, 99, 6);
}

/// LpNormalization (p=2): square and add per element, a sqrt per row, a
/// divide per element.
void lpNorm(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp;
  int64_t Axis = C.N.attrInt("axis", -1);
  if (Axis < 0)
    Axis += X.rank();
  Count Row = Axis >= 0 && Axis < int64_t(X.rank()) ? dimCount(X.Dims[Axis]) : 1;
  Count N = inElems(C);
  Out.Fwd.Flops = 3 * N;
  Out.Fwd.Transcendentals = N / max(1.0, Row);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  save(Out, C.N.output(0));
  Out.Bwd.Flops = 5 * N;
  defaultBwdBytes(C, Out);
}

/// Rows of Softmax, LogSoftmax and Hardmax: from opset 13 the op runs along
/// `axis` (default -1): rows = N / extent(axis); before, the input is
/// coerced to 2-D at `axis` (default 1): rows = prod(dims before axis).
Count softmaxRows(const CostContext &C) {
  const Shape &X = *C.N.input(0)->Shp;
  Count N = inElems(C);
  int64_t Rank = X.rank();
  bool Coerce2D = C.N.OpsetVersion > 0 && C.N.OpsetVersion < 13;
  int64_t Axis = C.N.attrInt("axis", Coerce2D ? 1 : -1);
  if (Axis < 0)
    Axis += Rank;
  if (Rank == 0 || Axis < 0 || Axis > Rank)
    return N;
  if (Coerce2D) {
    Count Rows = 1;
    for (int64_t I = 0; I < Axis; ++I)
      Rows *= dimCount(X.Dims[I]);
    return Rows;
  }
  if (Axis >= Rank)
    return N;
  return dimCount(X.Dims[Axis]) != 0 ? N / dimCount(X.Dims[Axis]) : Count(0);
}

/// Softmax of N elements in R rows: max (N - R compares), subtract N, exp N
/// (transcendental), sum (N - R adds), divide N: 4N - 2R FLOPs + N exp.
/// Backward from the saved output y*(dy - sum(dy*y)): mul N, sum N - R,
/// sub N, mul N = 4N - R.
void softmax(const CostContext &C, RuleCost &Out) {
  Count N = outElems(C), R = softmaxRows(C);
  Out.Fwd.Flops = 4 * N - 2 * R;
  Out.Fwd.Transcendentals = N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.output(0));
  Out.Bwd.Flops = 4 * N - R;
  defaultBwdBytes(C, Out);
}

/// LogSoftmax of N elements in R rows: max (N - R), subtract N, exp N
/// (transc), sum (N - R), log R (transc), subtract N: 4N - 2R FLOPs and
/// N + R transcendentals. Backward dy - exp(y)*sum(dy): sum N - R, exp N
/// (transc), mul N, sub N = 3N - R FLOPs + N exp.
void logSoftmax(const CostContext &C, RuleCost &Out) {
  Count N = outElems(C), R = softmaxRows(C);
  Out.Fwd.Flops = 4 * N - 2 * R;
  Out.Fwd.Transcendentals = N + R;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.output(0));
  Out.Bwd.Flops = 3 * N - R;
  Out.Bwd.Transcendentals = N;
  defaultBwdBytes(C, Out);
}

/// Hardmax: an ArgMax per row (N - R compares), then the one-hot output
/// written (bytes: input read + output written); no gradient.
void hardmax(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = inElems(C) - softmaxRows(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}

//===----------------------------- reductions ---------------------------===//

/// Reductions of N input elements into R outputs (N/R values each): summing,
/// multiplying or comparing P values takes P - 1 operations, N - R in all.
/// Forward FLOPs = FPerIn*N + FPerOut*R (FPerOut -1 for that N - R),
/// transcendentals TPerIn*N + TPerOut*R; backward BPerIn (+ BTPerIn
/// transcendentals) per input element.
void reduceRule(const CostContext &C, RuleCost &Out, Count FPerIn,
                Count FPerOut, Count TPerIn, Count TPerOut, Count BPerIn,
                Count BTPerIn, bool SaveInOut) {
  Count N = inElems(C), R = outElems(C);
  Out.Fwd.Flops = FPerIn * N + FPerOut * R;
  Out.Fwd.Transcendentals = TPerIn * N + TPerOut * R;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  if (SaveInOut) {
    save(Out, C.N.input(0));
    save(Out, C.N.output(0));
  }
  Out.Bwd.Flops = BPerIn * N;
  Out.Bwd.Transcendentals = BTPerIn * N;
  defaultBwdBytes(C, Out);
}

/// ReduceSum: N - R adds; backward broadcasts dY: 0 FLOPs.
void reduceSum(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 1, -1, 0, 0, 0, 0, false); }
/// ReduceMean: (N - R) adds + R divides = N; backward dY/n broadcast: N.
void reduceMean(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 1, 0, 0, 0, 1, 0, false); }
/// ReduceMax/Min: N - R compares; backward compare with y, select dY: 2N.
void reduceMax(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 1, -1, 0, 0, 2, 0, true); }
/// ReduceProd: N - R multiplies; backward dy*y/x: 2N.
void reduceProd(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 1, -1, 0, 0, 2, 0, true); }
/// ReduceL1: abs N + (N - R) adds = 2N - R; backward sign(x)*dy: 2N.
void reduceL1(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 2, -1, 0, 0, 2, 0, true); }
/// ReduceL2: square N + (N - R) adds = 2N - R, + R sqrt; backward dy*x/y: 2N.
void reduceL2(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 2, -1, 0, 1, 2, 0, true); }
/// ReduceSumSquare: square N + (N - R) adds = 2N - R; backward 2*x*dy: 2N.
void reduceSumSquare(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 2, -1, 0, 0, 2, 0, true); }
/// ReduceLogSum: (N - R) adds + R log; backward dy/y broadcast: N.
void reduceLogSum(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 1, -1, 0, 1, 1, 0, true); }
/// ReduceLogSumExp = log(sum(exp(x - max))) + max: max N - R, sub N, exp N
/// (transc), sum N - R, log R (transc), add R: 3N - R FLOPs, N + R
/// transcendentals; backward dy*exp(x - y): 2 FLOPs + exp per element.
void reduceLogSumExp(const CostContext &C, RuleCost &Out) { reduceRule(C, Out, 3, -1, 1, 1, 2, 1, true); }
/// ArgMax/ArgMin: N - R compares; indices carry no gradient.
void reduceNoGrad(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = inElems(C) - outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}

/// TopK: a heap of K over n elements: n * ceil(log2(K + 1)) comparisons;
/// backward scatters dY to the indices (one per output).
void topK(const CostContext &C, RuleCost &Out) {
  Count N = inElems(C);
  const Shape &X = *C.N.input(0)->Shp, &Y = *C.N.output(0)->Shp;
  int64_t Axis = C.N.attrInt("axis", -1);
  if (Axis < 0)
    Axis += X.rank();
  Count K = Axis >= 0 && Axis < int64_t(Y.rank()) ? dimCount(Y.Dims[Axis])
                                                  : outElems(C) / max(1.0, N);
  Out.Fwd.Flops = N * ceilLog2(K + 1);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.output(1));
  Out.Bwd.Flops = outElems(C);
  defaultBwdBytes(C, Out);
}

void cumSum(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = inElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad()) {
    Out.Bwd.Flops = inElems(C); // reverse cumulative sum
    defaultBwdBytes(C, Out);
  }
}

/// NegativeLogLikelihoodLoss: gather one log-probability per sample (and a
/// weight multiply), then the reduction: ~3 per sample.
void nllLoss(const CostContext &C, RuleCost &Out) {
  Count Samples = inElems(C, 1);
  Out.Fwd.Flops = 3 * Samples;
  Out.Fwd.Bytes = C.bytes(C.N.input(1)) + 2 * Samples * C.elemBytes(C.N.input(0)) + outBytes(C);
  if (!C.anyGrad())
    return;
  Out.Bwd.Flops = 2 * Samples;
  Out.Bwd.Bytes = gradOutBytes(C) + C.bytes(C.N.input(1)) + C.bytes(C.N.input(0));
}

/// SoftmaxCrossEntropyLoss on [S, C] scores (N = S*C): LogSoftmax per row
/// 4N - 2S FLOPs, N exp, S log; the loss: S negations, S - 1 adds and a
/// divide (mean): 2S; 4N in all. Backward (softmax - onehot) * dY / S: the
/// exp of the saved log-probabilities N (transcendental), S subtractions at
/// the targets, N scalings: N + S.
void softmaxCrossEntropy(const CostContext &C, RuleCost &Out) {
  Count N = inElems(C), Samples = inElems(C, 1);
  Out.Fwd.Flops = 4 * N;
  Out.Fwd.Transcendentals = N + Samples;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  Out.Bwd.Flops = N + Samples;
  Out.Bwd.Transcendentals = N;
  defaultBwdBytes(C, Out);
}

//===--------------------------- data movement --------------------------===//

/// Copies: inputs read, outputs written, no arithmetic; the backward is the
/// adjoint copy (dY read, dX written).
void dataMovement(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad())
    defaultBwdBytes(C, Out);
}

/// Tile and Expand: the backward sums dY back to the input: one add per
/// output element beyond the input's.
void broadcastCopy(const CostContext &C, RuleCost &Out) {
  dataMovement(C, Out);
  if (C.anyGrad())
    Out.Bwd.Flops = outElems(C) - inElems(C);
}

/// Cast: one conversion per element (not a FLOP: XLA counts converts as
/// bytes only); the backward casts dY back.
void cast(const CostContext &C, RuleCost &Out) { dataMovement(C, Out); }

void trilu(const CostContext &C, RuleCost &Out) {
  dataMovement(C, Out);
  Out.Fwd.Flops = outElems(C); // a select per element
  if (C.anyGrad())
    Out.Bwd.Flops = outElems(C);
}

/// Gather family: indices read, the selected rows read and written:
///   bytes = indices + 2 * output. The backward scatter-adds dY into a zeroed
/// gradient of the data: one add per output element. Its bytes: dY read
/// (|out|) + indices read + the zeroed table gradient written whole (the
/// embedding table's dW is dense: |table|) + the touched rows read back by
/// the scatter-add (|out|) = table + 2*out + idx.
void gather(const CostContext &C, RuleCost &Out) {
  Count Idx = C.bytes(C.N.input(1)), O = outBytes(C);
  Out.Fwd.Bytes = Idx + 2 * O;
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(1));
  Out.Bwd.Flops = outElems(C);
  Out.Bwd.Bytes = gradOutBytes(C) /* dY */ + Idx + C.bytes(C.N.input(0)) /* dTable */ +
                  O /* rows read back */;
}

/// com.microsoft GatherBlockQuantized: each gathered value is dequantized,
/// (q - zero_point) * scale: 2 FLOPs per output element. Bytes: the indices,
/// the gathered rows at their stored width (bits per value), their scales
/// and zero points (one per block of block_size values), the output. The
/// table is integer: no gradient.
void gatherBlockQuantized(const CostContext &C, RuleCost &Out) {
  Count E = outElems(C), Block = Count(std::max<int64_t>(1, C.N.attrInt("block_size", 128)));
  Count Bits = Count(C.N.attrInt("bits", 4));
  const Value *Scales = C.N.input(2), *Zp = C.N.input(3);
  Out.Fwd.Flops = 2 * E;
  // uint8 zero points are packed as the data is.
  Count ZpBytes = !Zp ? 0 : Zp->Elem == DType::UInt8 && Bits < 8 ? Bits / 8 : C.elemBytes(Zp);
  Out.Fwd.Bytes = C.bytes(C.N.input(1)) + E * Bits / 8 +
                  E / Block * (C.elemBytes(Scales) + ZpBytes) + outBytes(C);
}

/// Scatter family: data copied to the output, updates written at the
/// indices; a reduction attribute (add, mul, max, min) costs one per update.
void scatter(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.N.attrString("reduction", "none") != "none")
    Out.Fwd.Flops = inElems(C, 2);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(1));
  defaultBwdBytes(C, Out);
}

/// Resize: nearest moves data only; linear interpolates 2^d taps (a multiply
/// and an add each), cubic 4^d, d = number of resized dims.
void resize(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp, &Y = *C.N.output(0)->Shp;
  double D = 0;
  for (size_t I = 0; I < X.rank() && I < Y.rank(); ++I)
    D += X.Dims[I] != Y.Dims[I];
  std::string Mode = C.N.attrString("mode", "nearest");
  Count Taps = Mode == "linear" || Mode == "bilinear" ? std::pow(2.0, D)
                : Mode == "cubic"                      ? std::pow(4.0, D)
                                                       : 0;
  Out.Fwd.Flops = outElems(C) * 2 * Taps;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  Out.Bwd.Flops = Out.Fwd.Flops;
  defaultBwdBytes(C, Out);
}

/// GridSample (bilinear, 2-D): 4 taps per output, 7 FLOPs plus the
/// coordinate unnormalization (4).
void gridSample(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = 11 * outElems(C);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  save(Out, C.N.input(1));
  Out.Bwd.Flops = 2 * Out.Fwd.Flops;
  defaultBwdBytes(C, Out);
}

/// AffineGrid: a (d+1)-vector times a d x (d+1) matrix per output point.
void affineGrid(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = 2 * outElems(C) * 3;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad()) {
    Out.Bwd.Flops = Out.Fwd.Flops;
    defaultBwdBytes(C, Out);
  }
}

void writeOutput(const CostContext &C, RuleCost &Out) { Out.Fwd.Bytes = outBytes(C); }
void readInWriteOut(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Flops = inElems(C); // one inspection per input element
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}
/// Reads what it outputs (sequence element access, concatenation).
void readInWriteOutOut(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Bytes = 2 * outBytes(C);
  if (C.anyGrad())
    Out.Bwd.Bytes = 2 * gradOutBytes(C);
}
void dataMovementIn(const CostContext &C, RuleCost &Out) {
  Out.Fwd.Bytes = 2 * C.bytes(C.N.input(0));
  if (C.anyGrad())
    Out.Bwd.Bytes = 2 * C.bytes(C.N.input(0));
}

/// Det of [..., n, n]: LU decomposition, 2n^3/3 FLOPs per matrix.
void det(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp;
  if (X.rank() < 2)
    return unmodeled(Out, "Det of an input below rank 2");
  Count Nn = dimCount(X.Dims.back());
  Out.Fwd.Flops = outElems(C) * 2 * Nn * Nn * Nn / 3;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  Out.Bwd.Flops = 2 * Out.Fwd.Flops; // inverse-transpose times dY*det
  defaultBwdBytes(C, Out);
}

/// DFT/STFT as FFT: 5 n log2 n real FLOPs per complex transform of length n
/// (the standard radix-2 count).
void dft(const CostContext &C, RuleCost &Out) {
  const Shape &Y = *C.N.output(0)->Shp;
  if (Y.rank() < 2)
    return unmodeled(Out, "DFT output below rank 2");
  int64_t Axis = C.N.attrInt("axis", 1);
  if (Axis < 0)
    Axis += Y.rank();
  Count Len = Axis >= 0 && Axis < int64_t(Y.rank()) ? dimCount(Y.Dims[Axis]) : 1;
  Count Transforms = outElems(C) / 2 / max(1.0, Len);
  Out.Fwd.Flops = Transforms * 5 * Len * sym::log2(max(Count(2), Len));
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad()) {
    Out.Bwd.Flops = Out.Fwd.Flops;
    defaultBwdBytes(C, Out);
  }
}

/// Views: Reshape, Squeeze, Unsqueeze, Flatten, Identity move no data.
void view(const CostContext &C, RuleCost &Out) {}
/// Metadata and bookkeeping: shapes, sizes, constants, sequence handles.
void metadata(const CostContext &C, RuleCost &Out) {}

/// Dropout in training mode (whatever the export says): a Bernoulli mask
/// (random generation not counted) and y = x * mask / (1 - p): 2 FLOPs per
/// element; the mask is written and kept for backward (1 byte per element);
/// backward dy * mask / (1 - p): 2 per element.
/// Inference mode: the identity, which runtimes remove (nothing moves).
void dropout(const CostContext &C, RuleCost &Out) {
  if (C.Inference)
    return;
  Count N = outElems(C);
  Out.Fwd.Flops = 2 * N;
  Out.Fwd.Bytes = C.bytes(C.N.input(0)) + C.bytes(C.N.output(0)) + N;
  if (!C.anyGrad())
    return;
  Out.SavedBytes = N;
  Out.Bwd.Flops = 2 * N;
  defaultBwdBytes(C, Out);
}

/// If, Loop, Scan: the node itself costs nothing; CostAnalysis costs the
/// bodies with the right multiplicity.
void controlFlow(const CostContext &C, RuleCost &Out) {}

//===---------------------- optimizer updates as ops ---------------------===//

/// Outputs are Groups tensors per parameter (X and its state); the update
/// costs Flops (+ Transc) per element of the parameters; every input is
/// read and every output written.
void optimizerUpdate(const CostContext &C, RuleCost &Out, Count Groups, Count Flops,
                     Count Transc) {
  Count Elems = 0;
  for (const Value *V : C.N.Outputs)
    Elems += C.elems(V);
  Elems /= Groups;
  Out.Fwd.Flops = Flops * Elems;
  Out.Fwd.Transcendentals = Transc * Elems;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
}
void momentumOp(const CostContext &C, RuleCost &Out) { optimizerUpdate(C, Out, 2, 4, 0); }
void adagradOp(const CostContext &C, RuleCost &Out) { optimizerUpdate(C, Out, 2, 6, 1); }
void adamOp(const CostContext &C, RuleCost &Out) { optimizerUpdate(C, Out, 3, 13, 1); }

/// Gradient (training preview): dy/dx for each x of xs, computed by the
/// backward of the nodes between them and y. Its work is each such node's
/// backward by the node's own rule, with gradients for its inputs on a path
/// from xs (what the walker gives a training step's backward), summed as
/// this node's forward, plus the seed dy = 1 (y's bytes written). A node on
/// the way that no rule costs, or control flow, leaves it unmodeled.
void gradientOp(const CostContext &C, RuleCost &Out) {
  const Graph *G = C.N.Parent;
  const Attribute *Xs = C.N.attr("xs");
  const Value *Y = G ? G->lookupLocal(C.N.attrString("y", "")) : nullptr;
  if (!G || !Xs || !Y) {
    Out.Unmodeled = "its y or xs names no value of its graph";
    return;
  }
  // Downstream of xs (in topological order, up to this node), then
  // upstream of y among those nodes.
  llvm::DenseSet<const Value *> Down, Up{Y};
  for (const std::string &X : Xs->strings()) {
    const Value *V = G->lookupLocal(X);
    if (!V) {
      Out.Unmodeled = "xs names '" + X + "', no value of its graph";
      return;
    }
    Down.insert(V);
  }
  std::vector<const Node *> Before;
  for (const auto &P : G->Nodes) {
    if (P == &C.N)
      break;
    Before.push_back(P);
    if (llvm::any_of(P->Inputs, [&](const Value *V) { return V && Down.count(V); }))
      for (const Value *V : P->Outputs)
        if (V)
          Down.insert(V);
  }
  for (const Node *P : llvm::reverse(Before))
    if (llvm::any_of(P->Outputs, [&](const Value *V) { return V && Up.count(V); }))
      for (const Value *V : P->Inputs)
        if (V)
          Up.insert(V);
  for (const Node *P : Before) {
    if (!llvm::any_of(P->Outputs,
                      [&](const Value *V) { return V && Down.count(V) && Up.count(V); }))
      continue;
    const OpRule *Rule = findOpRule(P->Domain, P->OpType);
    if (!Rule || !P->subgraphs().empty()) {
      Out.Unmodeled = "the backward of '" + P->Name.str() + "' (" + P->qualifiedOpType() +
                      ") on the way from xs to y " +
                      (Rule ? "runs control flow" : "has no cost rule");
      return;
    }
    CostContext PC{*P, {}, C.FloatBytes, false, C.Symbolic};
    for (unsigned I = 0; I < P->Inputs.size(); ++I)
      PC.InputNeedsGrad.push_back(P->Inputs[I] && Down.count(P->Inputs[I]) &&
                                  !(I < 32 && (Rule->NonDiffInputs >> I) & 1));
    NodeCost NC;
    NC.N = P;
    applyRule(*Rule, PC, NC);
    if (!NC.unmodeled().empty()) {
      Out.Unmodeled = "the backward of '" + P->Name.str() + "': " + NC.unmodeled().str();
      return;
    }
    Out.Fwd += NC.bwdCounts();
  }
  Out.Fwd.Bytes += C.bytes(Y);
}

//===---------------------------- recurrent -----------------------------===//

/// LSTM/GRU/RNN with G gates, hidden H, input I, directions D, steps S:
///   per step and direction: gates = x W^T + h R^T + biases:
///     MACs = B * G*H * (I + H), FLOPs 2*MACs + 2*B*G*H (two bias adds)
///   plus the cell's element-wise work, per step and direction:
///     LSTM: 3 sigmoid + 2 tanh (5 transcendentals), 3 FLOPs per sigmoid
///           (9), cell c = f*c + i*g (3), h = o*tanh(c) (1): 13 FLOPs * B*H
///     GRU:  2 sigmoid + 1 tanh, 6 + 1 (r*h: one multiply) + 4
///           (h = (1-z)*n + z*h: sub, mul, mul, add): 11 FLOPs * B*H
///     RNN:  1 tanh: 0 FLOPs * B*H
///   backward MACs per step and direction, each product only when needed:
///     dX = dGates.W: B*G*H*I, if X needs a gradient;
///     dW = dGates^T.x: G*H*I*B, if W does;
///     dR = dGates^T.h: G*H*H*B, if R does;
///     dh = dGates.R: B*G*H*H, whenever any input needs a gradient (the
///       recurrence carries the gradient back through the steps);
///   element-wise and bias work 2x the forward; saves gates, c and h per step.
void recurrent(const CostContext &C, RuleCost &Out, Count G, Count EwFlops,
               Count EwTransc) {
  // Y, Y_h and Y_c are each optional (test_lstm_defaults gives Y_h alone).
  const Shape &X = *C.N.input(0)->Shp, &W = *C.N.input(1)->Shp;
  if (X.rank() != 3 || W.rank() != 3)
    return unmodeled(Out, C.N.OpType.ref() + " needs rank-3 X and W");
  // The attributes and the weights must agree (ONNX Runtime refuses the
  // node otherwise): W is [directions, G*H, I].
  if (const Attribute *HA = C.N.attr("hidden_size")) {
    if (HA->I <= 0)
      return unmodeled(Out, llvm::formatv("hidden_size {0} is not positive", HA->I).str());
    if (W.Dims[1].isKnown() && G.isNumber() &&
        double(W.Dims[1].extent()) != G.number() * double(HA->I))
      return unmodeled(Out, llvm::formatv("W's dim 1 is {0}, not {1} gates x hidden_size {2}",
                                          W.Dims[1].extent(), int64_t(G.number()), HA->I)
                                .str());
  }
  if (X.Dims[2].isKnown() && W.Dims[2].isKnown() && X.Dims[2].extent() != W.Dims[2].extent())
    return unmodeled(Out, llvm::formatv("X has {0} features, W takes {1}", X.Dims[2].extent(),
                                        W.Dims[2].extent())
                              .str());
  bool BatchFirst = C.N.attrInt("layout", 0) == 1;
  Count S = dimCount(X.Dims[BatchFirst ? 1 : 0]), B = dimCount(X.Dims[BatchFirst ? 0 : 1]);
  Count I = dimCount(X.Dims[2]), D = dimCount(W.Dims[0]);
  Count H = C.N.attr("hidden_size") ? Count(C.N.attrInt("hidden_size", 0))
                                     : dimCount(W.Dims[1]) / G;
  Count Steps = S * D;
  Count Macs = Steps * B * G * H * (I + H);
  Out.Fwd.Macs = Macs;
  // The two bias adds per gate element only when the B input is present.
  Count BiasAdds = C.N.input(3) ? 2 * G * H : 0;
  Out.Fwd.Flops = 2 * Macs + Steps * B * (BiasAdds + EwFlops * H);
  Out.Fwd.Transcendentals = Steps * B * H * EwTransc;
  // The recurrence runs one product per time step, and each step reads its
  // direction's W and R again: S - 1 reads beyond the single read the
  // default counts. This is what keeps an RNN's intensity at about its batch.
  Count WeightBytes = C.bytes(C.N.input(1)) + C.bytes(C.N.input(2));
  Out.Fwd.Bytes = inBytes(C) + outBytes(C) + (S - 1) * WeightBytes;
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  // Gates plus cell and hidden states per step, at the input's element size.
  Out.SavedBytes = Steps * B * H * (G + 2) * C.elemBytes(C.N.input(0));
  Out.Bwd.Macs = Steps * B * G * H *
                 ((C.needsGrad(0) ? I : 0) + (C.needsGrad(1) ? I : 0) +
                  (C.needsGrad(2) ? H : 0) + H);
  Out.Bwd.Flops = 2 * Out.Bwd.Macs + 2 * Steps * B * (BiasAdds + EwFlops * H);
  Out.Bwd.Transcendentals = 0;
  defaultBwdBytes(C, Out);
  // Per step, dX needs W and dh needs R again (the gradient accumulators of
  // W and R stay on chip): S - 1 more reads of each.
  Out.Bwd.Bytes += (S - 1) * WeightBytes;
}

void lstm(const CostContext &C, RuleCost &Out) { recurrent(C, Out, 4, 13, 5); }
void gru(const CostContext &C, RuleCost &Out) { recurrent(C, Out, 3, 11, 3); }
void rnn(const CostContext &C, RuleCost &Out) { recurrent(C, Out, 1, 0, 1); }

//===------------------------- com.microsoft ----------------------------===//

/// Which gradients of an attention core's q, k and v are needed.
struct CoreGrads {
  bool Q = false, K = false, V = false;
  bool any() const { return Q || K || V; }
  bool scores() const { return Q || K; } // dQ and dK both start from dS
};

/// Scaled dot-product attention core for B batches, A heads, S queries, L
/// keys, head dims Dk (q.k) and Dv (p.v): Scores = B*A*S*L scores in
/// R = B*A*S softmax rows of L.
///   forward: q.k^T Scores*Dk MACs, p.v Scores*Dv MACs; the scale, 1 per
///   score; the softmax as the Softmax rule counts it, 4*Scores - 2R FLOPs
///   (max and sum of L values: L - 1 operations each) + one exp per score.
///   backward, only the products the needed gradients require:
///     dV = P^T.dY (Scores*Dv MACs) when v needs a gradient;
///     dP = dY.V^T (Scores*Dv MACs), the softmax backward 4*Scores - R (the
///       Softmax rule's) and the scale (1 per score) when q or k needs one;
///     dQ = dS.K (Scores*Dk MACs) for q; dK = dS^T.Q (Scores*Dk MACs) for k.
///   saves the probabilities (one per score, read by dV and by the softmax
///   backward); the caller saves q, k, v as coreSave says.
void attentionCore(const CostContext &C, RuleCost &Out, Count B, Count A,
                   Count S, Count L, Count Dk, Count Dv, CoreGrads G) {
  Count Scores = B * A * S * L, Rows = B * A * S;
  Count Macs = Scores * (Dk + Dv);
  Out.Fwd.Macs += Macs;
  Out.Fwd.Flops += 2 * Macs + Scores + (4 * Scores - 2 * Rows);
  Out.Fwd.Transcendentals += Scores;
  if (!G.any())
    return;
  Out.SavedBytes += Scores * C.elemBytes(C.N.input(0));
  Count BwdMacs = (G.V ? Scores * Dv : 0) + (G.scores() ? Scores * Dv : 0) +
                   (G.Q ? Scores * Dk : 0) + (G.K ? Scores * Dk : 0);
  Out.Bwd.Macs += BwdMacs;
  Out.Bwd.Flops += 2 * BwdMacs + (G.scores() ? Scores + (4 * Scores - Rows) : 0);
}

/// What the core's backward reads besides the probabilities: dQ = dS.K
/// reads k, dK = dS^T.Q reads q, dP = dY.V^T (for q or k) reads v.
void coreSave(RuleCost &Out, const Value *Q, const Value *K, const Value *V,
              CoreGrads G) {
  if (G.K)
    save(Out, Q);
  if (G.Q)
    save(Out, K);
  if (G.scores())
    save(Out, V);
}

/// Attention(input [B,S,Hin], weights [Hin, 3H], bias [3H], mask, ...):
/// the QKV projection (B*S*Hin*3H MACs, plus B*S*3H bias adds) and the core.
/// Backward: dW = x^T.dQKV and dX = dQKV.W^T (Proj MACs each, when needed);
/// dbias = dQKV summed over the B*S rows: (B*S - 1)*3H adds. q, k and v
/// are projections: the core needs all three gradients whenever any
/// input does. Saves x and q, k, v (B*S*3H).
void msAttention(const CostContext &C, RuleCost &Out) {
  const Shape &X = *C.N.input(0)->Shp, &W = *C.N.input(1)->Shp;
  if (X.rank() != 3 || W.rank() != 2)
    return unmodeled(Out, "Attention needs input [B,S,H] and weights [H,3H]");
  Count B = dimCount(X.Dims[0]), S = dimCount(X.Dims[1]), Hin = dimCount(X.Dims[2]);
  Count H3 = dimCount(W.Dims[1]), A = C.N.attrInt("num_heads", 1);
  Count Proj = B * S * Hin * H3;
  Out.Fwd.Macs = Proj;
  Out.Fwd.Flops = 2 * Proj + (C.N.input(2) ? B * S * H3 : 0);
  if (C.anyGrad()) {
    Out.Bwd.Macs = (C.needsGrad(0) ? Proj : 0) + (C.needsGrad(1) ? Proj : 0);
    Out.Bwd.Flops = 2 * Out.Bwd.Macs;
    if (C.N.input(2) && C.needsGrad(2))
      Out.Bwd.Flops += (B * S - 1) * H3;
    save(Out, C.N.input(0));
    Out.SavedBytes += B * S * H3 * C.elemBytes(C.N.input(0)); // q, k, v
  }
  Count H = H3 / 3;
  bool Any = C.anyGrad();
  attentionCore(C, Out, B, A, S, S, H / A, H / A, {Any, Any, Any});
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad())
    defaultBwdBytes(C, Out);
}

/// MultiHeadAttention(query [B,S,Hq], key [B,L,Hk], value [B,L,Hv],
/// bias [Hq + Hk + Hv], ...): projections done outside; the optional bias
/// (the input projection's, per the contrib op doc) is added to q, k and v
/// first: B*S*Hq + B*L*Hk + B*L*Hv adds. Then the core. A gradient of q',
/// k', v' (the biased tensors) is needed for its own input and for the
/// bias; dbias sums them over their rows: (B*S - 1)*Hq + (B*L - 1)*Hk +
/// (B*L - 1)*Hv adds. The saved q, k, v stand for q', k', v' (same sizes).
void msMultiHeadAttention(const CostContext &C, RuleCost &Out) {
  const Value *Q = C.N.input(0), *K = C.N.input(1), *V = C.N.input(2);
  if (!Q || !K || !V || Q->Shp->rank() != 3 || K->Shp->rank() != 3 || V->Shp->rank() != 3)
    return unmodeled(Out, "MultiHeadAttention: only unpacked 3-D query, key, value are modeled");
  Count B = dimCount(Q->Shp->Dims[0]), S = dimCount(Q->Shp->Dims[1]);
  Count H = dimCount(Q->Shp->Dims[2]), L = dimCount(K->Shp->Dims[1]);
  Count Hk = dimCount(K->Shp->Dims[2]);
  Count Hv = dimCount(V->Shp->Dims[2]), A = C.N.attrInt("num_heads", 1);
  const Value *Bias = C.N.input(3);
  bool BiasGrad = Bias && C.needsGrad(3);
  CoreGrads G{C.needsGrad(0) || BiasGrad, C.needsGrad(1) || BiasGrad,
              C.needsGrad(2) || BiasGrad};
  if (Bias)
    Out.Fwd.Flops += B * S * H + B * L * Hk + B * L * Hv;
  attentionCore(C, Out, B, A, S, L, H / A, Hv / A, G);
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (C.anyGrad()) {
    if (BiasGrad)
      Out.Bwd.Flops += (B * S - 1) * H + (B * L - 1) * Hk + (B * L - 1) * Hv;
    coreSave(Out, Q, K, V, G);
    defaultBwdBytes(C, Out);
  }
}

/// RotaryEmbedding(input, position_ids, cos_cache [max_seq, R/2],
/// sin_cache): per rotated element x*cos + rotate(x)*sin (the sign folded
/// into the sin term): mul, mul, add = 3 FLOPs; only R = rotary_embedding_dim
/// (default: the caches' 2 * R/2) dims of each head rotate, the rest are
/// copied (bytes only). Head size: the last dim of a 4-D input, else
/// hidden / num_heads, else R. Rotated elements: N * R / head.
/// Bytes: each input once; of each cache only the rows gathered, once:
/// one per position id (S of them for a single offset id), at most the
/// cache's rows. Backward: the transposed rotation, 3 per rotated element
/// (copies pass dY through), reading the same gathered cos, sin rows.
void rotaryEmbedding(const CostContext &C, RuleCost &Out) {
  const Value *X = C.N.input(0), *Pos = C.N.input(1);
  const Value *Cos = C.N.input(2), *Sin = C.N.input(3);
  if (!Cos || !Sin || Cos->Shp->rank() < 1 || Sin->Shp->rank() < 1)
    return unmodeled(Out, "RotaryEmbedding needs cos and sin caches");
  const Shape &XS = *X->Shp, &CS = *Cos->Shp;
  Count N = outElems(C);
  Count CacheRows = dimCount(CS.Dims[0]);
  Count Half = CacheRows > 0 ? C.elems(Cos) / CacheRows : 0; // R/2 per row
  Count Rot = C.N.attrInt("rotary_embedding_dim", 0);
  if (Rot <= 0)
    Rot = 2 * Half;
  Count Heads = C.N.attrInt("num_heads", 0);
  Count Head = XS.rank() == 4                  ? dimCount(XS.Dims[3])
                : XS.rank() == 3 && Heads > 0 ? dimCount(XS.Dims[2]) / Heads
                                              : Rot;
  Count Rotated = Head > 0 ? N * min(1.0, Rot / Head) : N;
  Count Seq = XS.rank() == 4   ? dimCount(XS.Dims[2])
               : XS.rank() >= 2 ? dimCount(XS.Dims[1])
                                : 1;
  Count Ids = C.elems(Pos) == 1 ? Seq : C.elems(Pos);
  Count Gathered = min(Ids, CacheRows);
  Count CacheBytes = Gathered * (Half * C.elemBytes(Cos) +
                                  C.elems(Sin) / max(1.0, CacheRows) * C.elemBytes(Sin));
  Out.Fwd.Flops = 3 * Rotated;
  Out.Fwd.Bytes = C.bytes(X) + C.bytes(Pos) + CacheBytes + outBytes(C);
  if (!C.anyGrad())
    return;
  Out.Bwd.Flops = 3 * Rotated;
  defaultBwdBytes(C, Out);
  Out.Bwd.Bytes += CacheBytes;
}

/// Gelu(A + bias) per element, erf form (BiasGelu, Fwd 4, Bwd 9, BwdTransc
/// 2: erf, exp) or tanh form (FastGelu, 8, 15, 1: tanh), the bias optional
/// for FastGelu:
///   forward: the bias add (1, when present) + Fwd per element + one erf or
///   tanh;
///   backward: g = dY*gelu'(A + bias) once for every gradient: recompute
///   A + bias (1, when present) + Bwd (gelu' from A, times dY), BwdTransc
///   per element; dA = g; dbias = g summed to the bias' shape, N - |bias|
///   adds. Reads A and bias.
void geluBiasRule(const CostContext &C, RuleCost &Out, Count F, Count BF,
                  Count BT) {
  Count N = outElems(C);
  const Value *Bias = C.N.input(1);
  Count Add = Bias ? 1 : 0;
  Out.Fwd.Flops = (Add + F) * N;
  Out.Fwd.Transcendentals = N;
  Out.Fwd.Bytes = inBytes(C) + outBytes(C);
  if (!C.anyGrad())
    return;
  save(Out, C.N.input(0));
  save(Out, Bias);
  Out.Bwd.Flops = (Add + BF) * N + (Bias && C.needsGrad(1) ? N - C.elems(Bias) : 0);
  Out.Bwd.Transcendentals = BT * N;
  defaultBwdBytes(C, Out);
}

/// BiasGelu: Gelu's erf form, 4 + erf; gelu' 9 + erf, exp (OpCosts.def).
void biasGelu(const CostContext &C, RuleCost &Out) { geluBiasRule(C, Out, 4, 9, 2); }

/// FastGelu, tanh form 0.5x(1+tanh(u)), u = x*(c + c'x^2), c = sqrt(2/pi),
/// c' = 0.044715c: 6 mul, 2 add = 8 + tanh. gelu'(x) = 0.5(1+t) +
/// 0.5x(1-t^2)u', t = tanh(u) recomputed from x: u 4 (x^2, c'x^2, + c, *x),
/// 0.5(1+t) 2, 1-t^2 2, u' = c + 3c'x^2 2, 0.5x 1, the two products 2, the
/// sum 1, times dY 1: 15 + tanh.
void fastGelu(const CostContext &C, RuleCost &Out) { geluBiasRule(C, Out, 8, 15, 1); }

/// Gelu (ai.onnx, opset 20): approximate = "none" is the erf form (4 + erf;
/// gelu' 9 + erf, exp), "tanh" the tanh form, costed as FastGelu without
/// bias (8 + tanh; gelu' 15 + tanh).
void geluOnnx(const CostContext &C, RuleCost &Out) {
  if (C.N.attrString("approximate", "none") == "tanh")
    return geluBiasRule(C, Out, 8, 15, 1);
  geluBiasRule(C, Out, 4, 9, 2);
}

//===------------------------------ table -------------------------------===//

template <int F, int T, int BF, int BT, Save S>
void unaryT(const CostContext &C, RuleCost &O) {
  unaryRule(C, O, F, T, BF, BT, S);
}
template <int F, int T, int BFA, int BFB, int BT, Save SA, Save SB>
void binaryT(const CostContext &C, RuleCost &O) {
  binaryRule(C, O, F, T, BFA, BFB, BT, SA, SB);
}

const OpRule Rules[] = {
#define RIDGE_UNARY(D, Op, F, T, BF, BT, S)                                    \
  {D, Op, unaryT<F, T, BF, BT, Save::S>, 0u, 0x1u, 0x1u},
#define RIDGE_BINARY(D, Op, F, T, BFA, BFB, BT, SA, SB, In)                    \
  {D, Op, binaryT<F, T, BFA, BFB, BT, Save::SA, Save::SB>, 0u, In, 0x1u},
#define RIDGE_OP(D, Op, Handler, NonDiff, In, Out) {D, Op, Handler, NonDiff, In, Out},
#include "passes/cost/OpCosts.def"
};

} // namespace

const OpRule *ridge::findOpRule(llvm::StringRef Domain, llvm::StringRef OpType) {
  // This runs several times a node. The rules found last are cached on
  // each thread by the op type's address: the importer interns op types,
  // so a graph's nodes of one type share it, and a hit costs two short
  // compares with the rule's own names (which also make a stale address,
  // reused by another string, a miss) instead of hashing two strings. The
  // names are kept with their lengths (the index's keys): comparing with
  // the rule's C strings took a strlen of each per lookup, 3% of a bound
  // analyze.
  struct Entry {
    const char *Key = nullptr;
    llvm::StringRef Domain, Name;
    const OpRule *Rule = nullptr;
  };
  thread_local std::array<Entry, 64> Cache;
  Entry &E = Cache[(reinterpret_cast<uintptr_t>(OpType.data()) >> 4) % Cache.size()];
  if (E.Key == OpType.data() && E.Rule && OpType == E.Name && Domain == E.Domain)
    return E.Rule;
  // Domain, then op type: no key is built per lookup.
  static const llvm::StringMap<llvm::StringMap<const OpRule *>> Index = [] {
    llvm::StringMap<llvm::StringMap<const OpRule *>> M;
    for (const OpRule &R : Rules)
      M[R.Domain][R.Name] = &R;
    return M;
  }();
  auto D = Index.find(Domain);
  if (D == Index.end())
    return nullptr;
  auto It = D->second.find(OpType);
  if (It == D->second.end())
    return nullptr;
  E = {OpType.data(), D->first(), It->first(), It->second};
  return It->second;
}

llvm::ArrayRef<OpRule> ridge::allOpRules() { return Rules; }

namespace {
OpClass classify(const OpRule &Rule) {
  CostRuleFn F = Rule.Fn;
  // Families of the table: the templated unary/binary rows are element-wise.
#define RIDGE_UNARY(D, Op, Fl, T, BF, BT, S)                                   \
  if (F == unaryT<Fl, T, BF, BT, Save::S>)                                     \
    return OpClass::ElementWise;
#define RIDGE_BINARY(D, Op, Fl, T, BFA, BFB, BT, SA, SB, In)                   \
  if (F == binaryT<Fl, T, BFA, BFB, BT, Save::SA, Save::SB>)                   \
    return OpClass::ElementWise;
#include "passes/cost/OpCosts.def"
  for (CostRuleFn E : {unaryNoGrad, compareNoGrad, quantize, where, cast, dropout, trilu, clip,
                       biasGelu, fastGelu, geluOnnx})
    if (F == E)
      return OpClass::ElementWise;
  for (CostRuleFn N : {batchNorm, instanceNorm, layerNorm, groupNorm, rmsNorm, skipLayerNorm,
                       skipRmsNorm, meanVarianceNorm, lpNorm, softmax, logSoftmax})
    if (F == N)
      return OpClass::Normalization;
  if (F == view)
    return OpClass::View;
  for (CostRuleFn X : {matmul, gemm, einsum, conv, convTranspose, qlinearMatmul, qlinearConv})
    if (F == X)
      return OpClass::Matrix;
  return OpClass::Other;
}
} // namespace

OpClass ridge::opClass(const OpRule &Rule) {
  // Classified once per row of the table, not per query.
  static const std::vector<OpClass> Classes = [] {
    std::vector<OpClass> C;
    for (const OpRule &R : Rules)
      C.push_back(classify(R));
    return C;
  }();
  std::less<const OpRule *> Before;
  if (Before(&Rule, std::begin(Rules)) || !Before(&Rule, std::end(Rules)))
    return classify(Rule); // not a row of the table
  return Classes[size_t(&Rule - std::begin(Rules))];
}

namespace {

/// Out's counts from the rule's (N's): numbers into its numbers, formulas
/// into Out.Sym; unmodeled when an operation had no exact formula.
void store(const Node &N, RuleCost &RC, const sym::CountScope &Scope, NodeCost &Out) {
  const Count *All[] = {&RC.Fwd.Flops, &RC.Fwd.Macs, &RC.Fwd.Transcendentals, &RC.Fwd.Bytes,
                        &RC.Bwd.Flops, &RC.Bwd.Macs, &RC.Bwd.Transcendentals, &RC.Bwd.Bytes,
                        &RC.SavedBytes};
  bool Formula = false, Unknown = Scope.failed();
  for (const Count *X : All) {
    Formula |= X->isFormula();
    Unknown |= X->isUnknown();
  }
  for (const Value *V : RC.Saved)
    Out.keepSaved(V);
  if (Unknown) {
    Out.setUnmodeled("no exact formula until the symbols are bound: " +
                     (Scope.failed() ? Scope.reason() : std::string("a count is unknown")));
    return;
  }
  if (Formula) {
    Out.Sym.emplace(SymbolicCost{RC.Fwd, RC.Bwd, RC.SavedBytes});
    return;
  }
  auto Numbers = [](const PhaseCount &P) {
    return PhaseCost{P.Flops.number(), P.Macs.number(), P.Transcendentals.number(),
                     P.Bytes.number()};
  };
  Out.Fwd = Numbers(RC.Fwd);
  Out.Bwd = Numbers(RC.Bwd);
  Out.setSavedBytes(RC.SavedBytes.number());
}

} // namespace

namespace {
/// A node may list fewer operands than its op requires (the loader does not
/// check arity against the schema, whose registry costs more to build than
/// the lean import of a graph): that is unmodeled, with the operand named,
/// never a rule reading through an absent value.
bool givesRequiredOperands(const OpRule &Rule, const Node &N, RuleCost &Out) {
  auto Check = [&](uint32_t Required, bool Inputs) {
    for (unsigned I = 0; I < 32 && Required >> I; ++I)
      if ((Required >> I & 1) && !(Inputs ? N.input(I) : N.output(I))) {
        unmodeled(Out, llvm::formatv("{0} needs {1} {2}, which the node does not give",
                                     N.OpType, Inputs ? "input" : "output", I));
        return false;
      }
    return true;
  };
  return Check(Rule.RequiredInputs, true) && Check(Rule.RequiredOutputs, false);
}
} // namespace

void ridge::applyRule(const OpRule &Rule, const CostContext &C, NodeCost &Out) {
  bool ShapeFree = Rule.Fn == view || Rule.Fn == metadata || Rule.Fn == controlFlow;
  RuleCost RC;
  sym::CountScope Scope;
  if (!givesRequiredOperands(Rule, C.N, RC) || (!ShapeFree && !requireShapes(C, RC))) {
    Out.setUnmodeled(RC.Unmodeled.str());
    return;
  }
  Rule.Fn(C, RC);
  if (!RC.Unmodeled.empty()) {
    Out.setUnmodeled(RC.Unmodeled.str());
    return;
  }
  store(C.N, RC, Scope, Out);
}
