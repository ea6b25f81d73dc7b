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

/// No input joined (JoinedInput's value when a node's group is its own).
constexpr uint16_t NoInput = UINT16_MAX;

/// Unions each element-wise, normalization or view node into its producer's
/// group (one producer edge per op: a chain, as loop fusion builds). Group[i]
/// is node i's group id (its first member's index); JoinedInput[i] the
/// operand through which node i joined when that tensor is interior to the
/// group (written by one member, read only by another), else NoInput.
void unionChains(const CostResult &C, const RowIndex &Rows, std::vector<uint32_t> &Group,
                 std::vector<uint16_t> &JoinedInput) {
  Group.resize(C.Nodes.size());
  for (size_t I = 0; I < Group.size(); ++I)
    Group[I] = uint32_t(I);
  JoinedInput.assign(C.Nodes.size(), NoInput);
  for (size_t I = 0; I < C.Nodes.size(); ++I) {
    const NodeCost &NC = C.Nodes[I];
    if (!NC.Modeled || !joinsProducer(*NC.N))
      continue;
    // (An operand past the 65,535th does not join: its index is not kept.)
    size_t NIn = std::min<size_t>(NC.N->Inputs.size(), NoInput);
    for (size_t Op = 0; Op < NIn; ++Op) {
      const Value *In = NC.N->Inputs[Op];
      if (!In || !In->producer() || In->IsGraphOutput || In->Users.size() != 1 ||
          In->producer()->Parent != NC.N->Parent)
        continue;
      std::optional<size_t> P = Rows.rowOf(In->producer());
      if (!P || !C.Nodes[*P].Modeled)
        continue;
      const Node &Prod = *In->producer();
      const OpRule *PR = findOpRule(Prod.Domain, Prod.OpType);
      if (!PR || Prod.OpType == "If" || Prod.OpType == "Loop" || Prod.OpType == "Scan")
        continue;
      Group[I] = Group[*P];
      // A view aliases its input and reads nothing: the tensor is saved only
      // when a real consumer of the view's output joins the group too.
      if (opClass(*findOpRule(NC.N->Domain, NC.N->OpType)) != OpClass::View)
        JoinedInput[I] = uint16_t(Op);
      break;
    }
  }
}

/// Renumbers Group's ids (first members' indices) as slots in program order
/// (numbering ids as they first appear is program order), in place: a
/// group's id is its first member's index, rewritten before any later
/// member reads it (a producer shares its consumer's graph, whose nodes the
/// importer sorts topologically, so its row comes first). Returns each
/// slot's member count.
std::vector<uint32_t> slotGroups(std::vector<uint32_t> &Group) {
  std::vector<uint32_t> Size;
  size_t Slots = 0; // one a group's first member
  for (size_t I = 0; I < Group.size(); ++I)
    Slots += Group[I] == I;
  Size.reserve(Slots);
  for (size_t I = 0; I < Group.size(); ++I) {
    if (Group[I] == I) { // a group's first member
      Group[I] = uint32_t(Size.size());
      Size.push_back(0);
    } else {
      Group[I] = Group[Group[I]];
    }
    ++Size[Group[I]];
  }
  return Size;
}

/// One group's working amounts while it is placed (fused bytes, saved bytes,
/// times on the device, all of one instance).
struct GroupWork {
  PhaseCost Fwd, Bwd;
  double Multiplier = 1;
  bool NeedsBackward = false;
  double SavedBytes = 0;
  double FwdSeconds = 0, BwdSeconds = 0;
};

/// Adds NC's costs to G.
void join(GroupWork &G, const NodeCost &NC) {
  G.Multiplier = NC.multiplier();
  G.Fwd += NC.Fwd;
  G.Bwd += NC.Bwd;
  G.NeedsBackward |= NC.NeedsBackward;
}

/// What a fused group issues: its products' kernels, else one a phase that
/// runs; and its device time in memory-bound kernels.
struct GroupLaunch {
  double Launches = 0, MemoryBoundSeconds = 0;
};

/// A group's bytes without its interior tensors (and their gradients), its
/// saved bytes, and its times on the device.
GroupLaunch fuseGroup(GroupWork &G, llvm::ArrayRef<uint32_t> Members,
                      const std::vector<uint16_t> &JoinedInput, const CostResult &C,
                      const RooflineResult &RL, const Config &Cfg) {
  for (size_t I : Members) { // in order: as the group's tensors joined
    if (JoinedInput[I] == NoInput)
      continue;
    double B = valueBytes(C.Nodes[I].N->Inputs[JoinedInput[I]], floatBytes(Cfg));
    G.Fwd.Bytes -= 2 * B;
    if (G.NeedsBackward)
      G.Bwd.Bytes -= 2 * B; // its gradient is written and read inside too
    G.SavedBytes += (G.NeedsBackward ? 4 : 2) * B;
  }
  G.Fwd.Bytes = std::max(0.0, G.Fwd.Bytes);
  G.Bwd.Bytes = std::max(0.0, G.Bwd.Bytes);
  DType Ty = RL.Nodes[Members.front()].type();
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

/// Every slot's members in one array, slot by slot in program order (each
/// slot's in node order). Size[s], slot s's member count, becomes where its
/// members end (they begin where slot s - 1's end, the first at 0): the
/// counts' array serves as the cursors, no second array of offsets.
std::vector<uint32_t> membersBySlot(const std::vector<uint32_t> &Slot,
                                    std::vector<uint32_t> &Size) {
  uint32_t At = 0;
  for (uint32_t &X : Size) { // where each slot begins
    uint32_t N = X;
    X = At;
    At += N;
  }
  std::vector<uint32_t> Members(At);
  for (size_t I = 0; I < Slot.size(); ++I)
    Members[Size[Slot[I]]++] = uint32_t(I);
  return Members;
}

} // namespace

