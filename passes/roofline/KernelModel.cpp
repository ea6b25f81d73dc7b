//===- KernelModel.cpp - How the libraries run each op, kernel by kernel --===//
#include "passes/roofline/KernelModel.h"
#include "passes/roofline/Roofline.h"
#include <algorithm>
#include <cmath>

using namespace ridge;

const char *ridge::limitName(Limit L) {
  switch (L) {
  case Limit::None: return "-";
  case Limit::Compute: return "compute";
  case Limit::Waves: return "waves";
  case Limit::Tiles: return "tiles";
  case Limit::KDepth: return "k-depth";
  case Limit::Bandwidth: return "bandwidth";
  case Limit::Latency: return "latency";
  case Limit::Launch: return "launch";
  case Limit::Recurrence: return "recurrence";
  case Limit::Vector: return "vector";
  }
  return "?";
}

Limit PhaseKernels::why() const {
  const KernelTime *Top = nullptr;
  for (const KernelTime &K : Kernels)
    if (!Top || K.Seconds > Top->Seconds)
      Top = &K;
  return Top ? Top->Why : Limit::None;
}

const kernels::Constants &kernels::constants() {
  static const Constants C;
  return C;
}

namespace {

struct Tile {
  double A, B;
};
// Output tiles (rows x columns of C per thread block) the libraries choose
// among, largest first: cuBLAS/CUTLASS SIMT SGEMM tiles top out at 128x128,
// tensor-core tiles at 256x128 (CUTLASS's default and cuBLAS's largest
// Volta-to-Hopper HMMA tiles). Both orientations are listed.
const Tile SimtTiles[] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}, {128, 32},
                          {32, 128},  {64, 32},  {32, 64},  {32, 32}};
const Tile TensorTiles[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64},
                            {64, 128},  {64, 64},   {64, 32},   {32, 64}};

double reuse(const Tile &T) { return T.A * T.B / (T.A + T.B); }

/// One tiling and split of a product, timed.
struct Candidate {
  double Seconds = INFINITY;
  double Compute = 0, Memory = 0;
  double WaveLoss = 1, TileLoss = 1, KLoss = 1;
  double Launches = 1; ///< a split K's reduction is a second kernel
};

Candidate timeTiling(const GemmShape &S, const Tile &T, double Eff, double E,
                     double Split, const MathUnit &U, unsigned SMs, double ElemBytes,
                     double BBytes, double Bandwidth, double Overhead) {
  const kernels::Constants &K = kernels::constants();
  Candidate C;
  double Conc = std::clamp(std::floor(128 * 128 / (T.A * T.B)), 1.0, 4.0);
  double RowTiles = std::ceil(S.M / T.A), ColTiles = std::ceil(S.N / T.B);
  double Tiles = RowTiles * ColTiles * S.Batch * Split;
  double Waves = std::ceil(Tiles / (SMs * Conc));
  double KSlice = S.K / Split;
  C.Compute = Waves * Conc * 2 * T.A * T.B * (KSlice + K.K0) / (U.PeakPerSM * Eff);
  double Beta = Bandwidth * K.MemEff;
  C.Memory = ((S.M * S.K + S.M * S.N) * ElemBytes + S.K * S.N * BBytes) * S.Batch / Beta;
  // A split K writes Split partial results in fp32 and reduces them.
  double Reduce = Split > 1 ? Split * S.M * S.N * S.Batch * 4 * 2 / Beta + Overhead : 0;
  C.Launches = Split > 1 ? 2 : 1;
  C.Seconds = std::max(C.Compute, C.Memory) + Reduce;
  C.WaveLoss = Waves * SMs * Conc / Tiles;
  C.TileLoss = RowTiles * T.A * ColTiles * T.B / (S.M * S.N) * (E / Eff);
  C.KLoss = (KSlice + K.K0) / KSlice;
  return C;
}

