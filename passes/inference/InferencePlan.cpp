//===- InferencePlan.cpp - ridge plan --inference: t, p, replicas ---------===//
//
// Serving on N devices: t-way tensor parallelism inside each of p pipeline
// stages, r = N / (t p) replicas of the whole. The pass (a decode step at
// --context, else the prefill of --prompt) is analyzed once at --batch; then
// per configuration:
//   tensor parallelism: the sharding propagation (Sharding.h, as for
//     training) says which nodes split t ways; a split matrix product or
//     convolution takes its single-device time scaled by the kernel
//     model's ratio for its split shape (TPSplit: the tiles and waves of a
//     t-th of it, as the training plan times it), any other split node by
//     its streaming kernel's ratio for a t-th of its work (the launch and
//     the first bytes' DRAM latency stay; the roofline's ratio on a device
//     without the kernel model); each
//     forward all-reduce of a
//     partial sum costs a ring all-reduce of the full tensor on the link
//     the group spans, 2(t-1)/t bytes/bandwidth + 2(t-1) latencies, on the
//     critical path, once per pass (per token in decode);
//   a stage's kernels are one stream, bounded by the host's launches on an
//     asynchronous device (Device::streamSeconds): t ranks each issue every
//     kernel, so tensor parallelism does not shorten that bound;
//   pipeline: the main graph cut into p contiguous stages of about equal
//     time; a pass crosses every stage in turn and sends the live
//     activations at each cut (point to point, latency + bytes/bandwidth):
//     time per pass = sum of the stages + TP all-reduces + sends; with p
//     batches in flight a replica completes a batch every slowest stage:
//     tokens/s = r * batch * tokens / (slowest stage + its all-reduces);
//   memory of a device: its stage's weights (split ones / t), its stage's KV
//     cache (/ t where the cache Concat splits; p batches in flight hold a
//     p-th of the layers each, so the same as one batch on all layers), and
//     the live-activation peak over its stage's nodes (/ t at split nodes).
// --objective latency ranks by time per pass, throughput by tokens/s.
//
//===----------------------------------------------------------------------===//
#include "passes/inference/Inference.h"
#include "passes/plan/Planner.h"
#include "passes/plan/Sharding.h"
#include "passes/roofline/KernelModel.h"
#include "passes/roofline/Roofline.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>
#include <map>

using namespace ridge;
using llvm::formatv;

