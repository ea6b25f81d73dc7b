//===- Fusion.cpp - What-if: fuse element-wise chains into producers ------===//
#include "passes/roofline/Fusion.h"
#include "analyzer/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include <map>
#include <optional>

using namespace ridge;

namespace {

bool joinsProducer(const Node &N) {
  const OpRule *R = findOpRule(N.Domain, N.OpType);
  if (!R)
    return false;
  OpClass C = opClass(*R);
  return C == OpClass::ElementWise || C == OpClass::Normalization || C == OpClass::View;
}

/// Each node's row in the cost result: by index for the main graph's nodes
/// (a hash map of a million node pointers missed the cache at every query),
/// hashed for the rest (subgraphs).
class RowIndex {
public:
  RowIndex(const Graph &Main, const CostResult &C) : Main(Main), MainRow(Main.Nodes.size(), UINT32_MAX) {
    for (size_t I = 0; I < C.Nodes.size(); ++I) {
      const Node *N = C.Nodes[I].N;
      if (N->Parent == &Main)
        MainRow[N->Index] = uint32_t(I);
      else
        OtherRow[N] = I;
    }
  }
  std::optional<size_t> rowOf(const Node *N) const {
    if (N->Parent == &Main)
      return MainRow[N->Index] == UINT32_MAX ? std::nullopt
                                              : std::optional<size_t>(MainRow[N->Index]);
    auto It = OtherRow.find(N);
    return It == OtherRow.end() ? std::nullopt : std::optional(It->second);
  }

private:
  const Graph &Main;
  std::vector<uint32_t> MainRow;
  llvm::DenseMap<const Node *, size_t> OtherRow;
};

/// Unions each element-wise, normalization or view node into its producer's
/// group (one producer edge per op: a chain, as loop fusion builds). Group[i]
/// is node i's group id; Interior[i] the tensor that joined it (written by
/// one member, read only by another), if any.
void unionChains(const CostResult &C, const RowIndex &Rows, std::vector<uint32_t> &Group,
                 std::vector<const Value *> &Interior) {
  Group.resize(C.Nodes.size());
  for (size_t I = 0; I < Group.size(); ++I)
    Group[I] = uint32_t(I);
  Interior.assign(C.Nodes.size(), nullptr);
  for (size_t I = 0; I < C.Nodes.size(); ++I) {
    const NodeCost &NC = C.Nodes[I];
    if (!NC.Modeled || !joinsProducer(*NC.N))
      continue;
    for (const Value *In : NC.N->Inputs) {
      if (!In || !In->Producer || In->IsGraphOutput || In->Users.size() != 1 ||
          In->Producer->Parent != NC.N->Parent)
        continue;
      std::optional<size_t> P = Rows.rowOf(In->Producer);
      if (!P || !C.Nodes[*P].Modeled)
        continue;
      const Node &Prod = *In->Producer;
      const OpRule *PR = findOpRule(Prod.Domain, Prod.OpType);
      if (!PR || Prod.OpType == "If" || Prod.OpType == "Loop" || Prod.OpType == "Scan")
        continue;
      Group[I] = Group[*P];
      // A view aliases its input and reads nothing: the tensor is saved only
      // when a real consumer of the view's output joins the group too.
      if (opClass(*findOpRule(NC.N->Domain, NC.N->OpType)) != OpClass::View)
        Interior[I] = In;
      break;
    }
  }
}

/// The groups in program order (a group's id is its first member's index:
/// numbering ids as they first appear is program order): Slot[id] its
/// place in that order, First and Size its first member and member count.
struct GroupOrder {
  std::vector<uint32_t> Slot, First, Size;
};

GroupOrder orderGroups(const std::vector<uint32_t> &Group) {
  GroupOrder O;
  O.Slot.assign(Group.size(), UINT32_MAX);
  for (size_t I = 0; I < Group.size(); ++I) {
    uint32_t &S = O.Slot[Group[I]];
    if (S == UINT32_MAX) {
      S = uint32_t(O.First.size());
      O.First.push_back(uint32_t(I));
      O.Size.push_back(0);
    }
    ++O.Size[S];
  }
  return O;
}

/// Adds NC's costs to G (the caller places NC's index among G's members).
void join(FusionGroup &G, const NodeCost &NC) {
  G.Multiplier = NC.Multiplier;
  G.Fwd += NC.Fwd;
  G.Bwd += NC.Bwd;
  G.NeedsBackward |= NC.NeedsBackward;
}

/// A group's bytes without its interior tensors (and their gradients), its
/// saved bytes, and its times on the device.
/// What a fused group issues: its products' kernels, else one a phase that
/// runs; and its device time in memory-bound kernels.
struct GroupLaunch {
  double Launches = 0, MemoryBoundSeconds = 0;
};

GroupLaunch fuseGroup(FusionGroup &G, llvm::ArrayRef<uint32_t> Members,
                 const std::vector<const Value *> &Interior, const CostResult &C,
                 const RooflineResult &RL, const Config &Cfg) {
  for (size_t I : Members) { // in order: as the group's tensors joined
    const Value *V = Interior[I];
    if (!V)
      continue;
    double B = valueBytes(V, floatBytes(Cfg));
    G.Fwd.Bytes -= 2 * B;
    if (G.NeedsBackward)
      G.Bwd.Bytes -= 2 * B; // its gradient is written and read inside too
    G.SavedBytes += (G.NeedsBackward ? 4 : 2) * B;
  }
  G.Fwd.Bytes = std::max(0.0, G.Fwd.Bytes);
  G.Bwd.Bytes = std::max(0.0, G.Bwd.Bytes);
  DType Ty = RL.Nodes[Members.front()].Type;
  PhaseTime F = placeOnDevice(G.Fwd, *RL.Dev, Ty, Cfg), B;
  G.FwdSeconds = F.Seconds;
  if (G.NeedsBackward) {
    B = placeOnDevice(G.Bwd, *RL.Dev, Ty, Cfg);
    G.BwdSeconds = B.Seconds;
  }
  bool FwdMemory = F.B == Bound::Memory, BwdMemory = B.B == Bound::Memory;
  // With the kernel model a fused group runs at least as long as its matrix
  // products' kernels: fusion removes the element-wise traffic around them,
  // not their waves.
  double FwdLaunches = G.FwdSeconds > 0, BwdLaunches = G.BwdSeconds > 0;
  if (hasKernelModel(*RL.Dev, Cfg)) {
    double Fwd = 0, Bwd = 0, FwdL = 0, BwdL = 0;
    for (size_t I : Members)
      if (RL.Nodes[I].Fwd.Why != Limit::Bandwidth && C.Nodes[I].Fwd.Macs > 0) {
        Fwd += RL.Nodes[I].Fwd.Seconds;
        Bwd += RL.Nodes[I].Bwd.Seconds;
        FwdL += RL.Nodes[I].Fwd.Launches;
        BwdL += RL.Nodes[I].Bwd.Launches;
      }
    // (The products' kernels take longer: theirs is the bound, not memory.)
    FwdMemory = FwdMemory && G.FwdSeconds >= Fwd;
    BwdMemory = BwdMemory && G.BwdSeconds >= Bwd;
    G.FwdSeconds = std::max(G.FwdSeconds, Fwd);
    G.BwdSeconds = std::max(G.BwdSeconds, Bwd);
    FwdLaunches = std::max(FwdLaunches, FwdL);
    BwdLaunches = std::max(BwdLaunches, BwdL);
  }
  return {FwdLaunches + BwdLaunches,
          (FwdMemory ? G.FwdSeconds : 0) + (BwdMemory ? G.BwdSeconds : 0)};
}

} // namespace

