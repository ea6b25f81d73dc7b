//===- ServingReport.cpp - Prefill, decode and the batch sweep, printed ---===//
#include "passes/report/ServingReport.h"
#include "passes/report/JsonWriter.h"
#include "analyzer/Format.h"
#include "devices/Device.h"
#include "passes/roofline/KernelModel.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include <algorithm>

using namespace ridge;
using llvm::formatv;

namespace {

std::string seconds(double S) { return durationText(S); }

/// (weights + KV cache) / bandwidth: the least a pass that reads every
/// weight and the whole cache once can take.
double bandwidthFloor(const ServingPass &P) {
  return P.Bandwidth > 0 ? (P.WeightBytes + P.KVCacheBytes) / P.Bandwidth : 0;
}

void printMemory(const ServingPass &P, double Capacity, llvm::raw_ostream &OS) {
  OS << formatv("  memory: weights {0} + activations {1} (live peak, at '{2}') + KV cache "
                "{3} = {4} ({5})\n",
                siNumber(P.WeightBytes, "B"), siNumber(P.ActivationPeakBytes, "B"), P.PeakNode,
                siNumber(P.KVCacheBytes, "B"), siNumber(P.totalBytes(), "B"),
                P.fits(Capacity) ? "fits" : "DOES NOT FIT");
}

void printTopOps(const ServingPass &P, llvm::raw_ostream &OS) {
  OS << "  by op type:";
  for (size_t I = 0; I < std::min<size_t>(4, P.ByOp.size()); ++I) {
    const ServingPass::OpTime &O = P.ByOp[I];
    OS << formatv("{0} {1} x{2} {3} ({4:P0}, {5:P0} memory-bound)", I ? "," : "", O.Op,
                  O.Count, seconds(O.Seconds), O.Seconds / P.Seconds,
                  O.Seconds > 0 ? O.MemoryBoundSeconds / O.Seconds : 0.0);
  }
  OS << "\n";
}

/// What bounds a decode step of Seconds: the largest of its memory-bound
/// ops, its compute-bound ops, and launch overhead (ops shorter than their
/// launch, and the device waiting for the host to issue its Launches kernels
/// at Launch each).
std::string decodeVerdict(double Seconds, double MemoryBound, double ComputeBound,
                          double HostStall, double Launches, double Launch) {
  if (!(Seconds > 0))
    return "nothing runs";
  double Memory = MemoryBound / Seconds, Compute = ComputeBound / Seconds;
  double Other = std::max(0.0, 1 - Compute - Memory);
  std::string Shares = formatv("{0:P0} of its time memory-bound, {1:P0} compute-bound, {2:P0} "
                               "launch overhead",
                               Memory, Compute, Other);
  if (Memory >= Compute && Memory >= Other)
    return "decode is bandwidth-bound (" + Shares + ")";
  if (Compute >= Other)
    return "decode is compute-bound (" + Shares + ")";
  if (HostStall > 0)
    return formatv("decode is host-bound: {0} kernel launches x {1} = {2} ({3}; the device "
                   "waits {4} for launches)",
                   exactNumber(Launches), seconds(Launch), seconds(Seconds), Shares,
                   seconds(HostStall))
        .str();
  return "decode is launch-bound (" + Shares + ")";
}

void printText(const ServingResult &R, const ServingOptions &SO, const Config &Cfg,
               llvm::raw_ostream &OS) {
  OS << "model: " << R.Model;
  if (R.KVLayers)
    OS << formatv(" (KV cache: {0} tensor(s); past length '{1}', new tokens '{2}')",
                  R.KVLayers, R.PastSymbol, R.SeqSymbol.empty() ? "fixed" : R.SeqSymbol);
  OS << "\n";
  OS << formatv("inference on {0}: forward only, {1}, batch {2}\n", R.Device,
                Cfg.ComputeDType ? dtypeName(*Cfg.ComputeDType).str() : "dtype as stored",
                SO.Batch);
  if (const auto &P = R.Prefill) {
    OS << formatv("prefill of {0} tokens: time to first token {1} ({2} tokens/s); {3}, {4} "
                  "moved; {5:P1} of it in memory-bound ops\n",
                  P->Tokens, seconds(P->Seconds), siNumber(P->tokensPerSecond()),
                  siNumber(P->Fwd.Flops, "FLOP"), siNumber(P->Fwd.Bytes, "B"),
                  P->memoryBoundShare());
    OS << formatv("  fused (element-wise ops and norms into their producers): {0}\n",
                  seconds(P->FusedSeconds));
    printMemory(*P, R.Capacity, OS);
    printTopOps(*P, OS);
  }
  if (const auto &D = R.Decode) {
    double Launch = R.LaunchOverhead;
    OS << formatv("decode at context {0}: time per output token {1} ({2} tokens/s); {3}, {4} "
                  "moved; {5:P1} of it in memory-bound ops\n",
                  D->Context, seconds(D->Seconds), siNumber(D->tokensPerSecond()),
                  siNumber(D->Fwd.Flops, "FLOP"), siNumber(D->Fwd.Bytes, "B"),
                  D->memoryBoundShare());
    double Floor = bandwidthFloor(*D);
    OS << formatv("  bandwidth floor: (weights {0} + KV cache {1}) / {2} = {3}; the step takes "
                  "{4:F2}x that; {5}\n",
                  siNumber(D->WeightBytes, "B"), siNumber(D->KVCacheBytes, "B"),
                  siNumber(D->Bandwidth, "B/s"), seconds(Floor),
                  Floor > 0 ? D->Seconds / Floor : 0.0,
                  decodeVerdict(D->Seconds, D->MemoryBoundSeconds, D->ComputeBoundSeconds,
                                D->HostStallSeconds, D->Launches, Launch));
    double Fused = D->FusedSeconds;
    OS << formatv("  fused (element-wise ops and norms into their producers): {0} per token "
                  "({1} tokens/s), {2:F2}x the bandwidth floor; {3}\n",
                  seconds(Fused), siNumber(Fused > 0 ? D->Batch / Fused : 0),
                  Floor > 0 ? Fused / Floor : 0.0,
                  Fused > 0 && D->FusedMemoryBoundSeconds >= Fused / 2
                      ? formatv("bandwidth-bound ({0:P0} of it memory-bound)",
                                D->FusedMemoryBoundSeconds / Fused).str()
                      : formatv("{0:P0} of it memory-bound", Fused > 0
                                ? D->FusedMemoryBoundSeconds / Fused : 0.0).str());
    printMemory(*D, R.Capacity, OS);
    printTopOps(*D, OS);
  }
  if (R.Sweep.empty())
    return;
  bool Decode = R.Decode.has_value();
  OS << formatv("batch sweep ({0}):\n", Decode ? formatv("decode at context {0}", *SO.Context).str()
                                               : formatv("prefill of {0} tokens",
                                                         R.Prefill->Tokens).str());
  OS << formatv("  {0,6} {1,12} {2,12} {3,10} {4,13} {5,14}\n", "batch", "tokens/s",
                Decode ? "time/token" : "time", "memory", "memory-bound", "weight products");
  for (const ServingPass &P : R.Sweep) {
    double W = P.WeightProductComputeSeconds + P.WeightProductMemorySeconds;
    OS << formatv("  {0,6} {1,12} {2,12} {3,10} {4,13:P0} {5,14}{6}\n", P.Batch,
                  siNumber(P.tokensPerSecond()), seconds(P.Seconds),
                  siNumber(P.totalBytes(), "B"), P.memoryBoundShare(),
                  W <= 0 ? std::string("-")
                  : P.WeightProductComputeSeconds > P.WeightProductMemorySeconds
                      ? std::string("compute")
                      : std::string("memory"),
                  P.fits(R.Capacity) ? "" : "  does not fit");
  }
  const char *Phase = Decode ? "decode" : "prefill";
  if (R.WeightProductsComputeBoundFrom)
    OS << formatv("the products with weights turn compute-bound at batch {0} (the ridge "
                  "point of {1}: from there more batch costs time in proportion)\n",
                  *R.WeightProductsComputeBoundFrom, Phase);
  const ServingPass &Last = R.Sweep.back();
  int64_t LargestFit = Last.fits(R.Capacity) ? Last.Batch : Last.Batch / 2;
  if (R.ComputeBoundFrom)
    OS << formatv("{0} as a whole turns compute-bound at batch {1} (more of its time in ops "
                  "bound by compute than by memory)\n",
                  Phase, *R.ComputeBoundFrom);
  else if (LargestFit >= 1)
    OS << formatv("{0} as a whole does not turn compute-bound up to batch {1}, the largest "
                  "swept that fits{2}\n",
                  Phase, LargestFit,
                  Decode ? " (each sequence's cache is read once per token whatever the batch)"
                         : "");
  else
    OS << "batch 1 does not fit on the device\n";
}

llvm::json::Object memoryJson(const ServingPass &P) {
  return llvm::json::Object{{"weights", P.WeightBytes},
                            {"activations", P.ActivationPeakBytes},
                            {"activation_peak_node", P.PeakNode},
                            {"kv_cache", P.KVCacheBytes},
                            {"total", P.totalBytes()}};
}

llvm::json::Object passJson(const ServingPass &P, bool Decode) {
  llvm::json::Object O{{"batch", P.Batch},
                       {"tokens", P.Tokens},
                       {"context", P.Context},
                       {"flops", P.Fwd.Flops},
                       {"macs", P.Fwd.Macs},
                       {"bytes", P.Fwd.Bytes},
                       {"memory_bound_share", P.memoryBoundShare()},
                       {"unmodeled_nodes", int64_t(P.Unmodeled)},
                       {"memory", memoryJson(P)}};
  O["fused_seconds"] = P.FusedSeconds;
  O["host_stall_seconds"] = P.HostStallSeconds;
  if (Decode) {
    O["seconds_per_token"] = P.Seconds;
    O["bandwidth_floor_seconds"] = bandwidthFloor(P);
  } else {
    O["seconds"] = P.Seconds;
  }
  O["tokens_per_second"] = P.tokensPerSecond();
  llvm::json::Array Ops;
  for (const ServingPass::OpTime &T : P.ByOp)
    Ops.push_back(llvm::json::Object{{"op", T.Op},
                                     {"count", int64_t(T.Count)},
                                     {"seconds", T.Seconds},
                                     {"memory_bound_seconds", T.MemoryBoundSeconds},
                                     {"flops", T.Flops},
                                     {"bytes", T.Bytes}});
  O["by_op_type"] = std::move(Ops);
  return O;
}

void printServingJson(const ServingResult &R, const ServingOptions &SO, const Config &Cfg,
                      llvm::raw_ostream &OS) {
  llvm::json::Object Inf{{"kv_cache_tensors", int64_t(R.KVLayers)},
                         {"past_dim", R.PastSymbol},
                         {"sequence_dim", R.SeqSymbol}};
  if (R.Prefill)
    Inf["prefill"] = passJson(*R.Prefill, false);
  if (R.Decode)
    Inf["decode"] = passJson(*R.Decode, true);
  llvm::json::Array Sweep;
  for (const ServingPass &P : R.Sweep)
    Sweep.push_back(llvm::json::Object{{"batch", P.Batch},
                                       {"seconds", P.Seconds},
                                       {"tokens_per_second", P.tokensPerSecond()},
                                       {"memory", P.totalBytes()},
                                       {"memory_bound_share", P.memoryBoundShare()},
                                       {"fits", P.fits(R.Capacity)}});
  Inf["sweep"] = std::move(Sweep);
  Inf["compute_bound_from_batch"] =
      R.ComputeBoundFrom ? llvm::json::Value(*R.ComputeBoundFrom) : nullptr;
  Inf["weight_products_compute_bound_from_batch"] =
      R.WeightProductsComputeBoundFrom ? llvm::json::Value(*R.WeightProductsComputeBoundFrom)
                                       : nullptr;
  const ServingPass &Main = R.Decode ? *R.Decode : *R.Prefill;
  llvm::json::Object Doc{
      {"schema", "ridge.analyze/1"},
      {"model", R.Model},
      {"options",
       llvm::json::Object{
           {"mode", "inference"},
           {"dtype", Cfg.ComputeDType ? dtypeName(*Cfg.ComputeDType).str() : "as stored"},
           {"batch", SO.Batch},
           {"prompt", SO.Prompt ? llvm::json::Value(*SO.Prompt) : nullptr},
           {"context", SO.Context ? llvm::json::Value(*SO.Context) : nullptr},
           {"time_model", hasKernelModel(*Cfg.Dev, Cfg) ? "kernels" : "roofline"}}},
      {"device", llvm::json::Object{{"name", R.Device},
                                    {"peak_flops", Main.MatrixPeak},
                                    {"memory_bandwidth", Main.Bandwidth},
                                    {"memory_capacity", R.Capacity}}},
      {"time", llvm::json::Object{{"step_seconds", Main.Seconds}}},
      {"memory", memoryJson(Main)},
      {"memory_fits", Main.fits(R.Capacity)},
      {"inference", std::move(Inf)}};
  ridge::printJson(OS, llvm::json::Value(std::move(Doc)));
}

} // namespace