/// The effect that costs a compute-bound candidate most, or Compute when
/// none costs more than 10%.
Limit largestLoss(const Candidate &C) {
  double Worst = std::max({C.WaveLoss, C.TileLoss, C.KLoss});
  if (Worst < 1.1)
    return Limit::Compute;
  if (Worst == C.WaveLoss)
    return Limit::Waves;
  return Worst == C.TileLoss ? Limit::Tiles : Limit::KDepth;
}

} // namespace

KernelTime kernels::gemm(const char *Name, const GemmShape &S, const MathUnit &U,
                         unsigned SMs, double ElemBytes, double Bandwidth,
                         double Overhead, double Launch, double BBytes) {
  const Constants &K = constants();
  if (BBytes < 0)
    BBytes = ElemBytes;
  KernelTime Out;
  Out.Name = Name;
  if (!(S.M > 0 && S.N > 0 && S.K > 0 && S.Batch > 0) || SMs == 0 || !(U.PeakPerSM > 0))
    return Out;
  llvm::ArrayRef<Tile> Tiles = U.Tensor ? llvm::ArrayRef<Tile>(TensorTiles)
                                        : llvm::ArrayRef<Tile>(SimtTiles);
  double R0 = U.Tensor ? K.ReuseTensor : K.ReuseSimt;
  double Largest = reuse(Tiles.front()) / (reuse(Tiles.front()) + R0);
  Candidate Best;
  for (const Tile &T : Tiles) {
    double Eff = U.Efficiency * (reuse(T) / (reuse(T) + R0)) / Largest;
    for (double Split = 1; Split <= K.MaxSplit; Split *= 2) {
      if (Split > 1 && S.K / Split < K.SplitMinK)
        break;
      Candidate C = timeTiling(S, T, Eff, U.Efficiency, Split, U, SMs, ElemBytes, BBytes,
                               Bandwidth, Overhead);
      if (C.Seconds < Best.Seconds)
        Best = C;
    }
  }
  // A product with a single row or column runs as a matrix-vector kernel:
  // no tile padding, the operand stream at the bandwidth.
  if (std::min(S.M, S.N) == 1) {
    Candidate V;
    V.Compute = 2 * S.M * S.N * S.K * S.Batch / (U.PeakPerSM * SMs * U.Efficiency);
    V.Memory = ((S.M * S.K + S.M * S.N) * ElemBytes + S.K * S.N * BBytes) * S.Batch /
               (Bandwidth * K.MemEff);
    V.Seconds = std::max(V.Compute, V.Memory);
    if (V.Seconds < Best.Seconds)
      Best = V;
  }
  Out.Seconds = Best.Seconds + Overhead;
  Out.Count = Best.Launches;
  Out.Why = Launch > Best.Seconds        ? Limit::Launch
            : Best.Memory > Best.Compute ? Limit::Bandwidth
                                         : largestLoss(Best);
  return Out;
}

KernelTime kernels::streaming(const char *Name, const PhaseCost &P, const Device &D,
                              DType T, const Config &Cfg, const PhaseTime *Given) {
  // The roofline's own terms (rates, efficiency curves, --no-overlap), plus
  // the DRAM latency before the first bytes arrive.
  KernelTime Out;
  Out.Name = Name;
  PhaseTime Roof = Given ? *Given : placeOnDevice(P, D, T, Cfg);
  if (!(Roof.Seconds > 0))
    return Out; // a view or metadata op launches no kernel
  double Work = Roof.Seconds - D.perKernelOverhead();
  double Latency = P.Bytes > 0 ? constants().DramLatency : 0;
  Out.Seconds = Roof.Seconds + Latency;
  Out.Why = Roof.B == Bound::Launch                   ? Limit::Launch
            : Latency > Work                          ? Limit::Latency
            : Roof.B == Bound::Memory                 ? Limit::Bandwidth
                                                      : Limit::Vector;
  return Out;
}

bool ridge::hasKernelModel(const Device &D, const Config &Cfg) {
  // (As a StringRef: std::string == const char * took a strlen and a
  // compare call for each phase of each node.)
  return llvm::StringRef(D.Kind) == "gpu" && D.ComputeUnits > 0 && !Cfg.RooflineTimes;
}