llvm::Expected<FusionResult> FusionAnalysis::run(Model &M, AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  auto RL = AM.getResult<RooflineAnalysis>();
  if (!RL)
    return RL.takeError();
  const Config &Cfg = AM.config();
  FusionResult R;
  RowIndex Rows(*M.Main, *C);
  std::vector<uint32_t> Group;
  std::vector<const Value *> Interior;
  unionChains(*C, Rows, Group, Interior);
  // Only groups of two or more are kept (a single op's group is made in
  // turn, in one reused record): a million-node graph's groups held at once
  // were its largest allocation after the IR.
  GroupOrder O = orderGroups(Group);
  size_t NSlots = O.First.size();
  std::vector<uint32_t> Kept(NSlots, UINT32_MAX);
  // (Reserved: grown by doubling, the groups' array was briefly held twice.)
  R.Groups.reserve(llvm::count_if(O.Size, [](uint32_t N) { return N > 1; }));
  uint32_t Placed = 0;
  for (size_t S = 0; S < NSlots; ++S)
    if (O.Size[S] > 1) {
      Kept[S] = uint32_t(R.Groups.size());
      FusionGroup &G = R.Groups.emplace_back();
      G.Begin = Placed;
      Placed += O.Size[S];
    }
  R.Members.resize(Placed);
  for (size_t I = 0; I < C->Nodes.size(); ++I)
    if (uint32_t K = Kept[O.Slot[Group[I]]]; K != UINT32_MAX) {
      FusionGroup &G = R.Groups[K];
      R.Members[G.Begin + G.Count++] = uint32_t(I);
      join(G, C->Nodes[I]);
    }
  for (size_t S = 0; S < NSlots; ++S) {
    FusionGroup One;
    uint32_t Single = O.First[S];
    FusionGroup *G = Kept[S] != UINT32_MAX ? &R.Groups[Kept[S]] : &One;
    llvm::ArrayRef<uint32_t> Members = G == &One ? llvm::ArrayRef<uint32_t>(Single)
                                                 : R.members(*G);
    if (G == &One) {
      One.Count = 1;
      join(One, C->Nodes[Single]);
    }
    GroupLaunch L = fuseGroup(*G, Members, Interior, *C, *RL, Cfg);
    R.LaunchesAfter += L.Launches * G->Multiplier;
    R.MemoryBoundSecondsAfter += L.MemoryBoundSeconds * G->Multiplier;
    R.BytesAfter += (G->Fwd.Bytes + G->Bwd.Bytes) * G->Multiplier;
    R.StepSecondsAfter += (G->FwdSeconds + G->BwdSeconds) * G->Multiplier;
    R.FusedOps += G->Count - 1;
  }
  for (const NodeCost &NC : C->Nodes)
    R.BytesBefore += (NC.Fwd.Bytes + NC.Bwd.Bytes) * NC.Multiplier;
  R.StepSecondsAfter += RL->RecomputeSeconds + RL->OptimizerSeconds;
  R.LaunchesAfter += RL->RecomputeLaunches + RL->OptimizerLaunches;
  R.StepSecondsBefore = RL->stepSeconds();
  R.DeviceSecondsAfter = R.StepSecondsAfter;
  R.StepSecondsAfter = RL->Dev->streamSeconds(R.DeviceSecondsAfter, R.LaunchesAfter);
  return R;
}

llvm::Error PrintFusionPass::run(Model &M, AnalysisManager &AM) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  auto F = AM.getResult<FusionAnalysis>();
  if (!F)
    return F.takeError();
  llvm::raw_ostream &OS = *AM.config().Out;
  for (const FusionGroup &G : F->Groups) {
    OS << "fusion group:";
    for (size_t I : F->members(G))
      OS << ' ' << C->Nodes[I].N->Name;
    OS << " fwd_bytes=" << exactNumber(G.Fwd.Bytes);
    if (G.NeedsBackward)
      OS << " bwd_bytes=" << exactNumber(G.Bwd.Bytes);
    OS << " saved_bytes=" << exactNumber(G.SavedBytes) << '\n';
  }
  OS << llvm::formatv("fusion: {0} groups, {1} ops fused; bytes {2} -> {3}; step "
                      "{4:e} s -> {5:e} s\n",
                      F->Groups.size(), F->FusedOps, exactNumber(F->BytesBefore),
                      exactNumber(F->BytesAfter), F->StepSecondsBefore, F->StepSecondsAfter);
  return llvm::Error::success();
}