namespace {

/// What the evaluation needs of the analyzed pass, per main-graph node.
struct PassProfile {
  const Model *M = nullptr;
  std::vector<double> Seconds;    ///< the node (and its subgraphs) on one device
  std::vector<double> RoofSeconds; ///< its roofline time on one device
  std::vector<double> Launches;   ///< kernels the host issues for it
  std::vector<PhaseCost> Fwd;
  std::vector<DType> Type;
  /// Weights each node reads (initializers and Constant tensors), by node.
  std::vector<llvm::SmallVector<const Value *, 2>> Weights;
  std::vector<double> KVBytes;    ///< present tensors made by the node
  std::vector<double> LiveBytes;
  /// Activations crossing each boundary b (after node b - 1): bytes.
  std::vector<double> CutBytes;
  double Batch = 1, Tokens = 1;
};

PassProfile profile(const Model &M, const CostResult &C, const RooflineResult &RL,
                    const InferenceMemoryResult &Mem, const Config &Cfg) {
  const Graph &G = *M.Main;
  size_t N = G.Nodes.size();
  PassProfile P;
  P.M = &M;
  P.Seconds.assign(N, 0);
  P.RoofSeconds.assign(N, 0);
  P.Launches.assign(N, 0);
  P.Fwd.assign(N, PhaseCost());
  P.Type.assign(N, DType::Float);
  P.Weights.resize(N);
  P.KVBytes.assign(N, 0);
  P.LiveBytes = Mem.LiveBytes;
  std::optional<double> FloatBytes = floatBytes(Cfg);
  for (size_t I = 0; I < C.Nodes.size(); ++I) {
    const NodeCost &NC = C.Nodes[I];
    size_t At = G.holderOf(NC.N)->Index;
    P.Seconds[At] += RL.Nodes[I].Fwd.Seconds * NC.multiplier();
    P.Launches[At] += RL.Nodes[I].Fwd.Launches * NC.multiplier();
    P.Fwd[At] += NC.Fwd * NC.multiplier();
    P.RoofSeconds[At] +=
        placeOnDevice(NC.Fwd, *Cfg.Dev, RL.Nodes[I].type(), Cfg).Seconds * NC.multiplier();
    P.Type[At] = RL.Nodes[I].type();
  }
  llvm::DenseSet<const Value *> Seen;
  for (const auto &Nd : G.Nodes)
    for (const Value *V : Nd->Inputs) {
      bool Weight = V && (V->isInitializer() ||
                          (V->producer() && V->producer()->OpType == "Constant" &&
                           V->producer()->Domain.empty()));
      if (Weight)
        P.Weights[Nd->Index].push_back(V);
    }
  for (const KVCacheEntry &E : Mem.KV)
    P.KVBytes[E.Concat->Index] += valueBytes(E.Present, FloatBytes);
  // Bytes crossing each boundary: activations defined before it and read
  // after (difference array over boundaries Def + 1 .. Last).
  // The cache is not sent: each stage keeps its own layers' keys and values.
  llvm::DenseSet<const Value *> Cache;
  for (const KVCacheEntry &E : Mem.KV)
    for (const Value *V : E.tensors())
      Cache.insert(V);
  std::vector<double> Delta(N + 2, 0);
  forEachActivationRange(G, /*FloatOnly=*/false, [&](const Value *V, long Def, long Last) {
    if (Cache.count(V))
      return;
    double B = V->hasKnownShape() ? valueBytes(V, FloatBytes) : 0;
    if (Last >= long(N))
      Last = long(N) - 1; // a graph output leaves from the last stage
    if (Last <= Def)
      return;
    Delta[size_t(Def + 1)] += B;
    Delta[size_t(Last + 1)] -= B;
  });
  P.CutBytes.assign(N + 1, 0);
  double Run = 0;
  for (size_t B = 0; B <= N; ++B) {
    Run += Delta[B];
    P.CutBytes[B] = Run;
  }
  return P;
}

/// The kernel model's forward time of a product or convolution node N split
/// T ways as its sharding says (Split: its weight's split; TPSplit), over
/// its time whole; none for another op, unknown shapes or a device without
/// the kernel model. Fwd: N's forward counts (a depthwise convolution's
/// streaming kernel).
std::optional<double> splitKernelRatio(const Node &N, WeightSplitKind Split, unsigned T,
                                       DType Type, const PhaseCost &Fwd, const Config &Cfg,
                                       GemmMemo &Memo) {
  const Device &D = *Cfg.Dev;
  if (!hasKernelModel(D, Cfg))
    return std::nullopt;
  TPSplit How = Split == WeightSplitKind::Col   ? TPSplit::Columns
                : Split == WeightSplitKind::Row ? TPSplit::Rows
                                                : TPSplit::Other;
  MathUnit U = mathUnit(D, Type, Cfg);
  double Elem = dtypeBytes(Type), Full = 0, Shard = 0;
  if (std::optional<GemmShape> Whole = productShape(N)) {
    Full = productPhase(*Whole, false, false, false, U, D, Elem, &Memo).seconds();
    Shard = productPhase(splitShape(*Whole, How, T), false, false, false, U, D, Elem, &Memo)
                .seconds();
  } else if (std::optional<ConvGeometry> Whole = convGeometry(N)) {
    ConvGrads None;
    Full = convPhase(*Whole, false, None, Fwd, D, Type, Cfg, U, Elem, &Memo).seconds();
    Shard = convPhase(splitShape(*Whole, How, T), false, None, Fwd * (1.0 / T), D, Type, Cfg,
                      U, Elem, &Memo)
                .seconds();
  }
  if (!(Full > 0))
    return std::nullopt;
  return Shard / Full;
}

/// Contiguous stages of about equal time: cut where the running time
/// passes j/p of the total. Returns the first node of each stage.
std::vector<size_t> balanceStages(const std::vector<double> &Seconds, unsigned P) {
  double Total = 0;
  for (double S : Seconds)
    Total += S;
  std::vector<size_t> Starts{0};
  double Run = 0;
  for (size_t I = 0; I < Seconds.size() && Starts.size() < P; ++I) {
    Run += Seconds[I];
    if (Run >= Total * double(Starts.size()) / P && I + 1 < Seconds.size())
      Starts.push_back(I + 1);
  }
  while (Starts.size() < P) // fewer nodes than stages: empty stages at the end
    Starts.push_back(Seconds.size());
  return Starts;
}

InferencePlanEval evaluate(const PassProfile &Prof, const ShardingResult &S, unsigned T,
                           unsigned P, unsigned N, unsigned PerNode, const Config &Cfg) {
  const Device &D = *Cfg.Dev;
  const Graph &G = *Prof.M->Main;
  size_t Nodes = G.Nodes.size();
  std::optional<double> FloatBytes = floatBytes(Cfg);
  InferencePlanEval E;
  E.T = T;
  E.P = P;
  E.R = N / (T * P);
  E.TPInterNode = T > PerNode;
  bool PPInter = uint64_t(T) * P > PerNode;
  LinkUse TPLink = ringLink(D, 1, T, PerNode), PPLink = linkFor(D, PPInter);
  // Node times at degree T.
  std::vector<double> Time(Nodes);
  GemmMemo Memo;
  for (size_t I = 0; I < Nodes; ++I) {
    Time[I] = Prof.Seconds[I];
    if (T <= 1 || !S.Split[I])
      continue;
    if (std::optional<double> R = splitKernelRatio(*G.Nodes[I], S.WeightSplit[I], T,
                                                   Prof.Type[I], Prof.Fwd[I], Cfg, Memo)) {
      Time[I] *= *R;
    } else if (hasKernelModel(D, Cfg)) {
      // A streaming kernel over a t-th of the work: its launch and the
      // DRAM latency of its first bytes stay whole.
      double Whole = kernels::streaming("", Prof.Fwd[I], D, Prof.Type[I], Cfg).Seconds;
      double Part =
          kernels::streaming("", Prof.Fwd[I] * (1.0 / T), D, Prof.Type[I], Cfg).Seconds;
      if (Whole > 0)
        Time[I] *= Part / Whole;
    } else if (Prof.RoofSeconds[I] > 0) {
      double Part = placeOnDevice(Prof.Fwd[I] * (1.0 / T), D, Prof.Type[I], Cfg).Seconds;
      Time[I] *= Part / Prof.RoofSeconds[I];
    }
  }
  std::vector<double> Comm(Nodes, 0);
  for (const TPCollective &TC : S.Collectives) {
    if (TC.Backward || TC.At >= Nodes)
      continue;
    double Bytes = TC.Tensor->hasKnownShape() ? valueBytes(TC.Tensor, FloatBytes) : 0;
    Comm[TC.At] += collectiveSeconds(TC.Kind, Bytes, T, TPLink.Bandwidth, TPLink.Latency);
    ++E.Collectives;
  }
  std::vector<size_t> Starts = balanceStages(Time, P);
  Starts.push_back(Nodes);
  double Slowest = 0, Sum = 0;
  for (unsigned J = 0; J < P; ++J) {
    double Stage = 0, StageComm = 0, Weights = 0, KV = 0, Act = 0, Launches = 0;
    llvm::DenseSet<const Value *> Seen;
    for (size_t I = Starts[J]; I < Starts[J + 1]; ++I) {
      Stage += Time[I];
      Launches += Prof.Launches[I];
      StageComm += Comm[I];
      bool Split = T > 1 && S.Split[I];
      for (const Value *W : Prof.Weights[I])
        if (Seen.insert(W).second)
          Weights += valueBytes(W, FloatBytes) / (S.SplitParams.count(W) ? T : 1);
      KV += Prof.KVBytes[I] / (Split ? T : 1);
      Act = std::max(Act, Prof.LiveBytes[I] / (Split ? T : 1));
    }
    // A stage's kernels are one stream: the host may be what bounds it
    // (Device::streamSeconds; a tensor-parallel rank issues all of them).
    Stage = D.streamSeconds(Stage, Launches);
    E.TPSeconds += StageComm;
    Sum += Stage + StageComm;
    Slowest = std::max(Slowest, Stage + StageComm);
    double Mem = Weights + KV + Act;
    if (Mem > E.MemoryBytes) {
      E.MemoryBytes = Mem;
      E.WeightBytes = Weights;
      E.KVCacheBytes = KV;
      E.ActivationBytes = Act;
    }
    if (J + 1 < P) {
      double Cut = Prof.CutBytes[Starts[J + 1]] / T; // each rank sends its shard
      E.P2PSeconds += PPLink.Bandwidth > 0 ? PPLink.Latency + Cut / PPLink.Bandwidth : 0;
    }
  }
  // What the device holds beside the tensors (Device::withReserve).
  E.ReserveBytes = D.withReserve(E.MemoryBytes, T * P > 1) - E.MemoryBytes;
  E.MemoryBytes += E.ReserveBytes;
  E.SlowestStageSeconds = Slowest;
  E.PassSeconds = Sum + E.P2PSeconds;
  E.TokensPerSecond = Slowest > 0 ? E.R * Prof.Batch * Prof.Tokens / Slowest : 0;
  if (E.MemoryBytes > D.MemCapacity) {
    E.Fits = false;
    E.Why = formatv("{0:F1} GB on the fullest device, {1:F1} GB over its {2:F1} GB "
                    "(weights {3:F1} GB, KV cache {4:F1} GB, activations {5:F1} GB, "
                    "reserve {6:F1} GB)",
                    E.MemoryBytes / 1e9, (E.MemoryBytes - D.MemCapacity) / 1e9,
                    D.MemCapacity / 1e9, E.WeightBytes / 1e9, E.KVCacheBytes / 1e9,
                    E.ActivationBytes / 1e9, E.ReserveBytes / 1e9)
                .str();
  }
  return E;
}

bool better(const InferencePlanEval &A, const InferencePlanEval &B, bool Throughput) {
  if (Throughput)
    return A.TokensPerSecond > B.TokensPerSecond ||
           (A.TokensPerSecond == B.TokensPerSecond && A.PassSeconds < B.PassSeconds);
  return A.PassSeconds < B.PassSeconds ||
         (A.PassSeconds == B.PassSeconds && A.TokensPerSecond > B.TokensPerSecond);
}

} // namespace

