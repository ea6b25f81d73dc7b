//===- Serving.cpp - Prefill, one decode step, and the batch sweep --------===//
//
// A decoder with a KV cache runs two kinds of forward pass: the prefill of
// a P-token prompt (past = 0, seq = P), compute-heavy, and decode steps of
// one token at context C (past = C - 1, seq = 1), which read every weight
// and the whole cache for a few FLOPs per byte. Each is the graph loaded
// with those dims bound and analyzed forward-only (CostAnalysis, the
// roofline or kernel model, the live peak). The sweep repeats the decode
// step (the prefill without --context) at batch 1, 2, 4, ... while weights,
// cache and activations fit on the device: tokens/s grows while the step
// stays bound by the weights' bytes, and flattens once the products turn
// compute-bound (decode's ridge point).
//
//===----------------------------------------------------------------------===//
#include "passes/inference/Inference.h"
#include "passes/roofline/Fusion.h"
#include "passes/roofline/Roofline.h"
#include "llvm/Support/FormatVariadic.h"
#include <map>

using namespace ridge;
using llvm::formatv;

namespace {

/// The dims a serving pass binds, into D: the cache's past length and the
/// new tokens' sequence length (or that length when the graph fixes it).
llvm::Error findSequenceDims(const Model &M, const std::vector<KVCacheEntry> &KV,
                             ServingSetup &D) {
  if (!KV.empty()) {
    const KVCacheEntry &E = KV.front();
    if (!E.Past->Shp || !E.Present->Shp || !E.Concat->input(1) ||
        !E.Concat->input(1)->Shp)
      return fileError(M.Path, formatv("KV cache '{0}': its rank is unknown", E.Past->Name));
    Dim PastDim = E.Past->Shp->Dims[E.Axis];
    Dim NewDim = E.Concat->input(1)->Shp->Dims[E.Axis];
    if (PastDim.symbolName().empty())
      return fileError(M.Path,
                       formatv("KV cache '{0}': its past length (dim {1}) is {2}, not a "
                               "symbol; ridge binds it for --prompt and --context (leave "
                               "it unbound)",
                               E.Past->Name, E.Axis, PastDim.str()));
    D.Past = PastDim.symbolName().str();
    D.SeqWhere = formatv("the new keys of '{0}', dim {1}", E.Concat->Name, E.Axis).str();
    if (NewDim.isKnown())
      D.FixedSeq = NewDim.extent();
    else if (!NewDim.symbolName().empty())
      D.Seq = NewDim.symbolName().str();
    else
      return fileError(M.Path, formatv("KV cache '{0}': the new tokens' length ({1}) is "
                                       "neither a number nor one symbol",
                                       E.Past->Name, NewDim.str()));
    return llvm::Error::success();
  }
  // No cache: the prompt is the first input's dim 1 (input_ids [batch, seq]).
  for (const Value *V : M.Main->Inputs) {
    if (V->isInitializer())
      continue;
    if (!V->Shp || V->Shp->rank() < 2)
      break;
    Dim S = V->Shp->Dims[1];
    D.SeqWhere = formatv("input '{0}' dim 1", V->Name).str();
    if (S.isKnown())
      D.FixedSeq = S.extent();
    else if (!S.symbolName().empty())
      D.Seq = S.symbolName().str();
    else
      break;
    return llvm::Error::success();
  }
  return fileError(M.Path, "--prompt: no sequence dim found (the first graph input's dim 1, "
                           "as in input_ids [batch, seq]); bind it with --dim instead");
}

/// One forward pass of the loaded model, summarized.
llvm::Expected<ServingPass> runPass(Model &M, const Config &Cfg, DiagnosticEngine &Diags,
                                    int64_t Batch, int64_t Tokens, int64_t Context) {
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
  auto F = AM.getResult<FusionAnalysis>();
  if (!F)
    return F.takeError();
  ServingPass P;
  P.FusedSeconds = F->StepSecondsAfter;
  P.FusedMemoryBoundSeconds = F->MemoryBoundSecondsAfter;
  P.FusedHostStallSeconds = F->StepSecondsAfter - F->DeviceSecondsAfter;
  P.Batch = Batch;
  P.Tokens = Tokens;
  P.Context = Context;
  P.Seconds = RL->forwardSeconds();
  P.HostStallSeconds = P.Seconds - RL->FwdSeconds;
  P.Launches = RL->FwdLaunches;
  P.MemoryBoundSeconds = RL->MemoryBoundSeconds;
  P.Fwd = C->Fwd;
  P.WeightBytes = Mem->WeightBytes;
  P.ActivationPeakBytes = Mem->ActivationPeakBytes;
  P.KVCacheBytes = Mem->KVCacheBytes;
  P.PeakNode = Mem->PeakNode ? Mem->PeakNode->Name.str() : "";
  P.MatrixPeak = RL->MatrixPeak;
  P.Bandwidth = RL->Bandwidth;
  P.Unmodeled = C->UnmodeledNodes;
  std::map<std::string, ServingPass::OpTime> ByOp;
  for (size_t I = 0; I < C->Nodes.size(); ++I) {
    const NodeCost &NC = C->Nodes[I];
    const PlacedPhase &T = RL->Nodes[I].Fwd;
    ServingPass::OpTime &O = ByOp[NC.N->qualifiedOpType()];
    O.Op = NC.N->qualifiedOpType();
    ++O.Count;
    O.Seconds += T.Seconds * NC.multiplier();
    if (T.B == Bound::Memory)
      O.MemoryBoundSeconds += T.Seconds * NC.multiplier();
    bool ComputeBound = T.B == Bound::Compute || T.B == Bound::Transcendental;
    if (ComputeBound)
      P.ComputeBoundSeconds += T.Seconds * NC.multiplier();
    bool WeightOperand = llvm::any_of(NC.N->Inputs, [&](const Value *V) {
      return V && (V->isInitializer() || C->Constants.count(V));
    });
    if (NC.Fwd.Macs > 0 && WeightOperand) {
      if (ComputeBound)
        P.WeightProductComputeSeconds += T.Seconds * NC.multiplier();
      else if (T.B == Bound::Memory)
        P.WeightProductMemorySeconds += T.Seconds * NC.multiplier();
    }
    O.Flops += NC.Fwd.Flops * NC.multiplier();
    O.Bytes += NC.Fwd.Bytes * NC.multiplier();
  }
  for (auto &[K, O] : ByOp)
    if (O.Seconds > 0)
      P.ByOp.push_back(O);
  std::stable_sort(P.ByOp.begin(), P.ByOp.end(),
                   [](const auto &A, const auto &B) { return A.Seconds > B.Seconds; });
  return P;
}

/// Compute-bound: more of the step in phases bound by compute (or
/// transcendentals) than in phases bound by memory; launch floors count for
/// neither.
bool mostlyComputeBound(const ServingPass &P) {
  return P.ComputeBoundSeconds > P.MemoryBoundSeconds;
}

} // namespace