MathUnit ridge::mathUnit(const Device &D, DType T, const Config &Cfg) {
  MathUnit U;
  double SMs = std::max(1u, D.ComputeUnits);
  bool Tf32 = T == DType::Float && Cfg.TF32 && D.Tf32Flops > 0;
  U.Tensor = Tf32 ? D.Tf32MatrixUnits : D.hasMatrixUnits(T);
  double Peak = Tf32 ? D.Tf32Flops : D.matrixPeak(T);
  // A 16-bit float product with no tensor cores for its type accumulates
  // in fp32 on the CUDA cores: the libraries' default compute type for
  // half and bfloat16 data (cublasGemmEx with CUBLAS_COMPUTE_32F, as torch
  // calls it; cuDNN's PSEUDO_HALF_CONFIG), at the fp32 rate whatever the
  // datasheet's half2 or 1/64-rate fp16 figure. Its operands stay 16-bit.
  if (!U.Tensor && (T == DType::Float16 || T == DType::BFloat16))
    Peak = D.matrixPeak(DType::Float);
  U.PeakPerSM = Peak / SMs;
  U.Efficiency = U.Tensor || D.EffSimt <= 0 ? D.EffCompute : D.EffSimt;
  return U;
}

namespace {

/// V's shape when fully known (the kernel rules need numbers), else null.
const Shape *knownShape(const Value *V) {
  return V && V->hasKnownShape() ? &*V->Shp : nullptr;
}

/// The CUDA-core unit, for products tensor cores cannot take.
MathUnit simtUnit(const Device &D) {
  MathUnit U;
  U.PeakPerSM = D.matrixPeak(DType::Float) / std::max(1u, D.ComputeUnits);
  U.Efficiency = D.EffSimt > 0 ? D.EffSimt : D.EffCompute;
  return U;
}

/// Everything a node's kernel rules need.
struct KernelContext {
  const NodeCost &NC;
  const Device &D;
  DType T;
  const Config &Cfg;
  MathUnit Unit;
  double Elem;    ///< bytes per element of the product's operands
  GemmMemo *Memo; ///< may be null

  KernelTime gemm(const char *Name, GemmShape S, const MathUnit *U = nullptr) const {
    return memoGemm(Name, S, U ? *U : Unit, D, Elem, Memo);
  }
  const Shape *shape(unsigned I) const { return knownShape(NC.N->input(I)); }
  const Shape *outShape() const { return knownShape(NC.N->output(0)); }
};

double dim(const Shape &S, int I) {
  return double(S.Dims[I < 0 ? S.rank() + I : I].extent());
}

/// com.microsoft MatMulNBits (A [..., K] x packed int4 B [N, K], inference):
/// one GEMM of the flattened rows, M = A's rows, whose B stream is the
/// weight as stored (packed bits, scales, zero points) and whose math runs
/// at the activations' rate (each weight dequantized in the kernel, as
/// ONNX Runtime's and the W4A16 kernels do).
bool nbitsKernels(const KernelContext &C, bool Bwd, PhaseKernels &Out) {
  const Node &N = *C.NC.N;
  int64_t K = N.attrInt("K", 0), Nn = N.attrInt("N", 0);
  const Shape *A = C.shape(0);
  if (Bwd || K <= 0 || Nn <= 0 || !A || A->rank() == 0)
    return false;
  double Rows = 1;
  for (size_t I = 0; I + 1 < A->rank(); ++I)
    Rows *= dim(*A, int(I));
  double Stored = 0;
  for (unsigned I = 1; I < N.Inputs.size() && I <= 3; ++I) // weight, scales, zero points
    if (const Value *V = N.input(I))
      if (std::optional<double> E = V->numElements())
        Stored += *E * dtypeBytes(V->Elem);
  if (!(Stored > 0))
    return false;
  Out.Kernels.push_back(memoGemm("gemm (int weights)", {1, Rows, double(Nn), double(K)}, C.Unit,
                                 C.D, C.Elem, C.Memo, Stored / (double(K) * double(Nn))));
  return true;
}

/// MatMul/Gemm: productPhase of its shape.
bool productKernels(const KernelContext &C, bool Bwd, PhaseKernels &Out) {
  std::optional<GemmShape> Shape = productShape(*C.NC.N);
  if (!Shape)
    return false;
  PhaseKernels P = productPhase(*Shape, Bwd, C.NC.inputNeedsGrad(0), C.NC.inputNeedsGrad(1),
                                C.Unit, C.D, C.Elem, C.Memo);
  Out.Kernels.append(P.Kernels.begin(), P.Kernels.end());
  return true;
}

} // namespace

