//===- HugePageHeap.h - Back the heap with transparent huge pages -*- C++ -*-===//
//
// ridge allocates its IR, costs and plan tables once and keeps them: a
// 100k-node plan touches ~430 MB of fresh heap, and with 4 KiB pages a
// quarter of its CPU time went to page faults (perf: exc_page_fault and
// clear_page under Graph::tryAddValue, the protobuf arena and the planner's
// arrays). On 2 MiB transparent huge pages the same heap takes 512 times
// fewer faults.
//
// glibc's malloc reads its tunables (GLIBC_TUNABLES) only when the process
// starts, so the driver sets them and re-executes itself once, before it
// does anything else. Skipped when RIDGE_HUGEPAGES=0, when the user already
// sets glibc.malloc tunables, under valgrind or a sanitizer (their own
// allocators), when the kernel has THP off, and on other C libraries.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_HUGEPAGEHEAP_H
#define RIDGE_ANALYZER_HUGEPAGEHEAP_H

#include <string>

namespace ridge {

/// The GLIBC_TUNABLES ridge adds: malloc madvises its heaps for THP
/// (hugetlb=1), grows the main heap 64 MiB at a time (top_pad), serves every
/// block from its heaps, never from a fresh mmap (mmap_max=0: a 1M-node
/// graph's 100 MB arrays reuse what the decoded file freed), keeps what is
/// freed (trim_threshold: no page is given back to be faulted in again), and
/// has two heaps (arena_max=2): the main thread's and one that the helper
/// threads share, so that a helper reuses what another freed instead of
/// faulting in a heap of its own (the planner's sharding worker had one: a
/// 1M-node plan's peak RSS 1815-1837 MB, now 1692-1807 MB, five runs each;
/// which heap a helper joins varies). The one malloc-heavy pair of threads,
/// the planner's two loads, still get a heap each.
extern const char *const HugePageTunables;

/// Re-executes the running program (/proc/self/exe, same argv) with
/// HugePageTunables added, when it applies (see the file comment); returns
/// only when it does not apply (or already did) or exec fails.
void reexecWithHugePageHeap(char **Argv);

/// What the heap runs on after reexecWithHugePageHeap, and why, for
/// --timing: "transparent huge pages (...)", "4 KiB pages (RIDGE_HUGEPAGES=0)".
const char *hugePageHeapStatus();

/// For a single-threaded pipeline about to allocate Bytes or more of heap it
/// keeps (a large graph's IR and analyses): starts a thread that faults in
/// the main heap's pages as malloc extends it, before the pipeline writes
/// them, so that the kernel's zeroing of fresh pages (and, on a VM, the
/// host's supplying them: 0.1 to 2 ms per MiB on the project's machine)
/// runs on another core. It populates pages with MADV_POPULATE_WRITE
/// (contents untouched) between the heap's frontier and the program break,
/// which malloc moves 256 MiB ahead at a time meanwhile, and stops after
/// Bytes. Nothing happens unless the heap is ridge's own (the main arena
/// grows contiguously), Bytes is at least 64 MiB, RIDGE_PREFAULT is not 0,
/// and the kernel has MADV_POPULATE_WRITE (Linux 5.14). Not for pipelines
/// that keep both cores busy (ridge plan).
void prefaultHeapAhead(unsigned long long Bytes);

/// How much of the heap the thread has populated so far, or why it did not
/// start, for --timing.
std::string prefaultStatus();

} // namespace ridge

#endif
