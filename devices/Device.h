//===- Device.h - Device descriptions for the roofline ----------*- C++ -*-===//
//
// A Device is one accelerator (or CPU socket) and the machine it sits in, read
// from a YAML file in devices/ (see devices/README.md for the keys and units).
// Every number is validated on load, and every failure names the file and,
// where the YAML parser knows it, the line and column at fault.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_DEVICES_DEVICE_H
#define RIDGE_DEVICES_DEVICE_H

#include "analyzer/ir/DType.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <array>
#include <bitset>
#include <cassert>
#include <optional>
#include <string>
#include <vector>

namespace ridge {

/// One link (host PCIe, scale-up, scale-out). Absent links have Bandwidth 0.
struct LinkSpec {
  std::string Name;
  double Bandwidth = 0; ///< bytes/s per direction, per device
  double Latency = 0;   ///< seconds
  bool present() const { return Bandwidth > 0; }
};

/// Achievable fraction of a peak as a step function of an op's size (FLOPs
/// or bytes): the first step whose threshold the size reaches, thresholds
/// descending, the last one 0 (Calculon's gflops_efficiency / MB_efficiency).
struct EfficiencyCurve {
  std::vector<std::pair<double, double>> Steps; ///< (threshold, efficiency)
  bool empty() const { return Steps.empty(); }
  double at(double Size) const {
    for (const auto &[Threshold, Eff] : Steps)
      if (Size >= Threshold)
        return Eff;
    return Steps.empty() ? 1.0 : Steps.back().second;
  }
};

/// The reserve of a device kind whose file gives none ("gpu": see
/// Device.cpp for the parts and their sources; "tpu" and "cpu": none
/// modeled).
struct ReserveDefaults {
  double Context = 0, Workspaces = 0, Collectives = 0, Fragmentation = 0;
};
ReserveDefaults reserveDefaults(llvm::StringRef Kind);

struct Device;
/// An error (naming D) when D's reserve and collective buffers take all of
/// its memory.
llvm::Error checkReserve(const Device &D);

/// What a run asks of the reserve (--memory-reserve, --collective-buffers,
/// --fragmentation; the Python module's keywords): unset keeps the file's.
struct ReserveOverrides {
  std::optional<double> Reserve, CollectiveBuffers, Fragmentation;
};
/// D with O applied, checked: bytes not negative, the fragmentation in
/// [0, 1), and something of D's memory left (checkReserve). Errors name the
/// option as Name gives it for its key ("memory_reserve",
/// "collective_buffers", "fragmentation").
llvm::Expected<Device> withReserveOverrides(const Device &D, const ReserveOverrides &O,
                                            llvm::function_ref<std::string(const char *)> Name);

/// A figure per element type, indexed by the type's code: the roofline
/// looks a peak up several times an op, where a std::map's tree walk took
/// 3% of a bound analyze's instructions. Iterates in type-code order (as
/// the map did). Codes past the ONNX types ridge knows hold nothing.
class PerDType {
public:
  const double *find(DType T) const { return has(T) ? &V[size_t(T)] : nullptr; }
  bool has(DType T) const { return size_t(T) < N && Has[size_t(T)]; }
  /// Inserts T (at 0) if absent; T must be a type ridge knows.
  double &operator[](DType T) {
    assert(size_t(T) < N && "PerDType: not an ONNX type code ridge knows");
    Has.set(size_t(T));
    return V[size_t(T)];
  }
  bool empty() const { return Has.none(); }
  size_t size() const { return Has.count(); }
  template <typename Fn> void forEach(Fn F) const {
    for (size_t I = 0; I < N; ++I)
      if (Has[I])
        F(DType(I), V[I]);
  }
  bool operator==(const PerDType &O) const {
    if (Has != O.Has)
      return false;
    for (size_t I = 0; I < N; ++I)
      if (Has[I] && V[I] != O.V[I])
        return false;
    return true;
  }

private:
  static constexpr size_t N = 32; ///< above every code in DTypes.def
  std::array<double, N> V{};
  std::bitset<N> Has;
#define RIDGE_DTYPE(Enum, Code, Bits, Name)                                               \
  static_assert(Code < N, "PerDType: a type code past its table");
#include "analyzer/ir/DTypes.def"
};

struct Device {
  std::string Name;
  std::vector<std::string> Aliases;
  std::string Kind; ///< "gpu", "tpu" or "cpu"
  /// Dense FLOP/s (ops/s for int8), one entry per YAML key: fp64 -> Double,
  /// fp32 -> Float, bf16 -> BFloat16, fp16 -> Float16, fp8 -> Float8E4M3FN,
  /// int8 -> Int8. Use peak() to look up, which also maps the variants.
  PerDType PeakFlops;
  double Tf32Flops = 0; ///< peak_flops.tf32; DType has no TF32. 0: unsupported
  double TranscendentalsPerS = 0; ///< 0: not given
  double MemBandwidth = 0, MemCapacity = 0;
  /// What a running job holds beside its tensors, per device: the runtime's
  /// context, loaded kernels and library workspaces (memory.reserve, bytes),
  /// the collective library's buffers when it communicates
  /// (memory.collective_buffers, bytes), and the caching allocator's
  /// fragmentation (memory.fragmentation, a fraction of the bytes
  /// allocated). What the file does not give: reserveDefaults for its kind.
  /// --memory-reserve, --collective-buffers and --fragmentation replace them.
  double MemReserve = -1, MemCollectiveBuffers = -1, MemFragmentation = -1;
  /// Allocated bytes of tensors as the device holds them: the reserve, the
  /// collective buffers when Communicates, the fragmentation added.
  double withReserve(double Allocated, bool Communicates) const {
    return Allocated * (1 + std::max(0.0, MemFragmentation)) + std::max(0.0, MemReserve) +
           (Communicates ? std::max(0.0, MemCollectiveBuffers) : 0.0);
  }
  double CacheSize = 0, CacheBandwidth = 0; ///< 0: not given
  LinkSpec HostLink, IntraNode, InterNode;
  unsigned DevicesPerNode = 1;
  double EffCompute = 1, EffMemory = 1, EffIntraNode = 1, EffInterNode = 1;
  /// Seconds the host takes to issue one kernel (the driver's launch and
  /// the runtime's dispatch). On a device without KernelGap it is also the
  /// device's: each kernel costs its work plus this.
  double LaunchOverhead = 0;
  /// `kernel_gap`: seconds a kernel costs the device beyond its work when
  /// the host issues kernels ahead of it (a GPU stream: the gap between
  /// back-to-back kernels). 0: the device runs each op as it is issued (a
  /// CPU's thread pool), and LaunchOverhead adds to every kernel.
  double KernelGap = 0;
  /// Asynchronous: the host issues kernels while earlier ones run, so a
  /// stream of them takes max(the device's times, launches x LaunchOverhead)
  /// (a two-stage pipeline: laws.md), not their sum with a launch each.
  bool asyncLaunch() const { return KernelGap > 0; }
  /// What one kernel adds to its own work on the device: the gap on an
  /// asynchronous device, else the launch.
  double perKernelOverhead() const { return asyncLaunch() ? KernelGap : LaunchOverhead; }
  /// A stream of Launches kernels whose device times sum to DeviceSeconds:
  /// max(DeviceSeconds, Launches x LaunchOverhead) on an asynchronous
  /// device (the host cannot issue faster), else DeviceSeconds.
  double streamSeconds(double DeviceSeconds, double Launches) const {
    return asyncLaunch() ? std::max(DeviceSeconds, Launches * LaunchOverhead) : DeviceSeconds;
  }
  /// `cores.count`: streaming multiprocessors (compute units); 0 when not
  /// given, and then the kernel model does not apply (roofline times only).
  unsigned ComputeUnits = 0;
  /// `cores.matrix_units`: the dtypes tensor cores (matrix units) multiply;
  /// tf32 is listed as Tf32 below.
  std::vector<DType> MatrixUnitTypes;
  bool Tf32MatrixUnits = false;
  /// `efficiency.simt`: EffCompute for products on CUDA cores, where a
  /// board's power limit holds them lower than its tensor cores; 0: EffCompute.
  double EffSimt = 0;
  bool hasMatrixUnits(DType T) const {
    for (DType M : MatrixUnitTypes)
      if (M == T)
        return true;
    return false;
  }
  /// Non-tensor-core rates per dtype (element-wise work); fp32 peak if absent.
  PerDType VectorFlops;
  /// Size-dependent efficiencies; empty: the flat EffCompute / EffMemory.
  EfficiencyCurve MatrixEff, VectorEff, MemoryEff;
  /// Whether a kernel overlaps its memory traffic with its arithmetic
  /// (time = max) or not (time = sum).
  bool KernelOverlap = true;

