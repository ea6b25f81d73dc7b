//===- Calibrate.cpp - Measure this host's roofline -----------------------===//
//
// Three measurements, each on every thread at once and each the best of
// several repetitions (see Calibrate.h):
//   1. fp32 FMA throughput, 2. fp64 FMA throughput, 3. STREAM triad.
// The FMA kernels exist in AVX-512F, AVX2+FMA and portable variants; the
// widest one the CPU (and OS) supports is chosen at run time, so the project
// itself is never built with -march=native.
//
//===----------------------------------------------------------------------===//
#include "devices/Calibrate.h"
#include "analyzer/Diagnostics.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#if (defined(__x86_64__) || defined(__i386__)) &&                              \
    (defined(__GNUC__) || defined(__clang__))
#define RIDGE_CALIBRATE_X86 1
#include <immintrin.h>
#endif

using namespace ridge;
using Clock = std::chrono::steady_clock;

namespace {

double secondsSince(Clock::time_point T0) {
  return std::chrono::duration<double>(Clock::now() - T0).count();
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

/// A reusable barrier. Waiters spin briefly, then yield: the host may be
/// shared, and a waiter that burns its core would slow the thread it waits for.
class Barrier {
public:
  explicit Barrier(unsigned N) : N(N) {}
  void wait() {
    unsigned G = Generation.load(std::memory_order_acquire);
    if (Arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == N) {
      Arrived.store(0, std::memory_order_relaxed);
      Generation.fetch_add(1, std::memory_order_release);
      return;
    }
    for (unsigned Spins = 0; Generation.load(std::memory_order_acquire) == G;)
      if (++Spins > 256)
        std::this_thread::yield();
  }

private:
  const unsigned N;
  std::atomic<unsigned> Arrived{0};
  std::atomic<unsigned> Generation{0};
};

/// The CPUs this process may run on, in order; empty where unknown.
std::vector<int> allowedCpus() {
  std::vector<int> Cpus;
#if defined(__linux__)
  cpu_set_t Set;
  CPU_ZERO(&Set);
  if (sched_getaffinity(0, sizeof(Set), &Set) == 0)
    for (int C = 0; C < CPU_SETSIZE; ++C)
      if (CPU_ISSET(C, &Set))
        Cpus.push_back(C);
#endif
  return Cpus;
}

/// Runs Body(I) for I in [0, N) on N new threads and joins them. Thread I is
/// pinned to the I-th allowed CPU when there are at least N of them, so that
/// first-touched pages stay next to the thread that uses them. The calling
/// thread's own affinity is left alone. No thread runs Body until all N have
/// started: the bodies meet at barriers that need all N.
llvm::Error runOnThreads(unsigned N, llvm::function_ref<void(unsigned)> Body) {
  std::vector<int> Cpus = allowedCpus();
  bool Pin = Cpus.size() >= N;
  std::atomic<int> Gate{0}; // 0: wait, 1: run, -1: give up
  std::vector<std::thread> Pool;
  std::string Failure;
  auto Worker = [&Body, &Gate](unsigned I) {
    int G;
    while ((G = Gate.load(std::memory_order_acquire)) == 0)
      std::this_thread::yield();
    if (G > 0)
      Body(I);
  };
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  try {
#endif
    Pool.reserve(N);
    for (unsigned I = 0; I < N; ++I) {
      Pool.emplace_back(Worker, I);
#if defined(__linux__)
      if (Pin) {
        cpu_set_t Set;
        CPU_ZERO(&Set);
        CPU_SET(Cpus[I], &Set);
        // A failure only costs placement, not correctness.
        (void)pthread_setaffinity_np(Pool.back().native_handle(), sizeof(Set),
                                     &Set);
      }
#else
      (void)Pin;
#endif
    }
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
  } catch (const std::exception &E) {
    Failure = E.what();
  }
#endif
  Gate.store(Failure.empty() ? 1 : -1, std::memory_order_release);
  for (std::thread &T : Pool)
    T.join();
  if (!Failure.empty())
    return usageError(llvm::formatv("calibrate: cannot start {0} threads: {1}",
                                    N, Failure));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// FMA kernels. Each runs Iters iterations of 12 independent FMA chains
// x = x*M + A (M slightly below 1, so x converges and never overflows or
// becomes subnormal) and returns the sum of the chains, which the caller
// stores, so that nothing can be optimized away.
//===----------------------------------------------------------------------===//

constexpr unsigned Chains = 12;

template <typename T> double fmaGeneric(uint64_t Iters, T M, T A) {
  // 4 scalars per chain: the compiler may vectorize the inner loop with the
  // baseline ISA (SSE2 on x86-64) but cannot contract a*b+c without FMA.
  constexpr unsigned Width = 4;
  T X[Chains * Width];
  for (unsigned J = 0; J < Chains * Width; ++J)
    X[J] = T(1) + T(J) * T(1e-3);
  for (uint64_t I = 0; I < Iters; ++I)
    for (unsigned J = 0; J < Chains * Width; ++J)
      X[J] = X[J] * M + A;
  double Sum = 0;
  for (unsigned J = 0; J < Chains * Width; ++J)
    Sum += double(X[J]);
  return Sum;
}

#ifdef RIDGE_CALIBRATE_X86

#define RIDGE_FMA_CHAINS(FMA, X, M, A)                                         \
  X##0 = FMA(X##0, M, A);                                                      \
  X##1 = FMA(X##1, M, A);                                                      \
  X##2 = FMA(X##2, M, A);                                                      \
  X##3 = FMA(X##3, M, A);                                                      \
  X##4 = FMA(X##4, M, A);                                                      \
  X##5 = FMA(X##5, M, A);                                                      \
  X##6 = FMA(X##6, M, A);                                                      \
  X##7 = FMA(X##7, M, A);                                                      \
  X##8 = FMA(X##8, M, A);                                                      \
  X##9 = FMA(X##9, M, A);                                                      \
  X##10 = FMA(X##10, M, A);                                                    \
  X##11 = FMA(X##11, M, A)

#define RIDGE_FMA_KERNEL(NAME, TARGET, VEC, SCALAR, SET1, FMA, ADD, STORE,     \
                         LANES)                                                \
  __attribute__((target(TARGET), noinline)) double NAME(uint64_t Iters,        \
                                                        SCALAR MS, SCALAR AS) { \
    VEC M = SET1(MS), A = SET1(AS);                                            \
    VEC X0 = SET1(SCALAR(1.00)), X1 = SET1(SCALAR(1.01)),                      \
        X2 = SET1(SCALAR(1.02)), X3 = SET1(SCALAR(1.03)),                      \
        X4 = SET1(SCALAR(1.04)), X5 = SET1(SCALAR(1.05)),                      \
        X6 = SET1(SCALAR(1.06)), X7 = SET1(SCALAR(1.07)),                      \
        X8 = SET1(SCALAR(1.08)), X9 = SET1(SCALAR(1.09)),                      \
        X10 = SET1(SCALAR(1.10)), X11 = SET1(SCALAR(1.11));                    \
    for (uint64_t I = 0; I < Iters; ++I) {                                     \
      RIDGE_FMA_CHAINS(FMA, X, M, A);                                          \
    }                                                                          \
    VEC S = ADD(ADD(ADD(X0, X1), ADD(X2, X3)), ADD(ADD(X4, X5), ADD(X6, X7))); \
    S = ADD(S, ADD(ADD(X8, X9), ADD(X10, X11)));                               \
    alignas(64) SCALAR Out[LANES];                                             \
    STORE(Out, S);                                                             \
    double Sum = 0;                                                            \
    for (unsigned L = 0; L < LANES; ++L)                                       \
      Sum += double(Out[L]);                                                   \
    return Sum;                                                                \
  }

RIDGE_FMA_KERNEL(fmaAvx512F32, "avx512f", __m512, float, _mm512_set1_ps,
                 _mm512_fmadd_ps, _mm512_add_ps, _mm512_store_ps, 16)
RIDGE_FMA_KERNEL(fmaAvx512F64, "avx512f", __m512d, double, _mm512_set1_pd,
                 _mm512_fmadd_pd, _mm512_add_pd, _mm512_store_pd, 8)
RIDGE_FMA_KERNEL(fmaAvx2F32, "avx2,fma", __m256, float, _mm256_set1_ps,
                 _mm256_fmadd_ps, _mm256_add_ps, _mm256_store_ps, 8)
RIDGE_FMA_KERNEL(fmaAvx2F64, "avx2,fma", __m256d, double, _mm256_set1_pd,
                 _mm256_fmadd_pd, _mm256_add_pd, _mm256_store_pd, 4)

#undef RIDGE_FMA_KERNEL
#undef RIDGE_FMA_CHAINS

#endif // RIDGE_CALIBRATE_X86

/// One ISA's kernels and the FLOPs one iteration performs.
struct FmaKernels {
  const char *Isa;
  double (*F32)(uint64_t, float, float);
  double (*F64)(uint64_t, double, double);
  double FlopsPerIterF32, FlopsPerIterF64; ///< per thread
};

FmaKernels pickKernels() {
#ifdef RIDGE_CALIBRATE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return {"avx512f", fmaAvx512F32, fmaAvx512F64, 2.0 * Chains * 16,
            2.0 * Chains * 8};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {"avx2+fma", fmaAvx2F32, fmaAvx2F64, 2.0 * Chains * 8,
            2.0 * Chains * 4};
#endif
  // A multiply and an add per element (fmaGeneric's 4 x Chains of them):
  // 2 FLOPs, as for an FMA.
  return {"generic", fmaGeneric<float>, fmaGeneric<double>, 2.0 * Chains * 4,
          2.0 * Chains * 4};
}

/// Keeps kernel results observable.
std::atomic<double> Sink{0};

/// Runs Kernel on all threads for about Budget seconds in total and returns
/// the best rate, FLOP/s. Repetitions of a fixed iteration count, timed from
/// one barrier to the next; the count is grown until a probe takes >= 2 ms.
template <typename T>
llvm::Expected<double> measureFma(double (*Kernel)(uint64_t, T, T),
                                  double FlopsPerIter, unsigned Threads,
                                  double Budget) {
  constexpr unsigned Reps = 5;
  std::atomic<uint64_t> Iters{2000};
  std::atomic<bool> Stop{false};
  double Best = 0;
  Barrier B(Threads);
  // Runtime constants the compiler cannot fold into the loop.
  volatile T MV = T(0.9999), AV = T(1e-4);
  T M = MV, A = AV;
  auto Start = Clock::now();
  Clock::time_point T0;
  bool Probing = true;
  unsigned Done = 0;
  if (llvm::Error E = runOnThreads(Threads, [&](unsigned Id) {
        double Local = 0;
        for (;;) {
          B.wait();
          if (Id == 0)
            T0 = Clock::now();
          B.wait();
          Local += Kernel(Iters.load(std::memory_order_relaxed), M, A);
          B.wait();
          if (Id == 0) {
            double Dt = secondsSince(T0);
            uint64_t N = Iters.load(std::memory_order_relaxed);
            if (Probing) {
              if (Dt >= 2e-3 || N >= (uint64_t(1) << 40)) {
                Probing = false;
                double Target = Budget / Reps;
                uint64_t Next = uint64_t(double(N) * Target / std::max(Dt, 1e-9));
                Iters.store(std::max<uint64_t>(Next, 1000));
              } else {
                Iters.store(N * 4);
              }
            } else {
              Best = std::max(Best, double(N) * FlopsPerIter * Threads / Dt);
              ++Done;
              if (Done >= Reps || (Done >= 2 && secondsSince(Start) > 2 * Budget))
                Stop.store(true);
            }
          }
          B.wait();
          if (Stop.load())
            break;
        }
        Sink.store(Sink.load(std::memory_order_relaxed) + Local,
                   std::memory_order_relaxed);
      }))
    return E;
  return Best;
}

//===----------------------------------------------------------------------===//
// STREAM triad
//===----------------------------------------------------------------------===//

struct AlignedArray {
  double *P = nullptr;
  explicit AlignedArray(size_t Elems) {
    size_t Bytes = (Elems * sizeof(double) + 4095) / 4096 * 4096;
    // Large blocks come from mmap: no page is touched until a thread writes.
    P = static_cast<double *>(std::aligned_alloc(4096, std::max<size_t>(Bytes, 4096)));
  }
  ~AlignedArray() { std::free(P); }
  AlignedArray(const AlignedArray &) = delete;
  AlignedArray &operator=(const AlignedArray &) = delete;
};

/// a[i] = b[i] + s*c[i] with ordinary (write-allocating) stores, as
/// frameworks' element-wise kernels use. GCC's -O2 leaves a plain loop scalar;
/// the AVX2 variant is explicit.
using TriadFn = void (*)(double *, const double *, const double *, double,
                         size_t);

__attribute__((noinline)) void triadGeneric(double *__restrict A,
                                            const double *__restrict B,
                                            const double *__restrict C,
                                            double S, size_t N) {
  size_t I = 0;
  for (; I + 4 <= N; I += 4) {
    A[I] = B[I] + S * C[I];
    A[I + 1] = B[I + 1] + S * C[I + 1];
    A[I + 2] = B[I + 2] + S * C[I + 2];
    A[I + 3] = B[I + 3] + S * C[I + 3];
  }
  for (; I < N; ++I)
    A[I] = B[I] + S * C[I];
}

#ifdef RIDGE_CALIBRATE_X86
__attribute__((target("avx2,fma"), noinline)) void
triadAvx2(double *__restrict A, const double *__restrict B,
          const double *__restrict C, double S, size_t N) {
  __m256d SV = _mm256_set1_pd(S);
  size_t I = 0;
  for (; I + 8 <= N; I += 8) {
    __m256d X0 = _mm256_fmadd_pd(SV, _mm256_loadu_pd(C + I),
                                 _mm256_loadu_pd(B + I));
    __m256d X1 = _mm256_fmadd_pd(SV, _mm256_loadu_pd(C + I + 4),
                                 _mm256_loadu_pd(B + I + 4));
    _mm256_storeu_pd(A + I, X0);
    _mm256_storeu_pd(A + I + 4, X1);
  }
  for (; I < N; ++I)
    A[I] = B[I] + S * C[I];
}
#endif

/// 256-bit even where AVX-512 exists: on Zen 4 the 512-bit loop streamed
/// ~10% less than the 256-bit and scalar ones (the loop is memory-bound; its
/// width only matters through how many misses it keeps in flight).
TriadFn pickTriad() {
#ifdef RIDGE_CALIBRATE_X86
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return triadAvx2;
#endif
  return triadGeneric;
}

long sysconfOr0(int Name) {
#if defined(__unix__) || defined(__APPLE__)
  long V = sysconf(Name);
  return V > 0 ? V : 0;
#else
  (void)Name;
  return 0;
#endif
}

/// The size of the largest cache level of CPU 0, in bytes: from sysfs (what
/// lscpu shows), else sysconf (glibc's figure, which can be far off inside a
/// VM: 320 MiB for a 32 MiB L3 on one KVM guest), else 0.
double lastLevelCache() {
  double Best = 0;
  unsigned BestLevel = 0;
  for (unsigned I = 0; I < 16; ++I) {
    std::string Dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(I) + "/";
    std::ifstream LevelIn(Dir + "level"), SizeIn(Dir + "size"), TypeIn(Dir + "type");
    unsigned Level = 0;
    std::string Size, Type;
    if (!(LevelIn >> Level) || !(SizeIn >> Size))
      continue;
    TypeIn >> Type;
    if (Type == "Instruction")
      continue;
    llvm::StringRef S(Size);
    double Scale = 1;
    if (S.consume_back("K"))
      Scale = 1024;
    else if (S.consume_back("M"))
      Scale = 1024.0 * 1024;
    else if (S.consume_back("G"))
      Scale = 1024.0 * 1024 * 1024;
    unsigned long long V = 0;
    if (S.getAsInteger(10, V) || V == 0)
      continue;
    if (Level > BestLevel || (Level == BestLevel && V * Scale > Best)) {
      BestLevel = Level;
      Best = double(V) * Scale;
    }
  }
  if (Best > 0)
    return Best;
#if defined(_SC_LEVEL3_CACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  if (long L3 = sysconfOr0(_SC_LEVEL3_CACHE_SIZE))
    return double(L3);
  return double(sysconfOr0(_SC_LEVEL2_CACHE_SIZE));
#else
  return 0;
#endif
}

double physicalMemory() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  return double(sysconfOr0(_SC_PHYS_PAGES)) * double(sysconfOr0(_SC_PAGESIZE));
#else
  return 0;
#endif
}

