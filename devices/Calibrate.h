//===- Calibrate.h - Measure this host's roofline ("ridge calibrate") -*- C++ -*-===//
//
// The empirical roofline of the machine ridge runs on: the two numbers of
// laws.md section 3 measured instead of read from a datasheet.
//   pi   (fp32 and fp64): an FMA microkernel on every thread, 12 independent
//        vector accumulator chains so that the FMA latency is hidden; the ISA
//        (AVX-512F, AVX2+FMA, or portable C++) is picked at run time. 2 FLOPs
//        per FMA per lane.
//   beta: STREAM triad a[i] = b[i] + s*c[i] on doubles, every thread on its
//        own slice (first-touched by that thread), 24 bytes per element
//        (2 reads + 1 write; write-allocate traffic is not counted, as in
//        STREAM).
// Each figure is the best of several repetitions. Nothing is printed.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_DEVICES_CALIBRATE_H
#define RIDGE_DEVICES_CALIBRATE_H

#include "devices/Device.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <cstddef>
#include <string>

namespace ridge {

struct CalibrateOptions {
  /// Threads to run on; 0: std::thread::hardware_concurrency(). Thread i is
  /// pinned to the i-th CPU of the process's affinity mask when there are
  /// enough CPUs in it.
  unsigned Threads = 0;
  /// Wall time of each of the three measurements (fp32, fp64, triad); it is
  /// split over the repetitions whose best is reported.
  double Seconds = 0.5;
  /// Total bytes of the three triad arrays. 0: automatic, each array the
  /// larger of 64 MiB and 4x the last-level cache (3 x 64 MiB by default),
  /// capped at a quarter of physical memory.
  size_t StreamBytes = 0;
};

struct CalibrateResult {
  double Fp32Flops = 0; ///< FLOP/s, all threads
  double Fp64Flops = 0; ///< FLOP/s, all threads
  double Bandwidth = 0; ///< bytes/s, STREAM triad convention
  unsigned Threads = 0;
  std::string CpuModel; ///< /proc/cpuinfo "model name", or "unknown CPU"
  std::string Isa;      ///< "avx512f", "avx2+fma" or "generic"
  // Context for the device file and for reports.
  double MemCapacity = 0;  ///< physical RAM in bytes (sysconf), 0 if unknown
  double CacheSize = 0;    ///< last-level cache in bytes (sysfs/sysconf), 0 if unknown
  size_t StreamBytes = 0;  ///< total bytes of the three triad arrays used
  double LaunchOverhead = 0; ///< seconds; 0: not measured (1e-6 is written)
  /// Share of all CPUs' time that other processes (or the hypervisor, as
  /// steal time) used while calibrating, 0..1; -1 where unknown. Above ~0.05
  /// the figures are likely low: worth a warning and a rerun.
  double OtherLoad = -1;
};

/// Runs the three measurements. Fails only when memory for the triad arrays
/// or a thread cannot be had.
llvm::Expected<CalibrateResult> calibrateHost(const CalibrateOptions &O);

/// The Device (kind cpu, name "host-calibrated", alias "host") a calibration
/// describes: peak_flops fp32/fp64 and memory.bandwidth as measured,
/// memory.capacity = physical RAM, every efficiency 1.0 (the figures are
/// already achieved rates), launch_overhead measured or 1e-6.
Device calibratedDevice(const CalibrateResult &R);

/// A complete device YAML for calibratedDevice(R) that parseDevice accepts:
/// comment lines saying how and on what it was measured, then the fields
/// (each measured one with a comment on its line).
void writeCalibratedDevice(const CalibrateResult &R, llvm::raw_ostream &OS);

} // namespace ridge

#endif