  double matrixEfficiency(double Flops) const {
    return MatrixEff.empty() ? EffCompute : MatrixEff.at(Flops);
  }
  double vectorEfficiency(double Flops) const {
    return VectorEff.empty() ? EffCompute : VectorEff.at(Flops);
  }
  double memoryEfficiency(double Bytes) const {
    return MemoryEff.empty() ? EffMemory : MemoryEff.at(Bytes);
  }
  /// The rate of element-wise (non-matrix) FLOPs in dtype T.
  double vectorPeak(DType T) const {
    if (const double *V = VectorFlops.find(T))
      return *V;
    return peak(DType::Float).value_or(0);
  }
  /// The rate of matrix-product FLOPs in dtype T: peak(T), else (no matrix
  /// figure for T) vectorPeak(T). Looked up only as far as needed: this
  /// runs for every phase of every node.
  double matrixPeak(DType T) const {
    std::optional<double> P = peak(T);
    return P ? *P : vectorPeak(T);
  }
  /// The type large models train in on this device (plan's default): bf16
  /// mixed precision where it has a bf16 rate, else fp16 with loss scaling
  /// (V100, T4), else fp32.
  DType trainingDType() const {
    return peak(DType::BFloat16) ? DType::BFloat16
           : peak(DType::Float16) ? DType::Float16
                                  : DType::Float;
  }
  std::string SourcePath;    ///< the file it was read from