/// Best triad rate in bytes/s (24 bytes per element) over repetitions that
/// fill about Budget seconds; the first pass (page faults) is not counted.
llvm::Expected<double> measureTriad(TriadFn Triad, size_t TotalBytes,
                                    unsigned Threads, double Budget) {
  size_t Elems = TotalBytes / (3 * sizeof(double));
  // Every thread's slice starts on a 64-byte line.
  Elems = std::max<size_t>(Elems / (8 * Threads) * (8 * Threads), 8 * Threads);
  AlignedArray A(Elems), Bv(Elems), C(Elems);
  if (!A.P || !Bv.P || !C.P)
    return usageError(llvm::formatv(
        "calibrate: cannot allocate 3 x {0} MiB for the triad arrays",
        Elems * sizeof(double) >> 20));
  size_t Slice = Elems / Threads;
  constexpr unsigned MinReps = 3;
  Barrier Bar(Threads);
  std::atomic<bool> Stop{false};
  double Best = 0;
  unsigned Done = 0;
  Clock::time_point T0, Start;
  if (llvm::Error E = runOnThreads(Threads, [&](unsigned Id) {
        double *PA = A.P + Id * Slice, *PB = Bv.P + Id * Slice,
               *PC = C.P + Id * Slice;
        // First touch by the thread that will stream the slice.
        for (size_t I = 0; I < Slice; ++I) {
          PA[I] = 0.0;
          PB[I] = 1.0;
          PC[I] = 2.0;
        }
        Bar.wait();
        if (Id == 0)
          Start = Clock::now();
        for (bool Warm = true;; Warm = false) {
          Bar.wait();
          if (Id == 0)
            T0 = Clock::now();
          Bar.wait();
          Triad(PA, PB, PC, 3.0, Slice);
          Bar.wait();
          if (Id == 0) {
            double Dt = secondsSince(T0);
            if (!Warm) {
              Best = std::max(Best, 24.0 * double(Slice) * Threads / Dt);
              ++Done;
            }
            if (Done >= MinReps && secondsSince(Start) >= Budget)
              Stop.store(true);
          }
          Bar.wait();
          if (Stop.load())
            break;
        }
        Sink.store(Sink.load(std::memory_order_relaxed) + PA[Slice / 2],
                   std::memory_order_relaxed);
      }))
    return E;
  return Best;
}

