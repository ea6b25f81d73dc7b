//===- HugePageHeap.cpp - Back the heap with transparent huge pages -------===//
#include "analyzer/HugePageHeap.h"
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#if defined(__linux__)
#include <unistd.h>
#endif

const char *const ridge::HugePageTunables =
    "glibc.malloc.hugetlb=1:glibc.malloc.top_pad=67108864:"
    "glibc.malloc.mmap_threshold=33554432";

void ridge::reexecWithHugePageHeap(char **Argv) {
#if defined(__linux__) && defined(__GLIBC__)
  const char *Opt = std::getenv("RIDGE_HUGEPAGES");
  if (Opt && (std::strcmp(Opt, "0") == 0 || std::strcmp(Opt, "set") == 0))
    return;
  const char *Old = std::getenv("GLIBC_TUNABLES");
  if (Old && std::strstr(Old, "glibc.malloc."))
    return; // the user's own malloc settings win
  // valgrind runs the program on its own loader; an exec would leave it.
  const char *Preload = std::getenv("LD_PRELOAD");
  if (Preload && std::strstr(Preload, "vgpreload"))
    return;
  std::ifstream Thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string Mode;
  if (!std::getline(Thp, Mode) || Mode.find("[never]") != std::string::npos)
    return;
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
#else
  (void)Argv;
#endif
}
