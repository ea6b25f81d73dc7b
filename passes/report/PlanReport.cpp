//===- PlanReport.cpp - What `ridge plan` prints --------------------------===//
//
// The ranked configurations with their step-time breakdown, the winner
// explained in terms of laws.md (which term bounds it), Amdahl's serial
// fraction and bound, the scaling curve, and launch arguments for Megatron-LM,
// DeepSpeed or a PyTorch DeviceMesh.
//
//===----------------------------------------------------------------------===//
#include "analyzer/Format.h"
#include "passes/plan/Planner.h"
#include "passes/report/HtmlReport.h"
#include "passes/report/JsonWriter.h"
#include "passes/report/Markup.h"
#include "passes/cost/TrainingStep.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <optional>

using namespace ridge;
using llvm::formatv;

namespace {

std::string ms(double S) { return formatv("{0:F2} ms", S * 1e3).str(); }

std::string configName(const PlanConfig &C) {
  std::string S = formatv("dp={0} tp={1} pp={2}", C.D, C.T, C.P).str();
  if (C.P > 1)
    S += formatv(" m={0}", C.M).str();
  if (C.V > 1)
    S += formatv(" v={0}", C.V).str();
  S += formatv(" mb={0}", C.MicroBatch).str();
  if (C.Recomp != Config::Recompute::None)
    S += std::string(" recompute=") + recomputeName(C.Recomp);
  if (C.Zero)
    S += formatv(" zero={0}", C.Zero).str();
  if (C.SP)
    S += " sp";
  return S;
}

/// "7.5x"; below 1 with two decimals ("0.98x", not "1.0x").
std::string speedupText(double S) {
  return S < 1 ? formatv("{0:F2}x", S).str() : formatv("{0:F1}x", S).str();
}

/// Amdahl from a measured (predicted) speedup S on N devices:
/// 1/S = (1 - p) + p/N  =>  1 - p = (1/S - 1/N) / (1 - 1/N), in [0, 1].
/// None when S < 1: Amdahl's speedup is at least 1 for any p, so a split
/// slower than one device (what it adds, communication and per-device
/// overheads, outweighs the work it divides) has no serial fraction.
std::optional<double> serialFraction(double Speedup, unsigned N) {
  if (N <= 1)
    return 0.0;
  if (Speedup < 1)
    return std::nullopt;
  double F = (1.0 / Speedup - 1.0 / N) / (1.0 - 1.0 / N);
  return std::clamp(F, 0.0, 1.0);
}

void printBreakdown(const PlanEval &E, llvm::raw_ostream &OS, const char *Indent) {
  OS << Indent
     << formatv("compute {0} (recompute {1}), tensor-parallel collectives {2} "
                "({3}), pipeline bubble {4} ({5:P1}), point-to-point {6} ({7}), data-parallel "
                "all-reduce {8} of which {9} exposed ({10}), overlap slowdown {11}, optimizer "
                "{12}, input feed exposed {13}{14}{15}\n",
                ms(E.ComputeSeconds), ms(E.RecomputeSeconds), ms(E.TPSeconds), E.TPTier,
                ms(E.BubbleSeconds), E.Bubble, ms(E.P2PSeconds), E.PPTier, ms(E.DPSeconds),
                ms(E.DPExposedSeconds), E.DPTier, ms(E.OverlapSlowdownSeconds),
                ms(E.OptimizerSeconds), ms(E.FeedExposedSeconds),
                E.HostStallSeconds > 0
                    ? formatv(", host stall {0} (the slowest stage's {1} kernel launches per "
                              "micro-batch outlast its device time)",
                              ms(E.HostStallSeconds), exactNumber(E.StageLaunches))
                          .str()
                    : std::string(),
                E.TiedSyncSeconds > 0
                    ? ", shared-weight gradient sync " + ms(E.TiedSyncSeconds) + " (" +
                          E.PPTier + ")"
                    : std::string());
  OS << Indent
     << formatv("memory per device {0} (parameters, gradients, optimizer state {1}{2}; "
                "activations {3}; reserve {4})\n",
                siNumber(E.MemoryBytes, "B"), siNumber(E.ParamBytes, "B"),
                E.GatheredBytes > 0
                    ? " incl. ZeRO-3's gathered working set " + siNumber(E.GatheredBytes, "B")
                    : std::string(),
                siNumber(E.ActivationBytes, "B"), siNumber(E.ReserveBytes, "B"));
}

/// Which term of the step bounds it, in the words of laws.md.
void explain(const PlanResult &R, const PlanEval &W, llvm::raw_ostream &OS) {
  struct Term {
    const char *What;
    double Seconds;
  } Terms[] = {{"compute", W.ComputeSeconds},
               {"the host's kernel launches", W.HostStallSeconds},
               {"tensor-parallel communication", W.TPSeconds},
               {"the pipeline bubble", W.BubbleSeconds},
               {"point-to-point transfers", W.P2PSeconds},
               {"exposed data-parallel communication", W.DPExposedSeconds},
               {"the shared-weight gradient sync", W.TiedSyncSeconds},
               {"the optimizer", W.OptimizerSeconds},
               {"the input feed", W.FeedExposedSeconds}};
  const Term *Max = &Terms[0];
  for (const Term &T : Terms)
    if (T.Seconds > Max->Seconds)
      Max = &T;
  OS << "why:\n";
  OS << formatv("  - the step is bounded by {0}: {1} of {2} ({3:P0}).\n", Max->What,
                ms(Max->Seconds), ms(W.StepSeconds),
                W.StepSeconds > 0 ? Max->Seconds / W.StepSeconds : 0.0);
  // What the data-parallel collectives are (Evaluate.cpp's dataParallelComm).
  std::string Collectives =
      W.C.Zero >= 3   ? "ZeRO-3's parameter gathers and gradient reduce-scatter, every "
                        "micro-batch"
      : W.C.Zero == 2 ? "the gradients' reduce-scatter after every micro-batch ((d-1)/d of "
                        "their bytes each) and the parameters' all-gather after the update"
      : W.C.Zero == 1 ? "the gradients' reduce-scatter and the parameters' all-gather after "
                        "the update ((d-1)/d of the bytes each"
                        + std::string(R.Opts.OverlapGradReduce
                                          ? "; the all-gather behind the next step's forward)"
                                          : ")")
                      : "the gradient all-reduce (ring 2(d-1)/d of the gradient bytes)";
  if (W.C.D > 1)
    OS << formatv("  - data parallel x{0}: {5}, {1} on the {2} link, {3}; {4} stays exposed.\n",
                  W.C.D, ms(W.DPSeconds), W.DPTier,
                  !R.Opts.OverlapGradReduce
                      ? std::string("runs after the backward (--overlap-grad-reduce=false)")
                  : W.DPLastReadyShare < 0.005
                      ? std::string("overlaps the last micro-batch's backward")
                      : formatv("overlaps the last micro-batch's backward but for the "
                                "{0:P0} of the gradient it computes last (the stage's first "
                                "weights), reduced after it",
                                W.DPLastReadyShare)
                            .str(),
                  ms(W.DPExposedSeconds), Collectives);
  if (W.C.D > 1 && W.DPStage > 0)
    OS << formatv("    (stage {0}'s gradients, whose reduction ends last: its backward ends "
                  "{1} before the first stage's, in the pipeline's cool-down.)\n",
                  W.DPStage + 1, ms(W.DPHeadStartSeconds));
  if (W.C.T > 1)
    OS << formatv("  - tensor parallel x{0} on the {1} link: {2} collective(s) per step on "
                  "the critical path ({3}); splits found by propagation: {4} column, {5} row, "
                  "{6} vocabulary.\n",
                  W.C.T, W.TPTier, W.TPCollectivesPerStep, ms(W.TPSeconds),
                  llvm::count_if(R.WeightSplits, [](auto &P) { return P.second == "col"; }),
                  llvm::count_if(R.WeightSplits, [](auto &P) { return P.second == "row"; }),
                  llvm::count_if(R.WeightSplits, [](auto &P) { return P.second == "vocab"; }));
  if (W.C.P > 1)
    OS << formatv("  - pipeline x{0} with {1} micro-batches{2}: bubble (p-1)/(v m + p - 1) = "
                  "{3:P1} of the pipeline.\n",
                  W.C.P, W.C.M, W.C.V > 1 ? formatv(", {0} chunks each", W.C.V).str() : "",
                  W.Bubble);
  if (W.HostStallSeconds > 0 && R.Dev) {
    // The stage's device time per micro-batch: its kernels and collectives.
    double Device = (W.ComputeSeconds + W.TPSeconds) / W.C.M;
    OS << formatv("  - the slowest stage is host-bound: {0} kernel launches x {1} = {2} per "
                  "micro-batch outlast its {3} of device time; the device waits {4} a step "
                  "(fewer, larger kernels: `ridge analyze --fusion`).\n",
                  exactNumber(W.StageLaunches), durationText(R.Dev->LaunchOverhead),
                  durationText(W.StageLaunches * R.Dev->LaunchOverhead), durationText(Device),
                  ms(W.HostStallSeconds));
  }
  if (W.C.Recomp != Config::Recompute::None)
    OS << formatv("  - {0} recomputation trades {1} of forward replay for activation "
                  "memory.\n",
                  recomputeName(W.C.Recomp), ms(W.RecomputeSeconds));
  double Speedup = R.SingleDevice.StepSeconds / W.StepSeconds;
  unsigned N = R.Opts.Devices;
  if (N <= 1)
    return; // Amdahl's law is about a split; one device has none.
  std::optional<double> Serial = serialFraction(Speedup, N);
  if (!Serial) {
    OS << formatv("  - Amdahl: speedup {0} on {1} devices is below 1: the split adds "
                  "more time than it divides, which no serial fraction gives (Amdahl's "
                  "speedup is at least 1); fewer devices are faster here (--scaling lists "
                  "the best configuration of each count).\n",
                  speedupText(Speedup), N);
    return;
  }
  OS << formatv("  - Amdahl: speedup {0:F1}x on {1} devices (efficiency {2:P1}) implies a "
                "serial fraction 1-p = {3:F4}; bound 1/(1-p) = {4}.\n",
                Speedup, N, Speedup / N, *Serial,
                *Serial > 0 ? formatv("{0:F1}x", 1.0 / *Serial).str() : std::string("none"));
}

llvm::json::Object evalJson(const PlanEval &E) {
  return llvm::json::Object{
      {"dp", E.C.D},
      {"tp", E.C.T},
      {"pp", E.C.P},
      {"micro_batches", E.C.M},
      {"micro_batch_size", E.C.MicroBatch},
      {"interleave", E.C.V},
      {"recompute", recomputeName(E.C.Recomp)},
      {"zero", E.C.Zero},
      {"sequence_parallel", E.C.SP},
      {"fits", E.Fits},
      {"step_seconds", E.StepSeconds},
      {"compute_seconds", E.ComputeSeconds},
      {"recompute_seconds", E.RecomputeSeconds},
      {"host_stall_seconds", E.HostStallSeconds},
      {"stage_launches", E.StageLaunches},
      {"tp_seconds", E.TPSeconds},
      {"bubble_seconds", E.BubbleSeconds},
      {"bubble_fraction", E.Bubble},
      {"p2p_seconds", E.P2PSeconds},
      {"dp_seconds", E.DPSeconds},
      {"dp_exposed_seconds", E.DPExposedSeconds},
      {"dp_last_ready_share", E.DPLastReadyShare},
      {"dp_stage", int64_t(E.DPStage)},
      {"dp_head_start_seconds", E.DPHeadStartSeconds},
      {"overlap_slowdown_seconds", E.OverlapSlowdownSeconds},
      {"tied_sync_seconds", E.TiedSyncSeconds},
      {"optimizer_seconds", E.OptimizerSeconds},
      {"feed_exposed_seconds", E.FeedExposedSeconds},
      {"memory_bytes", E.MemoryBytes},
      {"param_bytes", E.ParamBytes},
      {"gathered_bytes", E.GatheredBytes},
      {"activation_bytes", E.ActivationBytes},
      {"reserve_bytes", E.ReserveBytes},
      {"model_flops", E.ModelFlops},
      {"matrix_flops", E.MatrixFlops},
      {"mfu", E.MFU},
      {"tflops_per_device", E.TFlopsPerDevice / 1e12},
      {"tp_collectives_per_step", int64_t(E.TPCollectivesPerStep)},
      {"tp_tier", E.TPTier},
      {"dp_tier", E.DPTier},
      {"pp_tier", E.PPTier}};
}

void emit(const PlanResult &R, const PlanEval &W, const Config &Cfg, llvm::raw_ostream &OS) {
  const PlanConfig &C = W.C;
  bool Bf16 = Cfg.ComputeDType && *Cfg.ComputeDType == DType::BFloat16;
  bool Fp16 = Cfg.ComputeDType && *Cfg.ComputeDType == DType::Float16;
  if (R.Opts.Emit == "megatron") {
    OS << formatv("--tensor-model-parallel-size {0} --pipeline-model-parallel-size {1} "
                  "--micro-batch-size {2} --global-batch-size {3}",
                  C.T, C.P, C.MicroBatch, R.Opts.GlobalBatch);
    if (C.V > 1)
      OS << formatv(" --num-layers-per-virtual-pipeline-stage <layers/({0}*{1})>", C.P, C.V);
    if (C.SP)
      OS << " --sequence-parallel";
    if (C.Recomp == Config::Recompute::Full)
      OS << " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
    else if (C.Recomp == Config::Recompute::Selective)
      OS << " --recompute-granularity selective";
    if (C.Zero >= 1)
      OS << " --use-distributed-optimizer";
    if (C.D > 1 && R.Opts.OverlapGradReduce)
      OS << (C.Zero >= 1 ? " --overlap-grad-reduce --overlap-param-gather"
                         : " --overlap-grad-reduce");
    if (Bf16)
      OS << " --bf16";
    if (Fp16)
      OS << " --fp16";
    OS << "\n";
    if (C.Zero >= 2)
      OS << "# note: Megatron-LM's distributed optimizer shards optimizer state (ZeRO-1); "
            "ZeRO-" << C.Zero << " needs DeepSpeed or FSDP\n";
    return;
  }
  if (R.Opts.Emit == "deepspeed") {
    llvm::json::Object Zero{{"stage", C.Zero}, {"overlap_comm", R.Opts.OverlapGradReduce}};
    llvm::json::Object Doc{{"train_batch_size", R.Opts.GlobalBatch},
                           {"train_micro_batch_size_per_gpu", C.MicroBatch},
                           {"gradient_accumulation_steps", C.M},
                           {"zero_optimization", std::move(Zero)},
                           {"bf16", llvm::json::Object{{"enabled", Bf16}}},
                           {"fp16", llvm::json::Object{{"enabled", Fp16}}}};
    if (C.Recomp != Config::Recompute::None)
      Doc["activation_checkpointing"] =
          llvm::json::Object{{"partition_activations", C.T > 1}, {"contiguous_memory_optimization", false}};
    if (C.P > 1)
      Doc["pipeline"] = llvm::json::Object{{"stages", C.P}, {"partition", "parameters"}};
    if (C.T > 1)
      Doc["tensor_parallel"] = llvm::json::Object{{"autotp_size", C.T}};
    ridge::printJson(OS, llvm::json::Value(std::move(Doc)));
    return;
  }
  if (R.Opts.Emit == "torch") {
    OS << "from torch.distributed.device_mesh import init_device_mesh\n";
    OS << formatv("mesh = init_device_mesh(\"cuda\", ({0}, {1}, {2}), "
                  "mesh_dim_names=(\"pp\", \"dp\", \"tp\"))\n",
                  C.P, C.D, C.T);
    OS << formatv("# micro-batch {0}, {1} micro-batches per step, recompute {2}, ZeRO-{3}{4}\n",
                  C.MicroBatch, C.M, recomputeName(C.Recomp), C.Zero,
                  C.SP ? ", sequence parallel" : "");
  }
}

/// A knob of a fixed configuration the user did not give: its value in W
/// and, when another value fits, the fastest configuration with it.
struct ChosenKnob {
  const char *Knob;
  std::string Value;
  const PlanEval *Other = nullptr; ///< the fastest with another value
};

/// The knobs --tp/--pp/--dp leave to the search, as it chose them for W
/// (the fastest configuration that fits; R.Ranked is by step time).
std::vector<ChosenKnob> chosenKnobs(const PlanResult &R, const PlanEval &W) {
  std::vector<ChosenKnob> Out;
  auto Add = [&](const char *Knob, bool Given, std::string Value, auto Same) {
    if (Given)
      return;
    ChosenKnob K{Knob, std::move(Value)};
    for (const PlanEval &E : R.Ranked)
      if (!Same(E.C)) {
        K.Other = &E;
        break;
      }
    Out.push_back(std::move(K));
  };
  const PlanConfig &C = W.C;
  Add("micro-batch", R.Opts.MicroBatch.has_value(), std::to_string(C.MicroBatch),
      [&](const PlanConfig &X) { return X.MicroBatch == C.MicroBatch; });
  if (C.P > 1)
    Add("interleave", R.Opts.Interleave.has_value(), std::to_string(C.V),
        [&](const PlanConfig &X) { return X.V == C.V; });
  Add("recompute", R.Opts.Recomp.has_value(), recomputeName(C.Recomp),
      [&](const PlanConfig &X) { return X.Recomp == C.Recomp; });
  if (C.D > 1)
    Add("zero", R.Opts.Zero.has_value(), std::to_string(C.Zero),
        [&](const PlanConfig &X) { return X.Zero == C.Zero; });
  if (C.T > 1)
    Add("sequence-parallel", R.Opts.SequenceParallel.has_value(), C.SP ? "on" : "off",
        [&](const PlanConfig &X) { return X.SP == C.SP; });
  return Out;
}

void printChosenKnobs(const PlanResult &R, const PlanEval &W, llvm::raw_ostream &OS) {
  std::vector<ChosenKnob> Knobs = chosenKnobs(R, W);
  if (Knobs.empty())
    return;
  OS << "  chosen by the search (the fastest that fits; give the flag to fix it):\n";
  for (const ChosenKnob &K : Knobs) {
    if (llvm::StringRef(K.Knob) == "sequence-parallel")
      OS << (K.Value == "on" ? "    --sequence-parallel" : "    --sequence-parallel=false");
    else
      OS << formatv("    --{0} {1}", K.Knob, K.Value);
    if (K.Other)
      OS << formatv(": the fastest with another value, {0}, takes {1} ({2})",
                    configName(K.Other->C), ms(K.Other->StepSeconds),
                    signedPercent(100 * (K.Other->StepSeconds / W.StepSeconds - 1)));
    else
      OS << ": no other value fits";
    OS << "\n";
  }
}

void printPlanJson(const PlanResult &R, const PlanEval *Shown, double Speedup,
                   llvm::raw_ostream &OS) {
  llvm::json::Array Top, Rejected, Scaling, Splits;
  for (size_t I = 0; I < std::min<size_t>(R.Opts.Top, R.Ranked.size()); ++I)
    Top.push_back(evalJson(R.Ranked[I]));
  for (auto &[Why, N] : R.RejectReasons)
    Rejected.push_back(llvm::json::Object{{"reason", Why}, {"count", int64_t(N)}});
  for (auto &[N, E] : R.Scaling) {
    llvm::json::Object O = evalJson(E);
    O["devices"] = N;
    O["speedup"] = R.SingleDevice.StepSeconds / E.StepSeconds;
    Scaling.push_back(std::move(O));
  }
  for (auto &[Node, Split] : R.WeightSplits)
    Splits.push_back(llvm::json::Object{{"node", Node}, {"split", Split}});
  llvm::json::Object Doc{
      {"schema", "ridge.plan/1"},
      {"device", R.Dev->Name},
      {"devices", R.Opts.Devices},
      {"global_batch", R.Opts.GlobalBatch},
      {"overlap_grad_reduce", R.Opts.OverlapGradReduce},
      {"dtype", dtypeName(R.StepType)},
      {"memory_reserve", llvm::json::Object{{"runtime", R.Dev->MemReserve},
                                            {"collective_buffers", R.Dev->MemCollectiveBuffers},
                                            {"fragmentation", R.Dev->MemFragmentation}}},
      {"params", R.Params},
      {"evaluated", int64_t(R.Evaluated)},
      {"rejected", std::move(Rejected)},
      {"single_device", evalJson(R.SingleDevice)},
      {"top", std::move(Top)},
      {"weight_splits", std::move(Splits)},
      {"scaling", std::move(Scaling)},
      {"warnings", llvm::json::Array(R.Warnings)}};
  if (R.Fixed) {
    llvm::json::Object Fixed = evalJson(*R.Fixed);
    llvm::json::Array Chosen;
    if (R.Fixed->Fits)
      for (const ChosenKnob &K : chosenKnobs(R, *R.Fixed))
        Chosen.push_back(llvm::json::Object{
            {"knob", K.Knob},
            {"value", K.Value},
            {"other_fastest", K.Other ? llvm::json::Value(evalJson(*K.Other)) : nullptr}});
    Fixed["chosen_by_search"] = std::move(Chosen);
    Doc["fixed"] = std::move(Fixed);
  }
  if (Shown) {
    std::optional<double> Serial = serialFraction(Speedup, R.Opts.Devices);
    Doc["speedup"] = Speedup;
    Doc["efficiency"] = Speedup / R.Opts.Devices;
    Doc["serial_fraction"] = Serial ? llvm::json::Value(*Serial) : nullptr;
    Doc["amdahl_bound"] = Serial && *Serial > 0 ? llvm::json::Value(1.0 / *Serial) : nullptr;
  }
  ridge::printJson(OS, llvm::json::Value(std::move(Doc)));
}

/// The ranked configurations and the recommended one, explained; false
/// when none fits.
bool printRanking(const PlanResult &R, const PlanEval *Winner, double Speedup,
                  llvm::raw_ostream &OS) {
  if (!Winner) {
    OS << "no configuration fits device memory";
    for (auto &[Why, N] : R.RejectReasons)
      OS << formatv(" ({0}: {1})", Why, N);
    OS << "\n";
    return false;
  }
  OS << "\nrank  step       TFLOP/s/dev  MFU    memory     configuration\n";
  for (size_t I = 0; I < std::min<size_t>(R.Opts.Top, R.Ranked.size()); ++I) {
    const PlanEval &E = R.Ranked[I];
    OS << formatv("{0,4}  {1,-10} {2,11:F1}  {3,5:P1}  {4,-9}  {5}\n", I + 1,
                  ms(E.StepSeconds), E.TFlopsPerDevice / 1e12, E.MFU,
                  siNumber(E.MemoryBytes, "B"), configName(E.C));
  }
  OS << "\nrecommended: " << configName(Winner->C) << "\n";
  OS << formatv("  step {0} vs {1} on one device: speedup {2}, efficiency {3:P1}\n",
                ms(Winner->StepSeconds), ms(R.SingleDevice.StepSeconds), speedupText(Speedup),
                Speedup / R.Opts.Devices);
  printBreakdown(*Winner, OS, "  ");
  explain(R, *Winner, OS);
  return true;
}

void printPlanText(const PlanResult &R, const PlanEval *Winner, double Speedup,
                   llvm::raw_ostream &OS) {
  OS << formatv("plan: {0} x {1} ({2} per node), global batch {3}, {4}, {5} parameters\n",
                R.Opts.Devices, R.Dev->Name,
                R.Opts.DevicesPerNode ? R.Opts.DevicesPerNode : R.Dev->DevicesPerNode,
                R.Opts.GlobalBatch, dtypeName(R.StepType), withCommas(R.Params));
  OS << formatv("memory reserve per device: runtime {0} (context, kernels, workspaces) + "
                "collective buffers {1} when it communicates + fragmentation {2:P0} of what "
                "is allocated\n",
                siNumber(R.Dev->MemReserve, "B"), siNumber(R.Dev->MemCollectiveBuffers, "B"),
                R.Dev->MemFragmentation);
  OS << formatv("searched {0} configurations; {1} do not fit device memory\n", R.Evaluated,
                R.Rejected);
  if (R.Fixed) {
    OS << "\nconfiguration " << configName(R.Fixed->C) << ":\n";
    OS << formatv("  step {0}, {1:F1} TFLOP/s per device, MFU {2:P1}, speedup {3} vs one "
                  "device{4}\n",
                  ms(R.Fixed->StepSeconds), R.Fixed->TFlopsPerDevice / 1e12, R.Fixed->MFU,
                  speedupText(Speedup), R.Fixed->Fits ? "" : " -- DOES NOT FIT: " + R.Fixed->Why);
    printBreakdown(*R.Fixed, OS, "  ");
    if (R.Fixed->Fits)
      printChosenKnobs(R, *R.Fixed, OS);
  } else if (!printRanking(R, Winner, Speedup, OS)) {
    return;
  }
  if (!R.Scaling.empty()) {
    OS << "\nscaling (same global batch):\n  devices  step        speedup  efficiency  "
          "configuration\n";
    for (auto &[N, E] : R.Scaling) {
      double S = R.SingleDevice.StepSeconds / E.StepSeconds;
      OS << formatv("  {0,7}  {1,-10} {2,7:F2}x  {3,10:P1}  {4}\n", N, ms(E.StepSeconds), S,
                    S / N, configName(E.C));
    }
  }
}

} // namespace

