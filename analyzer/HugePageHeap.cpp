//===- HugePageHeap.cpp - Back the heap with transparent huge pages -------===//
#include "analyzer/HugePageHeap.h"
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#if defined(__linux__)
#include <unistd.h>
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
    "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184";

static const char *Status = "default pages (ridge's driver did not start)";

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