/// The /proc/cpuinfo value of Key for the first CPU, or "".
std::string cpuinfoField(llvm::StringRef Key) {
  std::ifstream In("/proc/cpuinfo");
  std::string Line;
  while (std::getline(In, Line)) {
    llvm::StringRef L(Line);
    auto [K, V] = L.split(':');
    if (K.trim() == Key)
      return V.trim().str();
    if (L.trim().empty() && !Line.empty())
      break;
  }
  return "";
}

/// 4 significant digits: the measurements are not more precise than that.
double round4(double V) {
  if (!(V > 0) || !std::isfinite(V))
    return V;
  char Buf[32];
  std::snprintf(Buf, sizeof(Buf), "%.3e", V);
  return std::strtod(Buf, nullptr);
}

/// CPU time of the whole machine and of this process, to tell how much of
/// the machine other processes (or the hypervisor, as steal time) took while
/// we measured.
struct CpuSnapshot {
  bool Valid = false;
  double Wall = 0, MachineBusy = 0, Self = 0; ///< seconds
  unsigned Cpus = 0;
};

CpuSnapshot cpuSnapshot() {
  CpuSnapshot S;
#if defined(__linux__)
  std::ifstream In("/proc/stat");
  std::string Cpu;
  unsigned long long V[8] = {};
  if (!(In >> Cpu) || Cpu != "cpu")
    return S;
  for (unsigned long long &X : V)
    if (!(In >> X))
      return S;
  // user nice system idle iowait irq softirq steal
  unsigned long long Busy = V[0] + V[1] + V[2] + V[5] + V[6] + V[7];
  long Hz = sysconfOr0(_SC_CLK_TCK);
  long Online = sysconfOr0(_SC_NPROCESSORS_ONLN);
  struct rusage U;
  if (Hz <= 0 || Online <= 0 || getrusage(RUSAGE_SELF, &U) != 0)
    return S;
  S.MachineBusy = double(Busy) / double(Hz);
  S.Self = double(U.ru_utime.tv_sec) + 1e-6 * double(U.ru_utime.tv_usec) +
           double(U.ru_stime.tv_sec) + 1e-6 * double(U.ru_stime.tv_usec);
  S.Cpus = unsigned(Online);
  S.Wall = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  S.Valid = true;
#endif
  return S;
}