void ridge::printPlan(const PlanResult &R, const Config &Cfg, llvm::raw_ostream &OS) {
  const PlanEval *Winner = R.Ranked.empty() ? nullptr : &R.Ranked.front();
  const PlanEval *Shown = R.Fixed ? &*R.Fixed : Winner;
  if (!R.Opts.Emit.empty()) {
    if (Shown)
      emit(R, *Shown, Cfg, OS);
    return;
  }
  double Speedup = Shown ? R.SingleDevice.StepSeconds / Shown->StepSeconds : 0;
  if (Cfg.Format == OutputFormat::Json)
    printPlanJson(R, Shown, Speedup, OS);
  else
    printPlanText(R, Winner, Speedup, OS);
}

void ridge::printLaws(double P, llvm::ArrayRef<double> Speedups, double Bytes, unsigned Ranks,
                      double Bandwidth, double Latency, unsigned Stages, unsigned Micro,
                      unsigned Chunks, llvm::raw_ostream &OS) {
  if (P >= 0 && P <= 1) {
    OS << formatv("Amdahl, parallel fraction p = {0:F2}: speedup = 1 / ((1 - p) + p/s)\n", P);
    for (double S : Speedups)
      OS << formatv("  s = {0}: {1:F2}x\n", S, amdahlSpeedup(P, S));
    OS << (P < 1 ? formatv("  bound 1/(1 - p) = {0:F2}x\n", 1.0 / (1.0 - P)).str()
                 : std::string("  no bound (p = 1)\n"));
  }
  if (Bytes > 0 && Ranks > 0 && Bandwidth > 0) {
    OS << formatv("ring collectives, {0:e} bytes on {1} ranks at {2:e} B/s, latency {3:e} s per "
                  "step:\n",
                  Bytes, Ranks, Bandwidth, Latency);
    struct {
      CollectiveKind K;
      const char *Formula;
    } Rows[] = {{CollectiveKind::AllReduce, "2(n-1) latency + 2(n-1)/n bytes/bw"},
                {CollectiveKind::AllGather, "(n-1) latency + (n-1)/n bytes/bw"},
                {CollectiveKind::ReduceScatter, "(n-1) latency + (n-1)/n bytes/bw"},
                {CollectiveKind::AllToAll, "(n-1) latency + (n-1)/n bytes/bw"}};
    for (auto &R : Rows)
      OS << formatv("  {0,-15} {1:e} s   = {2}\n", collectiveName(R.K),
                    collectiveSeconds(R.K, Bytes, Ranks, Bandwidth, Latency), R.Formula);
  }
  if (Stages > 0 && Micro > 0) {
    double V = std::max(1u, Chunks);
    OS << formatv("pipeline bubble (p-1)/(v m + p - 1) with p = {0}, m = {1}, v = {2:F0}: "
                  "{3:F4}\n",
                  Stages, Micro, V, (Stages - 1) / (V * Micro + Stages - 1));
  }
}