void ridge::printServing(const ServingResult &R, const ServingOptions &SO, const Config &Cfg,
                         llvm::raw_ostream &OS) {
  if (Cfg.Format == OutputFormat::Json)
    printServingJson(R, SO, Cfg, OS);
  else
    printText(R, SO, Cfg, OS);
}

namespace {

llvm::json::Object planEvalJson(const InferencePlanEval &E) {
  return llvm::json::Object{{"tp", int64_t(E.T)},
                            {"pp", int64_t(E.P)},
                            {"replicas", int64_t(E.R)},
                            {"fits", E.Fits},
                            {"why", E.Why},
                            {"seconds_per_pass", E.PassSeconds},
                            {"slowest_stage_seconds", E.SlowestStageSeconds},
                            {"tp_seconds", E.TPSeconds},
                            {"p2p_seconds", E.P2PSeconds},
                            {"tokens_per_second", E.TokensPerSecond},
                            {"all_reduces_per_pass", int64_t(E.Collectives)},
                            {"tp_inter_node", E.TPInterNode},
                            {"memory",
                             llvm::json::Object{{"weights", E.WeightBytes},
                                                {"kv_cache", E.KVCacheBytes},
                                                {"activations", E.ActivationBytes},
                                                {"reserve", E.ReserveBytes},
                                                {"total", E.MemoryBytes}}}};
}

} // namespace