llvm::Expected<ServingSetup> ridge::setupServing(const ServingLoadFn &Load,
                                                 const ServingOptions &SO) {
  // The structure only: its warnings (dims left unbound) are not the
  // passes' and are dropped.
  DiagnosticEngine Scratch;
  auto Base = Load({}, 0, Scratch);
  if (!Base)
    return Base.takeError();
  const Model &M = **Base;
  ServingSetup S;
  S.Path = M.Path;
  std::vector<KVCacheEntry> KV = findKVCache(*M.Main);
  S.KVLayers = KV.size();
  if (SO.Context && KV.empty())
    return fileError(M.Path, "--context: the graph has no KV cache (no graph input "
                             "concatenated with new keys or values into a graph output), "
                             "so it has no decode step; use --prompt for a forward over "
                             "the whole sequence");
  if (SO.Prompt && *SO.Prompt < 1)
    return usageError("--prompt must be at least 1 token");
  if (SO.Context && *SO.Context < 1)
    return usageError("--context must be at least 1 token");
  if (SO.Batch < 1)
    return usageError("--batch must be at least 1");
  if (llvm::Error E = findSequenceDims(M, KV, S))
    return E;
  if (S.FixedSeq && SO.Prompt && *SO.Prompt > *S.FixedSeq)
    return fileError(M.Path, formatv("--prompt {0}: longer than the graph's fixed sequence "
                                     "dim ({1}, {2})",
                                     *SO.Prompt, *S.FixedSeq, S.SeqWhere));
  if (S.FixedSeq && SO.Context && *S.FixedSeq != 1)
    return fileError(M.Path, formatv("--context: the graph feeds {0} new tokens per step "
                                     "({1}), not the one of a decode step",
                                     *S.FixedSeq, S.SeqWhere));
  return S;
}