KernelTime ridge::memoGemm(const char *Name, const GemmShape &S, const MathUnit &U,
                           const Device &D, double Elem, GemmMemo *Memo, double BBytes) {
  if (!Memo)
    return kernels::gemm(Name, S, U, D.ComputeUnits, Elem, D.MemBandwidth,
                         D.perKernelOverhead(), D.LaunchOverhead, BBytes);
  GemmMemo::Key K{S.Batch, S.M, S.N, S.K, U.PeakPerSM, U.Efficiency, double(U.Tensor), Elem,
                  BBytes};
  auto [It, New] = Memo->Times.try_emplace(K);
  if (New)
    It->second = kernels::gemm(Name, S, U, D.ComputeUnits, Elem, D.MemBandwidth,
                               D.perKernelOverhead(), D.LaunchOverhead, BBytes);
  KernelTime T = It->second;
  T.Name = Name;
  return T;
}

GemmShape ridge::splitShape(GemmShape S, TPSplit How, double T) {
  if (How == TPSplit::Columns)
    S.N /= T;
  else if (How == TPSplit::Rows)
    S.K /= T;
  else if (How == TPSplit::Other)
    (S.Batch >= T ? S.Batch : S.M) /= T;
  return S;
}

ConvGeometry ridge::splitShape(ConvGeometry G, TPSplit How, double T) {
  bool Channels = How == TPSplit::Columns || How == TPSplit::Rows;
  if (Channels && G.Groups > 1) {
    G.Groups /= T;
    G.Cin /= T;
    G.Cout /= T;
  } else if (How == TPSplit::Columns) {
    G.Cout /= T;
  } else if (How == TPSplit::Rows) {
    G.Cin /= T;
  } else if (How == TPSplit::Other) {
    G.Batch /= T;
  }
  return G;
}

PhaseKernels ridge::productPhase(const GemmShape &S, bool Bwd, bool GradA, bool GradB,
                                 const MathUnit &U, const Device &D, double Elem,
                                 GemmMemo *Memo) {
  PhaseKernels Out;
  if (!Bwd) {
    Out.Kernels.push_back(memoGemm("gemm", S, U, D, Elem, Memo));
    return Out;
  }
  if (GradA)
    Out.Kernels.push_back(memoGemm("gemm dA", {S.Batch, S.M, S.K, S.N}, U, D, Elem, Memo));
  if (GradB)
    Out.Kernels.push_back(memoGemm("gemm dB", {S.Batch, S.K, S.N, S.M}, U, D, Elem, Memo));
  return Out;
}