  /// Peak for a dtype, nullopt when unsupported. The fp8 entry serves all four
  /// 8-bit float variants, the int8 entry both Int8 and UInt8.
  /// (Inline, as are the lookups above: they run for every phase of every
  /// node.)
  std::optional<double> peak(DType T) const {
    switch (T) {
    case DType::Float8E4M3FNUZ:
    case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
      T = DType::Float8E4M3FN;
      break;
    case DType::UInt8:
      T = DType::Int8;
      break;
    default:
      break;
    }
    if (const double *P = PeakFlops.find(T))
      return *P;
    return std::nullopt;
  }
  /// Ridge point in FLOP per byte: peak(T) / MemBandwidth.
  std::optional<double> ridgePoint(DType T) const;
};

/// Parses and validates one description. FileName is used in messages and
/// stored as SourcePath. Errors read "FILE:LINE:COL: message" where the
/// position is known, else "FILE: message".
llvm::Expected<Device> parseDevice(llvm::StringRef Text,
                                   llvm::StringRef FileName);
llvm::Expected<Device> loadDeviceFile(llvm::StringRef Path);
/// All *.yaml in Dir, sorted by file name. An error names the bad file; a name
/// or alias used by two files is an error, as is a folder with no *.yaml.
llvm::Expected<std::vector<Device>> loadDeviceDir(llvm::StringRef Dir);
/// Finds by name or alias, case-insensitively; the error lists the known names.
llvm::Expected<const Device *> findDevice(llvm::ArrayRef<Device> Devices,
                                          llvm::StringRef Name);
/// Where the shipped devices/ folder is: $RIDGE_DEVICES_DIR if set, else
/// <dir of the executable>/../share/ridge/devices if it exists, else
/// SourceDevicesDir (the source tree's devices/).
std::string defaultDeviceDir(const char *Argv0,
                             llvm::StringRef SourceDevicesDir);
/// Writes D as YAML that parseDevice reads back to an equal Device (numbers
/// are printed with as many digits as it takes to round-trip exactly).
void writeDeviceYaml(const Device &D, llvm::raw_ostream &OS);

/// `ridge devices`: one row per device with its peaks per dtype (TFLOP/s),
/// memory, and ridge points (FLOP/byte) for fp32, tf32, bf16 and fp8.
void printDeviceTable(llvm::ArrayRef<Device> Devices, llvm::raw_ostream &OS);

} // namespace ridge

#endif
