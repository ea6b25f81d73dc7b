//===- KernelModel.h - How the libraries run each op, kernel by kernel -*- C++ -*-===//
//
// The roofline (laws.md section 3) bounds an op's rate; this model predicts
// it from how cuBLAS/cuDNN-style libraries execute the op on a GPU with
// `cores.count` streaming multiprocessors:
//
//   matrix product C[M,N] += A[M,K] B[K,N]: the library tiles C into a x b
//     tiles (one thread block each), runs them in waves of SMs x blocks per
//     SM, and may split K to fill the machine. For each candidate tiling
//       waves    = ceil(ceil(M/a) * ceil(N/b) * batch * split / (SMs * conc))
//       time     = waves * conc * 2ab(K/split + k0) / (pi_SM * eff(a,b))
//                  (+ the split's reduction), at least the operand traffic
//                  (MK + KN + MN) * bytes / beta
//     and the fastest candidate wins, as the library's heuristic picks.
//     eff(a,b) = E * r/(r + r0) / (rL/(rL + r0)), r = ab/(a+b) the tile's
//     operand reuse and rL that of the largest tile: a large product on the
//     largest tile runs at E = the device's `efficiency.compute` (tensor
//     cores) or `efficiency.simt` (CUDA cores).
//   convolution: implicit GEMMs, forward (M = N*P*Q, N = K, K = C*R*S), data
//     gradient (M = N*H*W, N = C, K = K*R*S/(strides)) and filter gradient
//     (M = K, N = C*R*S, K = N*P*Q), each with its own quantization; 3x3
//     stride-1 forward, data gradient and filter gradient may run as
//     Winograd (R*S taps shrink by the gain; transforms of the input and
//     output add traffic; cuDNN's WINOGRAD and WINOGRAD_NONFUSED forward,
//     backward-data and backward-filter algorithms); tensor cores need channel
//     counts that are multiples of 8, else CUDA cores run it.
//   recurrent layers: the input projection batched over T, then T dependent
//     steps, each a small GEMM of the recurrent weights plus the gates'
//     element-wise kernel and a step's synchronization; backward the same
//     through time, and the weight gradients as GEMMs over T*batch.
//   everything else: a streaming kernel, time = its roofline time
//     (placeOnDevice: launch + max(bytes / beta, FLOPs / rate,
//     transcendentals / SFU rate)) + the DRAM latency of its first bytes.
//
// One set of constants (Constants below) serves every GPU; devices differ
// only by their facts (SMs, peaks, bandwidth, efficiency of a large GEMM).
// validate/deepbench_validate.py checks the model against DeepBench's
// measured kernels on four GPUs.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_ROOFLINE_KERNELMODEL_H
#define RIDGE_PASSES_ROOFLINE_KERNELMODEL_H

#include "analyzer/Config.h"
#include "analyzer/ir/IR.h"
#include "devices/Device.h"
#include "passes/cost/CostModel.h"
#include "llvm/ADT/SmallVector.h"
#include <array>
#include <map>