namespace {

/// productShape's steps over a number type T: Dims(S, I) gives dim I of S
/// (negative from the back), Full(V) the shape when it has one.
template <typename T, typename FullFn, typename DimFn>
std::optional<std::array<T, 4>> productDimsOf(const Node &N, FullFn Full, DimFn Dims) {
  if (!N.Domain.empty() || (N.OpType != "MatMul" && N.OpType != "Gemm"))
    return std::nullopt;
  const Shape *A = Full(N.input(0)), *B = Full(N.input(1)), *Y = Full(N.output(0));
  if (!A || !B || !Y || A->rank() == 0 || B->rank() == 0)
    return std::nullopt;
  T K = Dims(*A, -1);
  T M = A->rank() >= 2 ? Dims(*A, -2) : T(1);
  T Nn = B->rank() >= 2 ? Dims(*B, -1) : T(1);
  if (N.OpType == "Gemm") {
    if (N.attrInt("transA", 0))
      std::swap(M, K);
    if (N.attrInt("transB", 0))
      Nn = Dims(*B, 0);
  }
  T YElems = 1;
  for (size_t I = 0; I < Y->rank(); ++I)
    YElems *= Dims(*Y, int(I));
  using std::max;
  T Batch = M * Nn > T(0) ? max(T(1), YElems / (M * Nn)) : T(1);
  // A weight shared by the batch (B of rank 2, as a Linear layer's): one
  // product of the flattened rows, M = batch * M, as torch and ONNX Runtime
  // call it; the weight is read once, not once per batch entry.
  if (B->rank() <= 2 && N.OpType == "MatMul") {
    M *= Batch;
    Batch = 1;
  }
  return std::array<T, 4>{Batch, M, Nn, K};
}

} // namespace

std::optional<GemmShape> ridge::productShape(const Node &N) {
  auto D = productDimsOf<double>(N, knownShape, [](const Shape &S, int I) { return dim(S, I); });
  if (!D)
    return std::nullopt;
  return GemmShape{(*D)[0], (*D)[1], (*D)[2], (*D)[3]};
}

std::optional<std::array<sym::Count, 4>> ridge::productDims(const Node &N) {
  auto Determined = [](const Value *V) -> const Shape * {
    return V && V->Shp && V->Shp->isDetermined() ? &*V->Shp : nullptr;
  };
  sym::CountScope Scope;
  auto D = productDimsOf<sym::Count>(N, Determined, [](const Shape &S, int I) {
    const Dim &X = S.Dims[I < 0 ? S.rank() + I : size_t(I)];
    return X.isKnown() ? sym::Count(double(X.extent())) : sym::Count::of(X.expr());
  });
  if (!D || Scope.failed())
    return std::nullopt;
  for (const sym::Count &C : *D)
    if (C.isUnknown())
      return std::nullopt;
  return D;
}

namespace {

/// Conv as implicit GEMMs (see the header), from its shapes.
bool convKernels(const KernelContext &C, bool Bwd, PhaseKernels &Out) {
  std::optional<ConvGeometry> G = convGeometry(*C.NC.N);
  if (!G)
    return false;
  ConvGrads Grads{C.NC.inputNeedsGrad(0), C.NC.inputNeedsGrad(1), C.NC.inputNeedsGrad(2)};
  Out = convPhase(*G, Bwd, Grads, Bwd ? C.NC.Bwd : C.NC.Fwd, C.D, C.T, C.Cfg, C.Unit, C.Elem,
                  C.Memo);
  return true;
}

/// LSTM/GRU/RNN (see the header), from its shapes.
bool recurrentKernels(const KernelContext &C, bool Bwd, PhaseKernels &Out) {
  std::optional<RecurrentGeometry> G = recurrentGeometry(*C.NC.N);
  if (!G)
    return false;
  RecurrentGrads Grads{C.NC.inputNeedsGrad(0), C.NC.inputNeedsGrad(1), C.NC.inputNeedsGrad(2)};
  Out = recurrentPhase(*G, Bwd, Grads, C.D, C.Unit, C.Elem, C.Memo);
  return true;
}

} // namespace