/// Share of all CPUs' time between A and B that was not ours, or -1.
double otherLoad(const CpuSnapshot &A, const CpuSnapshot &B) {
  if (!A.Valid || !B.Valid || B.Wall - A.Wall < 0.05)
    return -1;
  double Other = (B.MachineBusy - A.MachineBusy) - (B.Self - A.Self);
  return std::clamp(Other / ((B.Wall - A.Wall) * A.Cpus), 0.0, 1.0);
}

std::string gflops(double V) { return llvm::formatv("{0:F1}", V / 1e9).str(); }

} // namespace

llvm::Expected<CalibrateResult> ridge::calibrateHost(const CalibrateOptions &O) {
  CalibrateResult R;
  R.Threads = O.Threads ? O.Threads : std::thread::hardware_concurrency();
  if (R.Threads == 0)
    R.Threads = 1;
  if (R.Threads > 4096)
    return usageError(llvm::formatv("calibrate: {0} threads is too many", R.Threads));
  double Seconds = O.Seconds > 0 && std::isfinite(O.Seconds) ? O.Seconds : 0.5;

  CpuSnapshot Before = cpuSnapshot();
  R.CpuModel = cpuinfoField("model name");
  if (R.CpuModel.empty())
    R.CpuModel = cpuinfoField("Model name"); // some ARM kernels
  if (R.CpuModel.empty())
    R.CpuModel = "unknown CPU";
  R.MemCapacity = physicalMemory();
  R.CacheSize = lastLevelCache();

  FmaKernels K = pickKernels();
  R.Isa = K.Isa;
  auto F32 = measureFma(K.F32, K.FlopsPerIterF32, R.Threads, Seconds);
  if (!F32)
    return F32.takeError();
  auto F64 = measureFma(K.F64, K.FlopsPerIterF64, R.Threads, Seconds);
  if (!F64)
    return F64.takeError();
  R.Fp32Flops = *F32;
  R.Fp64Flops = *F64;

  size_t Total = O.StreamBytes;
  if (Total == 0) {
    double PerArray = std::max(64.0 * 1024 * 1024, 4 * R.CacheSize);
    if (R.MemCapacity > 0)
      PerArray = std::min(PerArray, R.MemCapacity / 12);
    Total = size_t(3 * PerArray);
  }
  Total = std::max<size_t>(Total, 3 * 64 * sizeof(double) * R.Threads);
  R.StreamBytes = Total;
  auto Bw = measureTriad(pickTriad(), Total, R.Threads, Seconds);
  if (!Bw)
    return Bw.takeError();
  R.Bandwidth = *Bw;
  R.OtherLoad = otherLoad(Before, cpuSnapshot());
  if (!(R.Fp32Flops > 0) || !(R.Fp64Flops > 0) || !(R.Bandwidth > 0) ||
      !std::isfinite(R.Fp32Flops + R.Fp64Flops + R.Bandwidth))
    return usageError("calibrate: a measurement came out non-positive; "
                      "was the machine suspended?");
  return R;
}