FusionResult ridge::fuse(const Model &M, const CostResult &C, const RooflineResult &RL,
                         const Config &Cfg, FusionGroups *Groups) {
  FusionResult R;
  std::vector<uint32_t> Slot;
  std::vector<uint16_t> JoinedInput;
  unionChains(C, RowIndex(*M.Main, C), Slot, JoinedInput);
  std::vector<uint32_t> Size = slotGroups(Slot);
  // Every slot's members, then each slot placed in turn in one reused
  // record; only groups of two or more are kept, and only when asked (a
  // million-node graph's groups held whole, with their times, were its
  // largest allocation after the IR).
  if (Groups)
    Groups->Groups.reserve(llvm::count_if(Size, [](uint32_t N) { return N > 1; }));
  std::vector<uint32_t> &End = Size;
  std::vector<uint32_t> Members = membersBySlot(Slot, End);
  Slot = std::vector<uint32_t>(); // (not read past here)
  for (size_t S = 0; S < End.size(); ++S) {
    uint32_t Begin = S ? End[S - 1] : 0;
    llvm::ArrayRef<uint32_t> Of =
        llvm::ArrayRef<uint32_t>(Members).slice(Begin, End[S] - Begin);
    GroupWork G;
    for (uint32_t I : Of)
      join(G, C.Nodes[I]);
    GroupLaunch L = fuseGroup(G, Of, JoinedInput, C, RL, Cfg);
    R.LaunchesAfter += L.Launches * G.Multiplier;
    R.MemoryBoundSecondsAfter += L.MemoryBoundSeconds * G.Multiplier;
    R.BytesAfter += (G.Fwd.Bytes + G.Bwd.Bytes) * G.Multiplier;
    R.StepSecondsAfter += (G.FwdSeconds + G.BwdSeconds) * G.Multiplier;
    R.FusedOps += Of.size() - 1;
    if (Of.size() < 2)
      continue;
    ++R.Groups;
    if (Groups) {
      FusionGroup &Out = Groups->Groups.emplace_back();
      Out.Begin = Begin;
      Out.Count = uint32_t(Of.size());
      Out.NeedsBackward = G.NeedsBackward;
      Out.FwdBytes = G.Fwd.Bytes;
      Out.BwdBytes = G.Bwd.Bytes;
      Out.SavedBytes = G.SavedBytes;
    }
  }
  if (Groups)
    Groups->Members = std::move(Members);
  for (const NodeCost &NC : C.Nodes)
    R.BytesBefore += (NC.Fwd.Bytes + NC.Bwd.Bytes) * NC.multiplier();
  R.StepSecondsAfter += RL.RecomputeSeconds + RL.OptimizerSeconds;
  R.LaunchesAfter += RL.RecomputeLaunches + RL.OptimizerLaunches;
  R.StepSecondsBefore = RL.stepSeconds();
  R.DeviceSecondsAfter = R.StepSecondsAfter;
  R.StepSecondsAfter = RL.Dev->streamSeconds(R.DeviceSecondsAfter, R.LaunchesAfter);
  return R;
}

namespace {
/// fuse() of M's costs and roofline, as AM has them.
llvm::Expected<FusionResult> fuseModel(Model &M, AnalysisManager &AM, FusionGroups *Groups) {
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  auto RL = AM.getResult<RooflineAnalysis>();
  if (!RL)
    return RL.takeError();
  return fuse(M, *C, *RL, AM.config(), Groups);
}
} // namespace

llvm::Expected<FusionResult> FusionAnalysis::run(Model &M, AnalysisManager &AM) {
  return fuseModel(M, AM, nullptr);
}

llvm::Error PrintFusionPass::run(Model &M, AnalysisManager &AM) {
  FusionGroups Groups;
  llvm::Expected<FusionResult> Fused = fuseModel(M, AM, &Groups);
  if (!Fused)
    return Fused.takeError();
  const FusionResult &F = *Fused;
  auto C = AM.getResult<CostAnalysis>(); // cached: fuseModel computed it
  if (!C)
    return C.takeError();
  llvm::raw_ostream &OS = *AM.config().Out;
  for (const FusionGroup &G : Groups.Groups) {
    OS << "fusion group:";
    for (size_t I : Groups.members(G))
      OS << ' ' << C->Nodes[I].N->Name;
    OS << " fwd_bytes=" << exactNumber(G.FwdBytes);
    if (G.NeedsBackward)
      OS << " bwd_bytes=" << exactNumber(G.BwdBytes);
    OS << " saved_bytes=" << exactNumber(G.SavedBytes) << '\n';
  }
  OS << llvm::formatv("fusion: {0} groups, {1} ops fused; bytes {2} -> {3}; step "
                      "{4:e} s -> {5:e} s\n",
                      F.Groups, F.FusedOps, exactNumber(F.BytesBefore),
                      exactNumber(F.BytesAfter), F.StepSecondsBefore, F.StepSecondsAfter);
  return llvm::Error::success();
}