std::optional<ConvGeometry> ridge::convGeometry(const Node &N, bool BatchKnown) {
  if (!N.Domain.empty() || N.OpType != "Conv")
    return std::nullopt;
  const Value *XV = N.input(0), *WV = N.input(1), *YV = N.output(0);
  const Shape *W = knownShape(WV);
  if (!W || !XV || !YV || !XV->Shp || !YV->Shp)
    return std::nullopt;
  const Shape &X = *XV->Shp, &Y = *YV->Shp;
  if (X.rank() < 3 || W->rank() != X.rank() || Y.rank() != X.rank())
    return std::nullopt;
  // Every dim known but the batch (X's and Y's dim 0), which BatchKnown
  // asks for too.
  for (const Shape *S : {&X, &Y})
    for (size_t I = BatchKnown ? 0 : 1; I < S->rank(); ++I)
      if (!S->Dims[I].isKnown())
        return std::nullopt;
  size_t Sp = X.rank() - 2;
  ConvGeometry G;
  G.Batch = X.Dims[0].isKnown() ? dim(X, 0) : -1;
  G.Cin = dim(X, 1);
  G.Cout = dim(*W, 0);
  G.Groups = double(N.attrInt("group", 1));
  if (!(G.Groups >= 1))
    return std::nullopt;
  G.Winograd = Sp == 2 && G.Groups == 1;
  llvm::ArrayRef<int64_t> StrideAttr = N.attrInts("strides").value_or(llvm::ArrayRef<int64_t>());
  llvm::ArrayRef<int64_t> DilationAttr =
      N.attrInts("dilations").value_or(llvm::ArrayRef<int64_t>());
  for (size_t I = 0; I < Sp; ++I) {
    G.InPix *= dim(X, 2 + I);
    G.OutPix *= dim(Y, 2 + I);
    G.Taps *= dim(*W, 2 + I);
    double St = I < StrideAttr.size() ? double(StrideAttr[I]) : 1;
    double Dl = I < DilationAttr.size() ? double(DilationAttr[I]) : 1;
    G.Strides *= St;
    G.Winograd &= dim(*W, 2 + I) == 3 && St == 1 && Dl == 1;
  }
  return G;
}

PhaseKernels ridge::convPhase(const ConvGeometry &G, bool Bwd, const ConvGrads &Grads,
                              const PhaseCost &Streaming, const Device &D, DType T,
                              const Config &Cfg, const MathUnit &DefaultUnit, double Elem,
                              GemmMemo *Memo) {
  const kernels::Constants &K = kernels::constants();
  PhaseKernels Out;
  double Batch = G.Batch, Cin = G.Cin, Cout = G.Cout, Groups = G.Groups;
  double InPix = G.InPix, OutPix = G.OutPix, Taps = G.Taps, Strides = G.Strides;
  bool Winograd = G.Winograd && Cfg.Winograd;
  double CinG = Cin / Groups, CoutG = Cout / Groups;
  // Depthwise: one input channel per group, no reuse to tile.
  if (CinG == 1 && Groups > 1) {
    Out.Kernels.push_back(kernels::streaming(Bwd ? "depthwise conv backward" : "depthwise conv",
                                             Streaming, D, T, Cfg));
    return Out;
  }
  // Tensor cores take channel counts in multiples of 8 (NVIDIA, "Deep
  // Learning Performance Guide: convolutional layers"); others run on CUDA cores.
  MathUnit Unit = DefaultUnit;
  if (Unit.Tensor && (std::fmod(CinG, 8) != 0 || std::fmod(CoutG, 8) != 0))
    Unit = simtUnit(D);
  auto Gemm = [&](const char *Name, const GemmShape &S) {
    return memoGemm(Name, S, Unit, D, Elem, Memo);
  };
  auto Scaled = [&](KernelTime Kt, double Eff) {
    double Overhead = D.perKernelOverhead();
    Kt.Seconds = (Kt.Seconds - Overhead) / Eff + Overhead;
    return Kt;
  };
  // Winograd F(4x4, 3x3): fewer multiplies, plus transforms of the input and
  // output tensors (read and written once more each).
  double Transform =
      (Batch * Cin * InPix + Batch * Cout * OutPix) * Elem * 2 / (D.MemBandwidth * K.MemEff);
  // In the Winograd domain the filter taps shrink: the forward's and data
  // gradient's reduction (K = C*R*S), the filter gradient's output columns
  // (N = C*R*S; cuDNN's WINOGRAD_NONFUSED filter-gradient algorithm).
  auto WithWinograd = [&](KernelTime Direct, GemmShape S, double GemmShape::*TapsDim,
                          double Eff, const char *Name) {
    if (!Winograd)
      return Direct;
    S.*TapsDim /= K.WinogradGain;
    KernelTime W = Scaled(Gemm(Name, S), Eff * K.WinogradEff);
    W.Seconds += Transform;
    return W.Seconds < Direct.Seconds ? W : Direct;
  };
  if (!Bwd) {
    GemmShape S{Groups, Batch * OutPix, CoutG, CinG * Taps};
    Out.Kernels.push_back(WithWinograd(Scaled(Gemm("conv fwd", S), K.ConvEff), S,
                                       &GemmShape::K, K.ConvEff, "conv fwd (Winograd)"));
    return Out;
  }
  if (Grads.X) {
    // The data gradient: each input pixel gathers the taps that reach it.
    GemmShape S{Groups, Batch * InPix, CinG, std::max(CoutG, CoutG * Taps / Strides)};
    Out.Kernels.push_back(WithWinograd(Scaled(Gemm("conv dgrad", S), K.ConvEff * K.DgradEff),
                                       S, &GemmShape::K, K.ConvEff, "conv dgrad (Winograd)"));
  }
  if (Grads.W) {
    double Eff = K.ConvEff * K.WgradEff * (Unit.Tensor ? K.WgradTensorEff : 1);
    GemmShape S{Groups, CoutG, CinG * Taps, Batch * OutPix};
    Out.Kernels.push_back(WithWinograd(Scaled(Gemm("conv wgrad", S), Eff), S, &GemmShape::N,
                                       Eff, "conv wgrad (Winograd)"));
  }
  if (Grads.Bias) {
    PhaseCost Bias{Batch * Cout * OutPix, 0, 0, (Batch * Cout * OutPix + Cout) * Elem};
    Out.Kernels.push_back(kernels::streaming("conv bias grad", Bias, D, T, Cfg));
  }
  return Out;
}