Device ridge::calibratedDevice(const CalibrateResult &R) {
  Device D;
  D.Name = "host-calibrated";
  D.Aliases = {"host"};
  D.Kind = "cpu";
  D.PeakFlops[DType::Float] = round4(R.Fp32Flops);
  D.PeakFlops[DType::Double] = round4(R.Fp64Flops);
  D.MemBandwidth = round4(R.Bandwidth);
  D.MemCapacity = R.MemCapacity > 0 ? R.MemCapacity
                                    : double(std::max<size_t>(R.StreamBytes, 1));
  D.CacheSize = R.CacheSize;
  D.DevicesPerNode = 1;
  D.EffCompute = D.EffMemory = D.EffIntraNode = D.EffInterNode = 1.0;
  D.LaunchOverhead = R.LaunchOverhead > 0 ? round4(R.LaunchOverhead) : 1e-6;
  return D;
}

void ridge::writeCalibratedDevice(const CalibrateResult &R,
                                  llvm::raw_ostream &OS) {
  Device D = calibratedDevice(R);
  double MiB = 1024.0 * 1024.0;
  OS << "# Measured by ridge calibrate on " << R.CpuModel << ", " << R.Threads
     << (R.Threads == 1 ? " thread" : " threads") << ".\n"
     << "# Method (best of several repetitions, all threads at once, one per CPU):\n"
     << "#   peak_flops: FMA microkernel (" << R.Isa
     << "), 12 independent vector accumulator chains per\n"
     << "#     thread; 2 FLOPs per FMA per lane.\n"
     << "#   memory.bandwidth: STREAM triad a[i] = b[i] + s*c[i] on doubles, 3 arrays of "
     << llvm::formatv("{0:F0}", double(R.StreamBytes) / 3 / MiB) << " MiB,\n"
     << "#     each thread on its own first-touched slice; 24 bytes per element "
        "(2 reads + 1 write,\n"
     << "#     write-allocate traffic not counted, as in STREAM).\n"
     << "# These are achieved rates, not datasheet peaks: every efficiency is 1.0.\n"
     << "# Rerun `ridge calibrate` on an idle machine for stable figures.\n";
  if (R.OtherLoad > 0.05)
    OS << llvm::formatv("# Warning: other processes (or the hypervisor) took {0:F0}% of the "
                        "CPUs' time\n# during the measurement: the figures may be low.\n",
                        100 * R.OtherLoad);

  // writeDeviceYaml gives the exact schema; comments go on the lines of the
  // measured fields. Keys are matched as "section.key" (or "key" at the top).
  std::string Fields;
  {
    llvm::raw_string_ostream FS(Fields);
    writeDeviceYaml(D, FS);
  }
  const std::pair<const char *, std::string> Notes[] = {
      {"kind", "this host's CPU"},
      {"peak_flops.fp32", "measured: " + gflops(R.Fp32Flops) + " GFLOP/s"},
      {"peak_flops.fp64", "measured: " + gflops(R.Fp64Flops) + " GFLOP/s"},
      {"memory.bandwidth", "measured triad: " + gflops(R.Bandwidth) + " GB/s"},
      {"memory.capacity",
       R.MemCapacity > 0 ? std::string("physical RAM (sysconf), not measured")
                         : std::string("unknown: set to the triad arrays' size")},
      {"cache.size", "last-level cache (as the OS reports it), not measured"},
      {"node.devices_per_node", "one calibrated host"},
      {"efficiency.compute", "the peaks above are achieved rates"},
      {"efficiency.memory", "the bandwidth above is an achieved rate"},
      {"efficiency.intra_node", "no links modeled"},
      {"efficiency.inter_node", "no links modeled"},
      {"launch_overhead",
       R.LaunchOverhead > 0
           ? std::string("measured per-op fork/join across the threads")
           : std::string("assumption, not measured: the per-op cost of the "
                         "framework's dispatch")},
  };
  llvm::StringRef Rest(Fields);
  std::string Section;
  while (!Rest.empty()) {
    auto [Line, Tail] = Rest.split('\n');
    Rest = Tail;
    llvm::StringRef Key = Line.ltrim().split(':').first.trim();
    bool Top = !Line.empty() && Line.front() != ' ';
    if (Top)
      Section = Key.str();
    std::string Path = Top ? Key.str() : Section + "." + Key.str();
    OS << Line;
    if (Line.contains(':') && !Line.trim().ends_with(":"))
      for (const auto &[P, Note] : Notes)
        if (Path == P) {
          OS << "   # " << Note;
          break;
        }
    OS << '\n';
  }
}