void ridge::printInferencePlan(const InferencePlanResult &R, const Config &Cfg,
                               llvm::raw_ostream &OS) {
  const InferencePlanOptions &O = R.Opts;
  const char *Objective = O.Throughput ? "throughput" : "latency";
  if (Cfg.Format == OutputFormat::Json) {
    llvm::json::Array Ranked, Rejected;
    for (size_t I = 0; I < R.Ranked.size() && I < std::max(1u, O.Top); ++I)
      Ranked.push_back(planEvalJson(R.Ranked[I]));
    for (const InferencePlanEval &E : R.Rejected)
      Rejected.push_back(planEvalJson(E));
    llvm::json::Object Doc{
        {"schema", "ridge.plan/1"},
        {"model", R.Model},
        {"options", llvm::json::Object{{"mode", "inference"},
                                       {"devices", int64_t(O.Devices)},
                                       {"objective", Objective},
                                       {"pass", R.Phase},
                                       {"batch", R.Batch}}},
        {"device", R.Device},
        {"single_device", planEvalJson(R.SingleDevice)},
        {"ranked", std::move(Ranked)},
        {"rejected", std::move(Rejected)}};
    ridge::printJson(OS, llvm::json::Value(std::move(Doc)));
    return;
  }
  const char *Unit = R.Decode ? "time/token" : "time/pass";
  OS << formatv("inference plan: {0} on {1} x {2} ({3}, batch {4} per replica; objective "
                "{5})\n",
                R.Model, O.Devices, R.Device, R.Phase, R.Batch, Objective);
  OS << formatv("  {0,3} {1,3} {2,8} {3,12} {4,12} {5,12} {6,12} {7,14}\n", "tp", "pp",
                "replicas", Unit, "tokens/s", "TP comm", "p2p", "memory/device");
  for (size_t I = 0; I < R.Ranked.size() && I < std::max(1u, O.Top); ++I) {
    const InferencePlanEval &E = R.Ranked[I];
    OS << formatv("  {0,3} {1,3} {2,8} {3,12} {4,12} {5,12} {6,12} {7,14}\n", E.T, E.P, E.R,
                  seconds(E.PassSeconds), siNumber(E.TokensPerSecond), seconds(E.TPSeconds),
                  seconds(E.P2PSeconds), siNumber(E.MemoryBytes, "B"));
  }
  const InferencePlanEval &B = R.Ranked.front();
  const InferencePlanEval &S1 = R.SingleDevice;
  OS << formatv("best: tp={0} pp={1} x{2} replicas: {3} per {4}, {5} tokens/s in all; "
                "{6} all-reduce(s) per pass on the {7} link; per device weights {8} + KV "
                "cache {9} + activations {10} = {11} of {12}\n",
                B.T, B.P, B.R, seconds(B.PassSeconds), R.Decode ? "token" : "pass",
                siNumber(B.TokensPerSecond), B.Collectives,
                B.TPInterNode ? "inter-node" : "intra-node", siNumber(B.WeightBytes, "B"),
                siNumber(B.KVCacheBytes, "B"), siNumber(B.ActivationBytes, "B"),
                siNumber(B.MemoryBytes, "B"), siNumber(R.Capacity, "B"));
  OS << formatv("one device: {0} per {1}, {2} tokens/s, {3} ({4})\n", seconds(S1.PassSeconds),
                R.Decode ? "token" : "pass", siNumber(S1.TokensPerSecond),
                siNumber(S1.MemoryBytes, "B"), S1.Fits ? "fits" : "does not fit");
  if (!R.Rejected.empty())
    OS << formatv("{0} configuration(s) do not fit; the nearest, tp={1} pp={2}: {3}\n",
                  R.Rejected.size(), R.Rejected.front().T, R.Rejected.front().P,
                  R.Rejected.front().Why);
}