int64_t ServingSetup::tokens(bool Decode, const ServingOptions &SO) const {
  return Decode ? 1 : FixedSeq.value_or(SO.Prompt.value_or(1));
}

std::vector<std::pair<std::string, int64_t>>
ServingSetup::bindings(bool Decode, const ServingOptions &SO) const {
  int64_t Past = Decode ? *SO.Context - 1 : 0;
  std::vector<std::pair<std::string, int64_t>> B;
  if (!this->Past.empty())
    B.emplace_back(this->Past, Past);
  if (!Seq.empty())
    B.emplace_back(Seq, tokens(Decode, SO));
  return B;
}

llvm::Expected<ServingResult> ridge::analyzeServing(const ServingLoadFn &Load,
                                                    const Config &Cfg,
                                                    const ServingOptions &SO,
                                                    DiagnosticEngine &Diags) {
  auto Setup = setupServing(Load, SO);
  if (!Setup)
    return Setup.takeError();
  const ServingSetup &S = *Setup;
  ServingResult R;
  R.Model = S.Path;
  R.Device = Cfg.Dev->Name;
  R.Capacity = Cfg.Dev->MemCapacity;
  R.LaunchOverhead = Cfg.Dev->LaunchOverhead;
  R.KVLayers = S.KVLayers;
  R.PastSymbol = S.Past;
  R.SeqSymbol = S.Seq;
  const std::optional<int64_t> &Fixed = S.FixedSeq;
  auto At = [&](bool Decode, int64_t Batch) -> llvm::Expected<ServingPass> {
    auto Loaded = Load(S.bindings(Decode, SO), Batch, Diags);
    if (!Loaded)
      return Loaded.takeError();
    int64_t Tokens = S.tokens(Decode, SO);
    int64_t Past = Decode ? *SO.Context - 1 : 0;
    return runPass(**Loaded, Cfg, Diags, Batch, Tokens, Past + Tokens);
  };
  if (SO.Prompt) {
    if (Fixed && *SO.Prompt < *Fixed)
      Diags.warn(S.Path, formatv("--prompt {0}: the graph's sequence dim is fixed at {1} "
                                 "({2}): the prefill is analyzed at {1} tokens, as the "
                                 "padded prompt runs",
                                 *SO.Prompt, *Fixed, S.SeqWhere));
    auto P = At(false, SO.Batch);
    if (!P)
      return P.takeError();
    R.Prefill = std::move(*P);
  }
  if (SO.Context) {
    auto D = At(true, SO.Batch);
    if (!D)
      return D.takeError();
    R.Decode = std::move(*D);
  }
  if (!SO.Sweep || (!R.Prefill && !R.Decode))
    return R;
  // The sweep: the decode step (else the prefill) at batch 1, 2, 4, ...
  bool Decode = R.Decode.has_value();
  for (int64_t B = 1; B <= SO.MaxSweepBatch; B *= 2) {
    ServingPass P;
    if (B == SO.Batch) {
      P = Decode ? *R.Decode : *R.Prefill;
    } else {
      auto Q = At(Decode, B);
      if (!Q)
        return Q.takeError();
      P = std::move(*Q);
    }
    bool Fits = P.fits(R.Capacity);
    if (Fits && !R.ComputeBoundFrom && mostlyComputeBound(P))
      R.ComputeBoundFrom = B;
    if (Fits && !R.WeightProductsComputeBoundFrom &&
        P.WeightProductComputeSeconds > P.WeightProductMemorySeconds)
      R.WeightProductsComputeBoundFrom = B;
    R.Sweep.push_back(std::move(P));
    if (!Fits)
      break; // the first batch that does not fit ends the sweep
  }
  return R;
}

ServingLoadFn ridge::servingLoader(const ModelSource &Src, const LoadOptions &Opts,
                                   std::string BatchDim, std::string Who) {
  return [&Src, Opts, BatchDim = std::move(BatchDim), Who = std::move(Who)](
             const std::vector<std::pair<std::string, int64_t>> &Bind, int64_t Batch,
             DiagnosticEngine &D) {
    LoadOptions Mine = Opts;
    Mine.Timer = nullptr;
    Mine.DimBindings.insert(Mine.DimBindings.end(), Bind.begin(), Bind.end());
    if (!Batch)
      return Src.load(Mine, D);
    return loadModelAtBatch(Src, Mine, BatchDim, Batch, D, Who);
  };
}