std::optional<RecurrentGeometry> ridge::recurrentGeometry(const Node &N, bool BatchKnown) {
  if (!N.Domain.empty())
    return std::nullopt;
  double Gates = N.OpType == "LSTM" ? 4 : N.OpType == "GRU" ? 3 : N.OpType == "RNN" ? 1 : 0;
  if (Gates == 0)
    return std::nullopt;
  const Value *XV = N.input(0);
  const Shape *W = knownShape(N.input(1));
  if (!XV || !XV->Shp || !W || XV->Shp->rank() != 3 || W->rank() != 3)
    return std::nullopt;
  const Shape &X = *XV->Shp;
  bool BatchFirst = N.attrInt("layout", 0) == 1;
  size_t BatchAxis = BatchFirst ? 0 : 1, StepAxis = BatchFirst ? 1 : 0;
  // Every dim known but the batch, which BatchKnown asks for too.
  for (size_t I = 0; I < 3; ++I)
    if ((BatchKnown || I != BatchAxis) && !X.Dims[I].isKnown())
      return std::nullopt;
  RecurrentGeometry G;
  G.Steps = dim(X, StepAxis);
  G.Batch = X.Dims[BatchAxis].isKnown() ? dim(X, BatchAxis) : -1;
  G.Input = dim(X, 2);
  G.Dirs = dim(*W, 0);
  G.Gates = Gates;
  G.Hidden = double(N.attrInt("hidden_size", int64_t(dim(*W, 1) / Gates)));
  return G;
}

