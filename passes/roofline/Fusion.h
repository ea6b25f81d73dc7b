//===- Fusion.h - What-if: fuse element-wise chains into producers -*- C++ -*-===//
//
// The roofline's third lever (laws.md section 3): the same work with higher
// intensity. Like a compiler's loop fusion, an element-wise op, a
// normalization or a view joins the group of the producer of its input when
// that input has no other reader. Tensors that live and die inside a group
// never reach memory: their write and read (and, in the backward, their
// gradient's) bytes are removed; FLOPs stay; a group launches one kernel per
// phase. The analysis re-places each group on the roofline and reports the
// step time before and after.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_ROOFLINE_FUSION_H
#define RIDGE_PASSES_ROOFLINE_FUSION_H

#include "passes/roofline/Roofline.h"

namespace ridge {

/// A fused group of two or more ops, as print<fusion> lists it (the
/// working amounts and times of each group live only while it is placed:
/// a million-node graph has 300k groups).
struct FusionGroup {
  /// Its members: FusionResult::Members[Begin, Begin + Count), indices into
  /// CostResult::Nodes in order (one array for every group: 30k groups'
  /// lists of their own were 30k allocations).
  uint32_t Begin = 0, Count = 0;
  bool NeedsBackward = false;
  double FwdBytes = 0, BwdBytes = 0; ///< fused bytes of one instance
  double SavedBytes = 0;             ///< intermediate bytes no longer moved
};

/// The groups themselves, which only print<fusion> lists (a million-node
/// graph has 300k of them: the analysis keeps its totals alone).
struct FusionGroups {
  std::vector<FusionGroup> Groups; ///< groups of two or more ops
  /// Every node's row, group by group in program order: a kept group's
  /// members, or an op left alone (its own group, not listed in Groups).
  std::vector<uint32_t> Members;
  llvm::ArrayRef<uint32_t> members(const FusionGroup &G) const {
    return llvm::ArrayRef<uint32_t>(Members).slice(G.Begin, G.Count);
  }
};

struct FusionResult {
  size_t Groups = 0;               ///< groups of two or more ops
  size_t FusedOps = 0;             ///< ops that joined a producer's group
  double BytesBefore = 0, BytesAfter = 0; ///< forward + backward, whole step
  double StepSecondsBefore = 0, StepSecondsAfter = 0;
  /// The kernels the host issues for the fused step: a group's products'
  /// kernels, else one a phase (Device::streamSeconds bounds the step by
  /// them).
  double LaunchesAfter = 0;
  double DeviceSecondsAfter = 0; ///< StepSecondsAfter before the launches' bound
  /// Of StepSecondsAfter's device time, the groups bound by memory.
  double MemoryBoundSecondsAfter = 0;
};

/// The fusion what-if of M with its costs C placed as RL: the totals, and
/// each group into Groups when given.
FusionResult fuse(const Model &M, const CostResult &C, const RooflineResult &RL,
                  const Config &Cfg, FusionGroups *Groups = nullptr);

struct FusionAnalysis {
  using Result = FusionResult;
  static constexpr const char *Name = "fusion";
  static llvm::Expected<Result> run(Model &M, AnalysisManager &AM);
};

/// `print<fusion>`: groups, bytes and step time before and after fusion.
RIDGE_DECLARE_PASS(PrintFusionPass)

} // namespace ridge

#endif
