//===- HugePageHeap.cpp - Back the heap with transparent huge pages -------===//
#include "analyzer/HugePageHeap.h"
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RIDGE_SANITIZER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RIDGE_SANITIZER_ALLOCATOR 1
#endif

const char *const ridge::HugePageTunables =
    "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864:"
    "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:"
    "glibc.malloc.arena_max=2";

static const char *Status = "default pages (ridge's driver did not start)";
/// The heap is glibc's with ridge's tunables (set by the re-execution).
[[maybe_unused]] static bool OwnHeap = false;

const char *ridge::hugePageHeapStatus() { return Status; }

void ridge::reexecWithHugePageHeap(char **Argv) {
#if !defined(__linux__) || !defined(__GLIBC__)
  (void)Argv;
  Status = "default pages (not glibc on Linux)";
#elif defined(RIDGE_SANITIZER_ALLOCATOR)
  (void)Argv;
  Status = "the sanitizer's allocator";
#else
  const char *Opt = std::getenv("RIDGE_HUGEPAGES");
  if (Opt && std::strcmp(Opt, "set") == 0) {
    Status = "transparent huge pages (GLIBC_TUNABLES set by ridge; RIDGE_HUGEPAGES=0 "
             "turns them off)";
    OwnHeap = true;
    return;
  }
  if (Opt && std::strcmp(Opt, "0") == 0) {
    Status = "4 KiB pages (RIDGE_HUGEPAGES=0)";
    return;
  }
  const char *Old = std::getenv("GLIBC_TUNABLES");
  if (Old && std::strstr(Old, "glibc.malloc.")) {
    Status = "as GLIBC_TUNABLES sets it (ridge leaves the user's malloc tunables alone)";
    return;
  }
  // valgrind runs the program on its own loader; an exec would leave it.
  const char *Preload = std::getenv("LD_PRELOAD");
  if (Preload && std::strstr(Preload, "vgpreload")) {
    Status = "valgrind's allocator";
    return;
  }
  std::ifstream Thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string Mode;
  if (!std::getline(Thp, Mode) || Mode.find("[never]") != std::string::npos) {
    Status = "4 KiB pages (the kernel has transparent huge pages off)";
    return;
  }
  std::string Tunables = Old && *Old ? std::string(Old) + ":" + HugePageTunables
                                     : std::string(HugePageTunables);
  if (setenv("GLIBC_TUNABLES", Tunables.c_str(), 1) != 0 ||
      setenv("RIDGE_HUGEPAGES", "set", 1) != 0)
    return;
  execv("/proc/self/exe", Argv);
  // exec failed (no /proc, say): run as we are, with the environment as it was.
  if (Old)
    setenv("GLIBC_TUNABLES", Old, 1);
  else
    unsetenv("GLIBC_TUNABLES");
  unsetenv("RIDGE_HUGEPAGES");
  Status = "4 KiB pages (ridge could not re-execute itself)";
#endif
}

static std::atomic<unsigned long long> Prefaulted{0};
static std::atomic<bool> PrefaultRan{false};
static const char *PrefaultSkipped = "not started";

void ridge::prefaultHeapAhead(unsigned long long Bytes) {
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_POPULATE_WRITE) && \
    !defined(RIDGE_SANITIZER_ALLOCATOR)
  constexpr unsigned long long MiB = 1ull << 20;
  const char *Opt = std::getenv("RIDGE_PREFAULT");
  if (Opt && std::strcmp(Opt, "0") == 0) {
    PrefaultSkipped = "off (RIDGE_PREFAULT=0)";
    return;
  }
  if (!OwnHeap) {
    PrefaultSkipped = "off (not ridge's heap)";
    return;
  }
  if (Bytes < 64 * MiB) {
    PrefaultSkipped = "not needed (under 64 MiB expected)";
    return;
  }
  if (PrefaultRan.exchange(true))
    return;
  // The break moves 256 MiB past each request: room for the thread to work
  // ahead of the pipeline. Pages never written stay unbacked.
  mallopt(M_TOP_PAD, int(256 * MiB));
  auto Break = [] { return uintptr_t(syscall(SYS_brk, 0)); };
  // From the top chunk's start (what malloc has not handed out yet, the
  // last 64 MiB of the break at most), so that every page populated is one
  // the pipeline was going to fault in. Taken here, before the caller's
  // next allocation: one made before the thread looked would lie below.
  uintptr_t Frontier = Break() - mallinfo2().keepcost;
  auto Run = [Bytes, Frontier, Break] {
    constexpr uintptr_t Huge = 2 * MiB, Step = 8 * MiB;
    uintptr_t Done = (Frontier + Huge - 1) & ~(Huge - 1);
    useconds_t Nap = 100;
    while (Prefaulted.load(std::memory_order_relaxed) < Bytes) {
      uintptr_t Top = Break() & ~(Huge - 1);
      if (Top <= Done) {
        usleep(Nap); // the heap is not growing: look less often
        Nap = std::min<useconds_t>(2 * Nap, 5000);
        continue;
      }
      Nap = 100;
      uintptr_t End = std::min(Top, Done + Step);
      // Below the break: mapped heap. Huge pages first: malloc asks for
      // them right after it moves the break, and a range populated before
      // that would stay on 4 KiB pages. Contents are left as they are.
      void *At = reinterpret_cast<void *>(Done);
      madvise(At, End - Done, MADV_HUGEPAGE);
      if (madvise(At, End - Done, MADV_POPULATE_WRITE) != 0)
        return; // an older kernel (EINVAL), or memory short: stop
      Prefaulted.fetch_add(End - Done, std::memory_order_relaxed);
      Done = End;
    }
  };
  try {
    std::thread(Run).detach();
  } catch (const std::system_error &) {
    PrefaultSkipped = "off (no thread)";
    PrefaultRan = false;
  }
#else
  (void)Bytes;
  PrefaultSkipped = "off (needs glibc's heap and MADV_POPULATE_WRITE)";
#endif
}

std::string ridge::prefaultStatus() {
  if (!PrefaultRan)
    return PrefaultSkipped;
  return std::to_string(Prefaulted.load() >> 20) +
         " MiB of heap populated ahead on a second thread (RIDGE_PREFAULT=0 turns it off)";
}