PhaseKernels ridge::recurrentPhase(const RecurrentGeometry &G, bool Bwd,
                                   const RecurrentGrads &Grads, const Device &D,
                                   const MathUnit &Unit, double Elem, GemmMemo *Memo) {
  const kernels::Constants &K = kernels::constants();
  PhaseKernels Out;
  double T = G.Steps, B = G.Batch, I = G.Input, Dirs = G.Dirs, H = G.Hidden;
  double GH = G.Gates * H, Launch = D.LaunchOverhead, Overhead = D.perKernelOverhead();
  auto Gemm = [&](const char *Name, const GemmShape &S) {
    return memoGemm(Name, S, Unit, D, Elem, Memo);
  };
  // One step: the recurrent product, slower than a plain GEMM of its shape
  // (the dependency leaves no time to stage operands), the gates'
  // element-wise kernel, and the step's synchronization: two launches.
  double Gate = K.GatePasses * B * GH * Elem / (D.MemBandwidth * K.MemEff) + Overhead;
  auto Recurrence = [&](const char *Name, GemmShape S) {
    KernelTime Step = Gemm(Name, S);
    double Product = (Step.Seconds - Overhead) / K.RecurrentEff + Overhead;
    KernelTime Steps;
    Steps.Name = Name;
    Steps.Count = 2 * T * Dirs;
    Steps.Seconds = T * Dirs * (Product + Gate + K.StepSync);
    double Floor = 2 * Launch + K.StepSync;
    Steps.Why = Floor > Product + Gate - 2 * Overhead ? Limit::Launch
                : Step.Why == Limit::Compute        ? Limit::Recurrence
                                                    : Step.Why;
    return Steps;
  };
  if (!Bwd) {
    Out.Kernels.push_back(Gemm("input projection", {Dirs, T * B, GH, I}));
    Out.Kernels.push_back(Recurrence("recurrence", {1, B, GH, H}));
    return Out;
  }
  Out.Kernels.push_back(Recurrence("recurrence backward", {1, B, H, GH}));
  if (Grads.X)
    Out.Kernels.push_back(Gemm("input gradient", {Dirs, T * B, I, GH}));
  if (Grads.W)
    Out.Kernels.push_back(Gemm("dW (input weights)", {Dirs, GH, I, T * B}));
  if (Grads.R)
    Out.Kernels.push_back(Gemm("dR (recurrent weights)", {Dirs, GH, H, T * B}));
  return Out;
}

PhaseKernels ridge::nodeKernels(const NodeCost &NC, bool Bwd, const Device &D, DType T,
                                const Config &Cfg, GemmMemo *Memo, const PhaseTime *Roof) {
  PhaseKernels Out;
  const PhaseCost &P = Bwd ? NC.Bwd : NC.Fwd;
  if (!NC.Modeled || (Bwd && !NC.NeedsBackward))
    return Out;
  bool NBits = NC.N->Domain == "com.microsoft" && NC.N->OpType == "MatMulNBits";
  if (hasKernelModel(D, Cfg) && (NC.N->Domain.empty() || NBits)) {
    // Operands at the cost model's widths: --dtype for floating tensors.
    const Value *V0 = NC.N->input(0);
    double Elem = V0 ? dtypeBytes(V0->Elem) : 4;
    if (V0 && isFloatingPoint(V0->Elem) && Cfg.ComputeDType)
      Elem = dtypeBytes(*Cfg.ComputeDType);
    KernelContext C{NC, D, T, Cfg, mathUnit(D, T, Cfg), Elem, Memo};
    llvm::StringRef Op = NC.N->OpType;
    bool Done = false;
    if (NBits)
      Done = nbitsKernels(C, Bwd, Out);
    else if (Op == "MatMul" || Op == "Gemm")
      Done = productKernels(C, Bwd, Out);
    else if (Op == "Conv")
      Done = convKernels(C, Bwd, Out);
    else if (Op == "LSTM" || Op == "GRU" || Op == "RNN")
      Done = recurrentKernels(C, Bwd, Out);
    // A Gemm's bias and scaling run in the product kernels' epilogue.
    if (Done)
      return Out;
  }
  KernelTime K = kernels::streaming(Bwd ? "backward" : "forward", P, D, T, Cfg, Roof);
  if (K.Seconds > 0)
    Out.Kernels.push_back(K);
  return Out;
}