llvm::Expected<InferencePlanResult>
ridge::planInference(const ServingLoadFn &Load, const Config &Cfg, const ServingOptions &SO,
                     const InferencePlanOptions &PO, DiagnosticEngine &Diags) {
  if (!SO.Prompt && !SO.Context)
    return usageError("plan --inference: give the pass to plan, --context C (a decode step) "
                      "or --prompt P (the prefill)");
  if (PO.Devices < 1)
    return usageError("--devices must be at least 1");
  if (PO.TP.has_value() != PO.PP.has_value())
    return usageError("plan --inference: fix a configuration with both --tp and --pp");
  if (PO.TP && (*PO.TP < 1 || *PO.PP < 1 || PO.Devices % (*PO.TP * *PO.PP)))
    return usageError(formatv("plan --inference: --tp x --pp ({0} x {1}) must divide "
                              "--devices ({2})",
                              *PO.TP, *PO.PP, PO.Devices));
  auto Setup = setupServing(Load, SO);
  if (!Setup)
    return Setup.takeError();
  bool Decode = SO.Context.has_value();
  auto Loaded = Load(Setup->bindings(Decode, SO), SO.Batch, Diags);
  if (!Loaded)
    return Loaded.takeError();
  Model &M = **Loaded;
  AnalysisManager AM(M, Cfg, Diags);
  auto C = AM.getResult<CostAnalysis>();
  if (!C)
    return C.takeError();
  auto RL = AM.getResult<RooflineAnalysis>();
  if (!RL)
    return RL.takeError();
  auto Mem = AM.getResult<InferenceMemoryAnalysis>();
  if (!Mem)
    return Mem.takeError();
  PassProfile Prof = profile(M, *C, *RL, *Mem, Cfg);
  Prof.Batch = double(SO.Batch);
  Prof.Tokens = double(Setup->tokens(Decode, SO));

  InferencePlanResult R;
  R.Model = M.Path;
  R.Device = Cfg.Dev->Name;
  R.Capacity = Cfg.Dev->MemCapacity;
  R.Decode = Decode;
  R.Batch = SO.Batch;
  R.Tokens = int64_t(Prof.Tokens);
  R.Phase = Decode ? formatv("decode at context {0}", *SO.Context).str()
                   : formatv("prefill of {0} tokens", R.Tokens).str();
  R.Opts = PO;
  unsigned PerNode = PO.DevicesPerNode ? PO.DevicesPerNode
                                       : std::max(1u, Cfg.Dev->DevicesPerNode);
  unsigned MaxTP = PO.MaxTP ? PO.MaxTP : PerNode;
  std::map<unsigned, ShardingResult> Shardings;
  auto Sharding = [&](unsigned T) -> const ShardingResult & {
    auto It = Shardings.find(T);
    if (It == Shardings.end())
      It = Shardings.emplace(T, propagateSharding(*M.Main, T, false, C->NeedsGrad)).first;
    return It->second;
  };
  R.SingleDevice = evaluate(Prof, Sharding(1), 1, 1, 1, PerNode, Cfg);
  // (A dim the propagation cannot split at degree t is replicated there:
  // the configuration still runs, with less split.)
  auto Consider = [&](unsigned T, unsigned P) {
    return evaluate(Prof, Sharding(T), T, P, PO.Devices, PerNode, Cfg);
  };
  if (PO.TP) {
    R.Fixed = Consider(*PO.TP, *PO.PP);
    if (!R.Fixed->Fits)
      return fileError(M.Path, formatv("plan --inference: tp={0} pp={1} does not fit: {2}",
                                       *PO.TP, *PO.PP, R.Fixed->Why));
    R.Ranked.push_back(*R.Fixed);
    return R;
  }
  size_t Layers = M.Main->Nodes.size();
  for (unsigned T = 1; T <= PO.Devices && T <= MaxTP; ++T) {
    if (PO.Devices % T)
      continue;
    for (unsigned P = 1; P * T <= PO.Devices && P <= Layers; ++P) {
      if ((PO.Devices / T) % P)
        continue;
      InferencePlanEval E = Consider(T, P);
      (E.Fits ? R.Ranked : R.Rejected).push_back(std::move(E));
    }
  }
  std::stable_sort(R.Ranked.begin(), R.Ranked.end(),
                   [&](const auto &A, const auto &B) { return better(A, B, PO.Throughput); });
  std::stable_sort(R.Rejected.begin(), R.Rejected.end(),
                   [](const auto &A, const auto &B) { return A.MemoryBytes < B.MemoryBytes; });
  if (R.Ranked.empty())
    return fileError(M.Path,
                     formatv("plan --inference: no configuration of {0} x {1} fits the {2}; "
                             "the nearest, tp={3} pp={4}: {5}",
                             PO.Devices, Cfg.Dev->Name, R.Phase, R.Rejected.front().T,
                             R.Rejected.front().P, R.Rejected.front().Why));
  return R;
}