namespace ridge {

struct PhaseTime; // Roofline.h

/// What costs a kernel most against its ideal time at the large-GEMM rate.
enum class Limit : uint8_t {
  None,       ///< nothing runs
  Compute,    ///< runs at (about) the device's large-GEMM rate
  Waves,      ///< the last wave of thread blocks leaves SMs idle
  Tiles,      ///< tiles padded past the matrix edge, or small tiles' low reuse
  KDepth,     ///< a short K loop cannot hide its prologue and epilogue
  Bandwidth,  ///< operand or tensor traffic at the memory bandwidth
  Latency,    ///< a small transfer that does not reach the bandwidth
  Launch,     ///< the kernel launch floor
  Recurrence, ///< T dependent steps, each too small to fill the device
  Vector,     ///< element-wise arithmetic or special functions
};
const char *limitName(Limit L);

/// One kernel (or T identical steps of one) of an op's phase.
struct KernelTime {
  const char *Name = "";
  double Seconds = 0; ///< all Count launches together
  double Count = 1;   ///< launches (a recurrence's: two a step; a split K's: two)
  Limit Why = Limit::None;
};

/// The kernels of one phase of one op.
struct PhaseKernels {
  llvm::SmallVector<KernelTime, 2> Kernels;
  double seconds() const {
    double S = 0;
    for (const KernelTime &K : Kernels)
      S += K.Seconds;
    return S;
  }
  /// The kernels the host issues for the phase.
  double launches() const {
    double L = 0;
    for (const KernelTime &K : Kernels)
      L += K.Seconds > 0 ? K.Count : 0;
    return L;
  }
  /// The limit of the kernel that takes the most time.
  Limit why() const;
};

/// A matrix product's shape: Batch independent [M,K] x [K,N] products.
struct GemmShape {
  double Batch = 1, M = 0, N = 0, K = 0;
};

/// How a device multiplies in one dtype: the peak of the unit that runs the
/// product (tensor cores or CUDA cores), per SM, and E of that unit.
struct MathUnit {
  double PeakPerSM = 0;  ///< FLOP/s of one SM
  double Efficiency = 1; ///< E: fraction of peak the largest tile reaches
  bool Tensor = false;   ///< tensor cores (their tile set) or CUDA cores
};

namespace kernels {

/// The model's constants, one set for every GPU, each with its meaning.
/// Chosen once against DeepBench's four GPUs with validate/kernel_model_fit.py
/// (a Python mirror of this model); SplitMinK then lowered from the fit's 282
/// to 128, which the fit scores the same, as modern cuBLAS splits K (and
/// streams it on Hopper) well below that. ConvEff, WgradTensorEff,
/// RecurrentEff, StepSync and GatePasses re-chosen (2026-12-04) once the
/// GPU files issue kernels asynchronously (`kernel_gap`, devices/README.md):
/// a coordinate search of this C++ model against
/// validate/deepbench_validate.py, the GEMM constants held.
struct Constants {
  double K0 = 53;           ///< K-loop prologue + epilogue, in K elements
  double ReuseSimt = 6.3;   ///< r0 of CUDA-core tiles (shared-memory bound)
  double ReuseTensor = 23.5; ///< r0 of tensor-core tiles
  double SplitMinK = 128;   ///< no split of K below this many per slice
  double MaxSplit = 16;     ///< the largest split of K
  double ConvEff = 0.905;   ///< implicit GEMM vs a plain GEMM (im2col indexing)
  double DgradEff = 0.98;   ///< data gradient vs forward
  double WgradEff = 0.8;    ///< filter gradient (reduction over N*P*Q)
  double WgradTensorEff = 0.59; ///< more for tensor cores (NCHW transposes)
  double WinogradGain = 4.17;   ///< multiplies saved by Winograd on 3x3
  double WinogradEff = 0.6;     ///< its GEMMs' efficiency vs implicit GEMM
  double RecurrentEff = 0.316;  ///< a recurrent step's GEMM vs a plain one
  double StepSync = 2.5e-6;     ///< per step: the dependency's synchronization
  double GatePasses = 1.9;      ///< gate element-wise traffic, in passes over the gates
  double DramLatency = 0.6e-6;  ///< first bytes of a streaming kernel
  double MemEff = 0.92;         ///< bandwidth a GEMM's operand stream reaches
};
const Constants &constants();

/// Time of Shape on Unit (SMs SMs), ElemBytes per element, with the device's
/// bandwidth; each kernel adds Overhead (Device::perKernelOverhead) and is
/// launch-bound when its work is shorter than Launch (the host's time to
/// issue it). Name labels the kernel. BBytes: bytes per element of the B
/// operand when it is stored narrower (int4 weights with their scales,
/// dequantized in the kernel); ElemBytes when negative.
KernelTime gemm(const char *Name, const GemmShape &Shape, const MathUnit &Unit,
                unsigned SMs, double ElemBytes, double Bandwidth, double Overhead,
                double Launch, double BBytes = -1);

/// A streaming (memory-bound or element-wise) kernel: placeOnDevice's time
/// plus the DRAM latency when it moves bytes. Roof: that placeOnDevice
/// result, when the caller already has it.
KernelTime streaming(const char *Name, const PhaseCost &P, const Device &D,
                     DType T, const Config &Cfg, const PhaseTime *Roof = nullptr);

} // namespace kernels

/// Products already timed on one device, by shape, unit and element size: a
/// model repeats its layers' shapes, and each search tries every tiling.
class GemmMemo {
public:
  using Key = std::array<double, 9>;
  std::map<Key, KernelTime> Times;
};

/// The math unit Device D multiplies dtype T with (tensor cores when
/// D.MatrixUnitTypes lists T, or TF32 for fp32 with Cfg.TF32; else CUDA
/// cores, at the fp32 rate for fp16 and bf16, which the libraries sum in fp32).
MathUnit mathUnit(const Device &D, DType T, const Config &Cfg);

/// Whether the kernel model applies to D (a GPU with its SM count given)
/// under Cfg (not --time-model roofline).
bool hasKernelModel(const Device &D, const Config &Cfg);

/// kernels::gemm of Shape on Unit of device D (ElemBytes per element),
/// through Memo when given; the result carries Name.
KernelTime memoGemm(const char *Name, const GemmShape &Shape, const MathUnit &Unit,
                    const Device &D, double ElemBytes, GemmMemo *Memo, double BBytes = -1);

/// A matrix product of shape S: its forward kernel, or its backward's
/// dA = dY B^T (M x K, inner N) and dB = A^T dY (K x N, inner M) for the
/// operands that need them (GradA, GradB).
PhaseKernels productPhase(const GemmShape &S, bool Bwd, bool GradA, bool GradB,
                          const MathUnit &Unit, const Device &D, double ElemBytes,
                          GemmMemo *Memo);

/// The product a MatMul or Gemm node runs, from its shapes (a weight of
/// rank <= 2 shared by the batch folds the batch into M); nullopt for
/// another op or unknown shapes.
std::optional<GemmShape> productShape(const Node &N);
/// The same product's dims as counts, formulas when the shapes are
/// symbolic (the planner's, in the batch symbol); nullopt as productShape,
/// or when a dim is unknown or the batch has no exact formula.
std::optional<std::array<sym::Count, 4>> productDims(const Node &N);

/// A convolution as the kernel model times it: Batch images of Cin
/// channels over InPix pixels into Cout channels over OutPix, Taps filter
/// taps, Groups groups, the strides' product, and whether Winograd applies
/// (2-D, 3x3, stride and dilation 1, one group).
struct ConvGeometry {
  double Batch = 0, Cin = 0, Cout = 0, Groups = 1, InPix = 1, OutPix = 1, Taps = 1,
         Strides = 1;
  bool Winograd = false;
};
/// How a t-way tensor-parallel split divides a product or a convolution on
/// each device (the training and inference plans' sharding says which):
/// Columns its N (a convolution's output channels), Rows its K (input
/// channels), Other its batch (attention's heads; a product's M when its
/// batch is smaller than t). A grouped convolution's channel split divides
/// its groups (a depthwise one stays depthwise).
enum class TPSplit : uint8_t { None, Columns, Rows, Other };
GemmShape splitShape(GemmShape S, TPSplit How, double T);

/// Which inputs of a convolution its backward computes gradients of.
struct ConvGrads {
  bool X = false, W = false, Bias = false;
};
/// ConvGeometry G on each device of a t-way split (see TPSplit).
ConvGeometry splitShape(ConvGeometry G, TPSplit How, double T);
/// Conv node N's geometry from its shapes: its weight and every dim of its
/// input and output known, the batch (dim 0) too when BatchKnown (else
/// Batch is -1 where it is not known: the planner's formula in the batch).
std::optional<ConvGeometry> convGeometry(const Node &N, bool BatchKnown = true);
/// The kernels of a convolution's forward (Bwd = false) or backward phase
/// (see the header): implicit GEMMs on DefaultUnit (CUDA cores when the
/// channels do not suit tensor cores), Elem bytes per element; Streaming,
/// the phase's counts, times the depthwise case.
PhaseKernels convPhase(const ConvGeometry &G, bool Bwd, const ConvGrads &Grads,
                       const PhaseCost &Streaming, const Device &D, DType T,
                       const Config &Cfg, const MathUnit &DefaultUnit, double Elem,
                       GemmMemo *Memo);

/// A recurrent layer (LSTM: 4 gates, GRU: 3, RNN: 1) as the kernel model
/// times it: Steps dependent steps of Batch sequences, Input features into
/// Hidden units per direction.
struct RecurrentGeometry {
  double Steps = 0, Batch = 0, Input = 0, Dirs = 1, Hidden = 0, Gates = 1;
};
/// Which inputs of a recurrent layer its backward computes gradients of:
/// X, the input weights W, the recurrent weights R.
struct RecurrentGrads {
  bool X = false, W = false, R = false;
};
/// LSTM/GRU/RNN node N's geometry from its shapes: its weight and every dim
/// of its input known, the batch too when BatchKnown (else Batch is -1
/// where it is not known: the planner's formula in the batch).
std::optional<RecurrentGeometry> recurrentGeometry(const Node &N, bool BatchKnown = true);
/// The kernels of a recurrent layer's forward or backward phase (see the
/// header): the input projection batched over the steps, then per step the
/// recurrent product, the gates and the step's synchronization.
PhaseKernels recurrentPhase(const RecurrentGeometry &G, bool Bwd, const RecurrentGrads &Grads,
                            const Device &D, const MathUnit &Unit, double Elem,
                            GemmMemo *Memo);

/// The kernels of Node N's forward (Bwd = false) or backward phase, with
/// NC's counts; falls back to one streaming kernel for ops without a rule.
/// Memo (optional) keeps products timed across calls on the same device;
/// Roof (optional) is the phase's placeOnDevice result.
PhaseKernels nodeKernels(const NodeCost &NC, bool Bwd, const Device &D, DType T,
                         const Config &Cfg, GemmMemo *Memo = nullptr,
                         const PhaseTime *Roof = nullptr);

} // namespace ridge

#endif