llvm::Error ridge::writeScalingSvg(const PlanResult &R, llvm::StringRef Path) {
  if (R.Scaling.empty())
    return usageError("--scaling-svg: no scaling curve (no configuration fits)");
  std::string Svg;
  llvm::raw_string_ostream OS(Svg);
  renderScalingSvg(R, OS);
  return writeTextFile(Path, Svg);
}

void ridge::renderScalingSvg(const PlanResult &R, llvm::raw_ostream &OS) {
  // Log2 x (devices), linear y (speedup); the ideal line and Amdahl's bound
  // from the serial fraction the largest point implies.
  const double W = 640, H = 420, L = 70, Rm = 30, T = 50, B = 60;
  double MaxN = R.Scaling.back().first;
  double MaxS = MaxN;
  auto X = [&](double N) { return L + (W - L - Rm) * std::log2(N) / std::max(1.0, std::log2(MaxN)); };
  auto Y = [&](double S) { return H - B - (H - B - T) * S / MaxS; };
  double LastSpeedup = R.SingleDevice.StepSeconds / R.Scaling.back().second.StepSeconds;
  std::optional<double> Serial = serialFraction(LastSpeedup, unsigned(MaxN));
  OS << formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n",
                W, H);
  OS << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  OS << formatv("<text x=\"{0}\" y=\"25\" font-size=\"15\">Scaling on {1}: speedup vs one "
                "device (global batch {2})</text>\n",
                L, xmlText(R.Dev->Name), R.Opts.GlobalBatch);
  OS << formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", L,
                H - B, W - Rm);
  OS << formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", L,
                H - B, T);
  for (auto &[N, E] : R.Scaling)
    OS << formatv("<text x=\"{0:F1}\" y=\"{1}\" text-anchor=\"middle\">{2}</text>\n", X(N),
                  H - B + 18, N);
  for (int I = 0; I <= 4; ++I) {
    double S = MaxS * I / 4;
    OS << formatv("<text x=\"{0}\" y=\"{1:F1}\" text-anchor=\"end\">{2:F1}</text>\n", L - 6,
                  Y(S) + 4, S);
  }
  OS << formatv("<text x=\"{0:F1}\" y=\"{1}\" text-anchor=\"middle\">devices</text>\n",
                (L + W - Rm) / 2, H - 20);
  OS << formatv("<text x=\"18\" y=\"{0:F1}\" transform=\"rotate(-90 18 {0:F1})\" "
                "text-anchor=\"middle\">speedup</text>\n",
                (T + H - B) / 2);
  // Ideal (linear) and Amdahl's bound.
  OS << "<polyline fill=\"none\" stroke=\"gray\" stroke-dasharray=\"4 3\" points=\"";
  for (auto &[N, E] : R.Scaling)
    OS << formatv("{0:F1},{1:F1} ", X(N), Y(N));
  OS << "\"/>\n";
  if (Serial) {
    OS << "<polyline fill=\"none\" stroke=\"#d62728\" stroke-dasharray=\"2 2\" points=\"";
    for (auto &[N, E] : R.Scaling)
      OS << formatv("{0:F1},{1:F1} ", X(N), Y(amdahlSpeedup(1 - *Serial, N)));
    OS << "\"/>\n";
  }
  OS << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
  for (auto &[N, E] : R.Scaling)
    OS << formatv("{0:F1},{1:F1} ", X(N), Y(R.SingleDevice.StepSeconds / E.StepSeconds));
  OS << "\"/>\n";
  for (auto &[N, E] : R.Scaling) {
    double S = R.SingleDevice.StepSeconds / E.StepSeconds;
    OS << formatv("<circle cx=\"{0:F1}\" cy=\"{1:F1}\" r=\"4\" fill=\"#1f77b4\"><title>{2} "
                  "devices: {3:F2}x ({4})</title></circle>\n",
                  X(N), Y(S), N, S, configName(E.C));
  }
  OS << formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#1f77b4\">predicted (best configuration "
                "per device count)</text>\n",
                L + 10, T + 15);
  OS << formatv("<text x=\"{0}\" y=\"{1}\" fill=\"gray\">linear</text>\n", L + 10, T + 30);
  if (Serial)
    OS << formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#d62728\">Amdahl, serial fraction {2:F4} "
                  "(bound {3})</text>\n",
                  L + 10, T + 45, *Serial,
                  *Serial > 0 ? formatv("{0:F1}x", 1.0 / *Serial).str() : std::string("none"));
  else
    OS << formatv("<text x=\"{0}\" y=\"{1}\" fill=\"#d62728\">Amdahl: no serial fraction "
                  "(speedup {2}, below 1, on {3} devices)</text>\n",
                  L + 10, T + 45, speedupText(LastSpeedup), unsigned(MaxN));
  OS << "</svg>\n";
}

llvm::Error ridge::writePlanHtml(const PlanResult &R, const Config &Cfg, llvm::StringRef Model,
                                 llvm::StringRef Path) {
  const PlanEval *Winner = R.Ranked.empty() ? nullptr : &R.Ranked.front();
  const PlanEval *Shown = R.Fixed ? &*R.Fixed : Winner;
  double Speedup = Shown ? R.SingleDevice.StepSeconds / Shown->StepSeconds : 0;
  std::string Json, Svg, Page;
  llvm::raw_string_ostream JOS(Json), SOS(Svg), POS(Page);
  printPlanJson(R, Shown, Speedup, JOS);
  auto Doc = llvm::json::parse(Json);
  if (!Doc)
    return Doc.takeError();
  if (!R.Scaling.empty())
    renderScalingSvg(R, SOS);
  renderPlanHtml(POS, *Doc, Model, Svg, R.Dev->MemCapacity);
  return writeTextFile(Path, Page);
}
