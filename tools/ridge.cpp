//===- ridge.cpp - The ridge command-line driver --------------------------===//
//
// Parses options, loads the model, builds the pipeline for the subcommand,
// runs it, prints diagnostics. Nothing else lives here.
//
//===----------------------------------------------------------------------===//
#include "analyzer/SafeText.h"
#include "devices/Calibrate.h"
#include "devices/Device.h"
#include "analyzer/onnx/AnnotatedModel.h"
#include "analyzer/onnx/Loader.h"
#include "analyzer/symbolic/Count.h"
#include "passes/Passes.h"
#include "passes/plan/Planner.h"
#include "passes/report/RooflineChart.h"
#include "passes/report/ServingReport.h"
#include "passes/report/Budget.h"
#include "passes/report/DiffReport.h"
#include "passes/report/HtmlReport.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <cstdlib>

using namespace ridge;
namespace cl = llvm::cl;

static cl::OptionCategory RidgeCat("ridge options");

static cl::SubCommand PrintCmd("print", "Print the IR with inferred shapes");
static cl::SubCommand AnalyzeCmd(
    "analyze", "Per-op forward/backward FLOPs, bytes and memory of a training step");
static cl::SubCommand RunCmd("run", "Run the pass pipeline given by --passes");
static cl::SubCommand PlanCmd(
    "plan", "Recommend data/tensor/pipeline parallelism for N devices, with its step time");
static cl::SubCommand LawsCmd(
    "laws", "Evaluate laws.md's formulas: Amdahl, ring collectives, pipeline bubble");
static cl::SubCommand CalibrateCmd(
    "calibrate", "Measure this machine's peak FLOP/s and memory bandwidth; write a device file");
static cl::SubCommand DevicesCmd("devices",
                                 "List the device descriptions and their ridge points");
static cl::SubCommand DiffCmd("diff", "What changed between two models: totals, op types, "
                                      "nodes; --fail-if budgets for CI");

#define MODEL_SUBS                                                                         \
  cl::sub(PrintCmd), cl::sub(AnalyzeCmd), cl::sub(RunCmd), cl::sub(PlanCmd), cl::sub(DiffCmd)

static cl::opt<std::string> ModelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx|model.onnxtxt|->"),
                                      MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<std::string> NewModelPath(cl::Positional, cl::Required,
                                         cl::desc("<new model>"), cl::sub(DiffCmd),
                                         cl::cat(RidgeCat));
static cl::list<std::string> FailIf(
    "fail-if",
    cl::desc("Exit 1 when a budget breaks: KEY>VALUE (step_seconds>0.5, memory.total>80e9; on "
             "diff also a change, step_flops>+5%); repeatable"),
    cl::value_desc("BUDGET"), cl::sub(AnalyzeCmd), cl::sub(DiffCmd), cl::cat(RidgeCat));
static cl::list<std::string>
    DimBindings("dim", cl::desc("Bind a symbolic dim: --dim batch=32 (repeatable)"),
                cl::value_desc("NAME=N"), MODEL_SUBS, cl::cat(RidgeCat));
static cl::list<std::string> InputShapes(
    "input-shape",
    cl::desc("Set a graph input's shape: --input-shape input=1x3x224x224"),
    cl::value_desc("NAME=AxBxC"), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> NoShapeInference(
    "no-shape-inference",
    cl::desc("Skip shape inference (ridge's rules and ONNX's fallback); use the shapes the file stores"),
    MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<OutputFormat> Format(
    "format", cl::desc("Output format"), cl::init(OutputFormat::Text),
    cl::values(clEnumValN(OutputFormat::Text, "text", "human-readable table"),
               clEnumValN(OutputFormat::Json, "json", "JSON (versioned schema)"),
               clEnumValN(OutputFormat::Csv, "csv", "CSV")),
    cl::sub(AnalyzeCmd), cl::sub(RunCmd), cl::sub(PlanCmd), cl::sub(DiffCmd), cl::cat(RidgeCat));
static cl::opt<std::string> OutputPath("o", cl::desc("Write output to FILE (default: stdout)"),
                                       cl::value_desc("FILE"), cl::init("-"),
                                       MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<std::string>
    Passes("passes", cl::desc("Comma-separated pass pipeline (see --list-passes)"),
           cl::sub(RunCmd), cl::cat(RidgeCat));
static cl::opt<std::string>
    PrintAfter("print-after", cl::desc("Print the IR after the named pass ('all': after each)"),
               cl::value_desc("PASS"), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> TimePasses("timing",
                                cl::desc("Report the wall time of each pass and analysis on stderr"),
                                MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<std::string> DTypeOpt(
    "dtype",
    cl::desc("Element type of floating-point tensors in training (fp32, bf16, fp16, "
             "fp8); 16-bit types keep fp32 master weights. Default: as stored"),
    cl::value_desc("TYPE"), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<Config::Optimizer> OptimizerOpt(
    "optimizer", cl::desc("Optimizer of the training step"), cl::init(Config::Optimizer::AdamW),
    cl::values(clEnumValN(Config::Optimizer::SGD, "sgd", "w -= lr*g"),
               clEnumValN(Config::Optimizer::Momentum, "momentum", "SGD with momentum"),
               clEnumValN(Config::Optimizer::Adam, "adam", "Adam"),
               clEnumValN(Config::Optimizer::AdamW, "adamw", "Adam with decoupled weight decay")),
    MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<Config::Recompute> RecomputeOpt(
    "recompute", cl::desc("Activation recomputation"), cl::init(Config::Recompute::None),
    cl::values(clEnumValN(Config::Recompute::None, "none", "keep every saved tensor"),
               clEnumValN(Config::Recompute::Selective, "selective",
                          "Megatron-LM's: recompute the attention core (QK^T, softmax, "
                          "dropout, the product with V), keep the rest"),
               clEnumValN(Config::Recompute::Full, "full",
                          "keep each layer's input, recompute its forward (Megatron-LM's "
                          "full, uniform, 1 layer)"),
               clEnumValN(Config::Recompute::Cheap, "cheap",
                          "keep what matrix products save, recompute every cheaper op "
                          "(analyze only)")),
    MODEL_SUBS, cl::cat(RidgeCat));
static cl::list<std::string> TrainableInputs(
    "trainable-input", cl::desc("Treat this graph input as trained (repeatable)"),
    cl::value_desc("NAME"), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<int64_t> TripCount(
    "trip-count", cl::desc("Iterations of each Loop whose trip count the graph leaves open"),
    cl::value_desc("N"), cl::init(-1), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> Strict("strict", cl::desc("Fail if any op cannot be costed"),
                            MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> FreezeConstants(
    "freeze-constants",
    cl::desc("Do not train weights the graph computes from constants (Constant, "
             "ConstantOfShape, DequantizeLinear of an initializer); only initializers"),
    MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<size_t> TwoThreadsFrom(
    "two-threads-from",
    cl::desc("Make the rows of a graph of at least this many nodes on two threads (a check: "
             "the same output at any value)"),
    cl::Hidden, cl::init(Config().TwoThreadsFrom), MODEL_SUBS, cl::cat(RidgeCat));
static cl::list<std::string> FreezeOpt(
    "freeze",
    cl::desc("Do not train the parameters whose names match this glob (repeatable): "
             "--freeze 'model.embed_tokens.*' --freeze '*inv_freq'"),
    cl::value_desc("GLOB"), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<std::string> SortOpt(
    "sort", cl::desc("Order of per-node rows: time (default), flops, bytes, name or order "
                     "(topological)"),
    cl::init("time"), cl::sub(AnalyzeCmd), cl::sub(RunCmd), cl::cat(RidgeCat));
static cl::opt<unsigned> TopOpt("top",
                                cl::desc("Per-node rows in text output (default 50; 0: all; "
                                         "json and csv always have all)"),
                                cl::init(50), cl::sub(AnalyzeCmd), cl::sub(RunCmd), cl::sub(DiffCmd),
                                cl::cat(RidgeCat));
static cl::opt<std::string> DeviceName(
    "device", cl::desc("Target device by name or alias (see 'ridge devices'); default H100-SXM5-80GB"),
    cl::value_desc("NAME"), cl::init("H100-SXM5-80GB"), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<std::string> DeviceFile(
    "device-file", cl::desc("Read the target device from this YAML file (see devices/README.md)"),
    cl::value_desc("PATH"), MODEL_SUBS, cl::sub(DevicesCmd), cl::cat(RidgeCat));
static cl::opt<double> MemReserveOpt(
    "memory-reserve",
    cl::desc("Bytes per device the runtime holds beside the tensors (CUDA context, kernels, "
             "library workspaces); default: the device file's, else its kind's"),
    cl::value_desc("BYTES"), cl::init(-1), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<double> CollectiveBuffersOpt(
    "collective-buffers",
    cl::desc("Bytes per device of the collective library's buffers (NCCL), when a plan "
             "communicates; default: the device file's, else its kind's"),
    cl::value_desc("BYTES"), cl::init(-1), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<double> FragmentationOpt(
    "fragmentation",
    cl::desc("Fraction of the allocated bytes the caching allocator loses to fragmentation; "
             "default: the device file's, else its kind's"),
    cl::value_desc("F"), cl::init(-1), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> NoOverlap(
    "no-overlap", cl::desc("Add compute and memory time per op instead of taking the larger"),
    MODEL_SUBS, cl::cat(RidgeCat));
enum class TimeModel { Kernels, Roofline };
static cl::opt<TimeModel> TimeModelOpt(
    "time-model", cl::desc("How op times are predicted"), cl::init(TimeModel::Kernels),
    cl::values(clEnumValN(TimeModel::Kernels, "kernels",
                          "each op's kernels: waves, K depth, bandwidth, launch (GPUs whose "
                          "device file gives cores.count; the roofline elsewhere)"),
               clEnumValN(TimeModel::Roofline, "roofline",
                          "the roofline bound: max(compute, memory) at derated peaks")),
    MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> TF32Opt("tf32", cl::desc("Run fp32 matrix products on TF32 tensor cores"),
                             MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> WinogradOpt(
    "winograd",
    cl::desc("3x3 convolutions may run as Winograd (default true; false: implicit GEMMs "
             "only, as cuDNN's tensor-op path and its deterministic algorithms run them)"),
    cl::init(true), MODEL_SUBS, cl::cat(RidgeCat));
static cl::opt<bool> InferenceOpt(
    "inference",
    cl::desc("Analyze a forward pass only: weights at their stored width, the peak of live "
             "activations, latency and samples/s"),
    cl::sub(AnalyzeCmd), cl::sub(RunCmd), cl::sub(PlanCmd), cl::sub(DiffCmd), cl::cat(RidgeCat));
static cl::opt<int64_t> PromptOpt(
    "prompt", cl::desc("Inference: the prefill of P prompt tokens (past 0, sequence P)"),
    cl::value_desc("P"), cl::init(0), cl::sub(AnalyzeCmd), cl::sub(PlanCmd), cl::cat(RidgeCat));
static cl::opt<int64_t> ContextOpt(
    "context",
    cl::desc("Inference: one decode step at context C (past C-1, one new token), with a "
             "batch sweep"),
    cl::value_desc("C"), cl::init(0), cl::sub(AnalyzeCmd), cl::sub(PlanCmd), cl::cat(RidgeCat));
static cl::opt<int64_t> BatchOpt("batch",
                                 cl::desc("Inference with --prompt/--context: the batch "
                                          "(default 1)"),
                                 cl::init(1), cl::sub(AnalyzeCmd), cl::sub(PlanCmd),
                                 cl::cat(RidgeCat));
enum class Objective { Latency, Throughput };
static cl::opt<Objective> ObjectiveOpt(
    "objective", cl::desc("plan --inference: rank by"),
    cl::values(clEnumValN(Objective::Latency, "latency", "time per token (default)"),
               clEnumValN(Objective::Throughput, "throughput", "tokens/s over all devices")),
    cl::init(Objective::Latency), cl::sub(PlanCmd), cl::cat(RidgeCat));
enum class KVAppend { Copy, InPlace };
static cl::opt<KVAppend> KVAppendOpt(
    "kv-append", cl::desc("Inference: how a KV cache's Concat appends the new keys and values"),
    cl::values(clEnumValN(KVAppend::Copy, "copy",
                          "the whole cache copied, as the graph's Concat says (default)"),
               clEnumValN(KVAppend::InPlace, "in-place",
                          "only the new entries written into the cache, as serving engines "
                          "append")),
    cl::init(KVAppend::Copy), cl::sub(AnalyzeCmd), cl::sub(PlanCmd), cl::cat(RidgeCat));
static cl::opt<bool> NoSweepOpt("no-sweep",
                                cl::desc("Inference: skip the batch sweep"),
                                cl::sub(AnalyzeCmd), cl::cat(RidgeCat));
static cl::opt<std::string> RooflineOut(
    "roofline", cl::desc("Also write a roofline chart of every op (.svg or self-contained .html)"),
    cl::value_desc("FILE"), cl::sub(AnalyzeCmd), cl::cat(RidgeCat));
static cl::opt<std::string> AnnotateOut(
    "annotate",
    cl::desc("Also write a copy of the model with ridge's shapes (value_info) and numbers "
             "(ridge.* metadata_props) for Netron; weights copied as they lie"),
    cl::value_desc("OUT.onnx"), cl::sub(AnalyzeCmd), cl::cat(RidgeCat));
static cl::opt<std::string> ReportOut(
    "report",
    cl::desc("Also write one self-contained HTML page: summary, sortable per-node table, "
             "roofline, memory, fusion (analyze); ranking, breakdown, scaling (plan)"),
    cl::value_desc("OUT.html"), cl::sub(AnalyzeCmd), cl::sub(PlanCmd), cl::cat(RidgeCat));
// ridge plan.
static cl::OptionCategory PlanCat("ridge plan options");
static cl::opt<unsigned> PlanDevices("devices", cl::desc("Number of devices N"), cl::init(1),
                                     cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<unsigned> PlanPerNode("devices-per-node",
                                     cl::desc("Devices per node (default: the device file's)"),
                                     cl::init(0), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<int64_t> PlanGlobalBatch("global-batch", cl::desc("Samples per training step"),
                                        cl::init(0), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<int64_t> PlanMicroBatch("micro-batch",
                                       cl::desc("Micro-batch size (default: searched)"),
                                       cl::init(0), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<std::string> PlanBatchDim(
    "batch-dim",
    cl::desc("Symbolic dim(s) that are the batch, comma-separated (default: the first "
             "input's dim 0; a fixed dim 0 of every input is replaced)"),
    cl::value_desc("NAME[,NAME...]"), cl::sub(PlanCmd), cl::sub(AnalyzeCmd), cl::cat(PlanCat));
static cl::opt<unsigned> PlanTP("tp", cl::desc("Fix the tensor-parallel degree"), cl::init(0),
                                cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<unsigned> PlanPP("pp", cl::desc("Fix the pipeline-parallel degree"), cl::init(0),
                                cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<unsigned> PlanDP("dp", cl::desc("Fix the data-parallel degree"), cl::init(0),
                                cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<unsigned> PlanInterleave("interleave",
                                        cl::desc("Fix the interleaved chunks per stage (v)"),
                                        cl::init(0), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<int> PlanZero("zero", cl::desc("Fix the ZeRO stage (0-3)"), cl::init(-1),
                             cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<bool> PlanSP("sequence-parallel",
                            cl::desc("Fix sequence parallelism on (=false: off)"),
                            cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<unsigned> PlanMaxTP("max-tp",
                                   cl::desc("Largest tensor-parallel degree searched (default: "
                                            "devices per node)"),
                                   cl::init(0), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<double> PlanSlowdown(
    "overlap-slowdown",
    cl::desc("Fraction by which overlapped communication slows compute (default 0.1)"),
    cl::init(0.1), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<bool> PlanOverlapGrad(
    "overlap-grad-reduce",
    cl::desc("Overlap the data-parallel gradient all-reduce with the last backward "
             "(default true; =false: it runs after the backward, as in Megatron-LM by default)"),
    cl::init(true), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<bool> PlanFineSegments(
    "plan-fine-segments",
    cl::desc("Sum every partition position by position, not by the segments between the "
             "graph's cuts (a check: the same plan, to rounding)"),
    cl::Hidden, cl::init(false), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<unsigned> PlanTop("show", cl::desc("Configurations to print (default 5)"),
                                 cl::init(5), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<bool> PlanScaling("scaling",
                                 cl::desc("Also print the best configuration on 1, 2, 4, ... N"),
                                 cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<std::string> PlanScalingSvg(
    "scaling-svg", cl::desc("Write the scaling curve as SVG (implies --scaling)"),
    cl::value_desc("FILE"), cl::sub(PlanCmd), cl::cat(PlanCat));
static cl::opt<std::string> PlanEmit(
    "emit", cl::desc("Print launch settings for the plan: megatron, deepspeed or torch"),
    cl::sub(PlanCmd), cl::cat(PlanCat));
// ridge laws.
static cl::opt<double> LawFraction("parallel-fraction",
                                   cl::desc("Amdahl: the parallelizable fraction p of the time"),
                                   cl::init(-1), cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::list<double> LawSpeedups("s", cl::desc("Amdahl: speedups s of the parallel part"),
                                    cl::CommaSeparated, cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::opt<double> LawBytes("bytes", cl::desc("Collective: bytes of the tensor"),
                                cl::init(0), cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::opt<unsigned> LawRanks("ranks", cl::desc("Collective: group size n"), cl::init(0),
                                  cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::opt<double> LawBandwidth("bandwidth", cl::desc("Collective: link bytes/s"),
                                    cl::init(0), cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::opt<double> LawLatency("latency", cl::desc("Collective: seconds per step"),
                                  cl::init(0), cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::opt<unsigned> LawStages("stages", cl::desc("Pipeline: stages p"), cl::init(0),
                                   cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::opt<unsigned> LawMicro("micro-batches", cl::desc("Pipeline: micro-batches m"),
                                  cl::init(0), cl::sub(LawsCmd), cl::cat(RidgeCat));
static cl::opt<unsigned> LawChunks("chunks", cl::desc("Pipeline: interleaved chunks v"),
                                   cl::init(1), cl::sub(LawsCmd), cl::cat(RidgeCat));
// ridge calibrate.
static cl::opt<std::string> CalOut("o", cl::desc("Write the device description to FILE"),
                                   cl::value_desc("FILE"), cl::sub(CalibrateCmd),
                                   cl::cat(RidgeCat));
static cl::opt<unsigned> CalThreads("threads", cl::desc("Threads (default: all CPUs)"),
                                    cl::init(0), cl::sub(CalibrateCmd), cl::cat(RidgeCat));
static cl::opt<double> CalSeconds("seconds", cl::desc("Seconds per measurement (default 0.5)"),
                                  cl::init(0.5), cl::sub(CalibrateCmd), cl::cat(RidgeCat));
static cl::opt<bool> ListPasses("list-passes", cl::desc("List the passes --passes accepts"),
                                cl::cat(RidgeCat));

static int fail(llvm::Error E) {
  // (A message may quote the model's strings: its control characters are
  // escaped, SafeText.h.)
  llvm::WithColor::error(llvm::errs(), "ridge") << escapeControls(llvm::toString(std::move(E)))
                                                << '\n';
  return 1;
}

/// The output file (-o, or stdout), under the control-escaping text stream
/// every report writes to.
static llvm::raw_fd_ostream *OutFile = nullptr;

/// Flushes the output and ends the run. Freeing a 100k-node model and its
/// analyses one object at a time takes longer than analyzing it, and the
/// process is about to end (clang's -disable-free does the same); --timing's
/// report prints at teardown, so then the run returns normally.
static int finish(llvm::raw_ostream &Out, int RC) {
  Out.flush();
  if (auto *Text = dynamic_cast<ControlEscapingStream *>(&Out))
    Text->releaseHeldByte();
  OutFile->flush();
  if (OutFile->has_error()) {
    OutFile->clear_error();
    return fail(fileError(OutputPath, "write failed"));
  }
  if (!TimePasses) {
    llvm::outs().flush();
    llvm::errs().flush();
    std::_Exit(RC);
  }
  return RC;
}

static void parseOptions(int argc, char **argv) {
  cl::SetVersionPrinter([](llvm::raw_ostream &OS) {
    OS << "ridge " << RIDGE_VERSION << " (ONNX 1.12 opsets up to 17 inferred, LLVM "
       << LLVM_VERSION_STRING << ")\n";
  });
  for (cl::SubCommand *S :
       {&cl::SubCommand::getTopLevel(), &PrintCmd, &AnalyzeCmd, &RunCmd, &DevicesCmd, &PlanCmd,
        &LawsCmd, &CalibrateCmd, &DiffCmd})
    cl::HideUnrelatedOptions({&RidgeCat, &PlanCat}, *S);
  cl::ParseCommandLineOptions(
      argc, argv,
      "ridge: training cost, roofline and parallelism analysis of ONNX models\n\n"
      "  ridge analyze MODEL     summary of the model\n"
      "  ridge print MODEL       the IR with inferred shapes\n"
      "  ridge plan MODEL --devices N --global-batch B   a parallel strategy\n"
      "  ridge diff OLD NEW      what a model change costs (--fail-if budgets)\n"
      "  ridge devices           the target devices and their ridge points\n"
      "  ridge laws              laws.md's formulas (Amdahl, collectives, bubble)\n"
      "  ridge calibrate -o F    measure this machine; write its device file\n"
      "  ridge run MODEL --passes=a,b\n\n"
      "Counting: a FLOP is one add or multiply (a multiply-accumulate is 2; MACs are\n"
      "reported for matrix products and convolutions); transcendentals are counted\n"
      "apart; bytes are what an unfused kernel reads and writes, views move none;\n"
      "the backward covers inputs that need a gradient. README.md has the details.\n");
}

/// `ridge calibrate`: measures this machine and writes its device file.
static int runCalibrate() {
  CalibrateOptions CO;
  CO.Threads = CalThreads;
  CO.Seconds = CalSeconds;
  auto R = calibrateHost(CO);
  if (!R)
    return fail(R.takeError());
  llvm::outs() << llvm::formatv(
      "calibrated {0} ({1}, {2} threads): fp32 {3:F1} GFLOP/s, fp64 {4:F1} GFLOP/s, "
      "triad bandwidth {5:F2} GB/s, ridge point (fp32) {6:F2} FLOP/byte\n",
      R->CpuModel, R->Isa, R->Threads, R->Fp32Flops / 1e9, R->Fp64Flops / 1e9,
      R->Bandwidth / 1e9, R->Fp32Flops / R->Bandwidth);
  if (R->OtherLoad > 0.05)
    llvm::WithColor::warning(llvm::errs(), "ridge")
        << llvm::formatv("other processes used {0:P0} of the CPUs while measuring; the "
                         "figures are likely low, run again on an idle machine\n",
                         R->OtherLoad);
  if (CalOut.empty())
    return 0;
  std::error_code EC;
  llvm::raw_fd_ostream F(CalOut, EC, llvm::sys::fs::OF_None);
  if (EC)
    return fail(fileError(CalOut, EC.message()));
  writeCalibratedDevice(*R, F);
  llvm::outs() << "wrote " << CalOut << " (use it with --device-file)\n";
  return 0;
}

/// The device descriptions: --device-file alone, or the shipped folder.
static llvm::Expected<std::vector<Device>> loadDevices(const char *Argv0) {
  if (DeviceFile.empty())
    return loadDeviceDir(defaultDeviceDir(Argv0, RIDGE_SOURCE_DEVICES_DIR));
  auto D = loadDeviceFile(DeviceFile);
  if (!D)
    return D.takeError();
  std::vector<Device> Devices;
  Devices.push_back(std::move(*D));
  return Devices;
}

/// The target: the one --device-file, or --device by name among Devices.
static llvm::Expected<const Device *> selectDevice(const std::vector<Device> &Devices) {
  if (!DeviceFile.empty())
    return &Devices.front();
  return findDevice(Devices, DeviceName);
}

/// The target with --memory-reserve, --collective-buffers and
/// --fragmentation applied, checked.
static llvm::Expected<Device> withReserveOptions(const Device &D) {
  ReserveOverrides O;
  if (MemReserveOpt.getNumOccurrences())
    O.Reserve = MemReserveOpt;
  if (CollectiveBuffersOpt.getNumOccurrences())
    O.CollectiveBuffers = CollectiveBuffersOpt;
  if (FragmentationOpt.getNumOccurrences())
    O.Fragmentation = FragmentationOpt;
  return withReserveOverrides(D, O, [](const char *Key) {
    std::string Flag = "--" + std::string(Key);
    std::replace(Flag.begin(), Flag.end(), '_', '-');
    return Flag;
  });
}

/// --dim, --input-shape and --no-shape-inference.
static llvm::Expected<LoadOptions> loadOptions() {
  LoadOptions LO;
  LO.InferShapes = !NoShapeInference;
  for (const auto &S : DimBindings) {
    auto B = parseDimBinding(S);
    if (!B)
      return B.takeError();
    LO.DimBindings.push_back(*B);
  }
  for (const auto &S : InputShapes) {
    auto B = parseInputShape(S);
    if (!B)
      return B.takeError();
    LO.InputShapes.push_back(*B);
  }
  return LO;
}

/// The Config every pass reads, from the shared options.
static llvm::Expected<Config> passConfig(llvm::raw_ostream &Out, const Device *Dev) {
  Config C;
  C.Out = &Out;
  C.Format = Format;
  C.Color = OutputPath == "-" && Out.has_colors();
  C.PrintAfter = PrintAfter;
  if (!DTypeOpt.empty()) {
    auto T = parseDType(DTypeOpt);
    if (!T || !isFloatingPoint(*T))
      return usageError("--dtype '" + DTypeOpt +
                        "': expected a floating-point type (fp32, bf16, fp16, fp8, fp64)");
    C.ComputeDType = *T;
  } else if (PlanCmd && !InferenceOpt && !PromptOpt.getNumOccurrences() &&
             !ContextOpt.getNumOccurrences()) {
    C.ComputeDType = Dev ? Dev->trainingDType() : DType::BFloat16;
  }
  C.Opt = OptimizerOpt;
  C.Recomp = RecomputeOpt;
  C.TrainableInputs.assign(TrainableInputs.begin(), TrainableInputs.end());
  if (TripCount >= 0)
    C.TripCount = TripCount;
  C.Strict = Strict;
  C.FreezeConstants = FreezeConstants;
  C.TwoThreadsFrom = TwoThreadsFrom;
  C.Freeze.assign(FreezeOpt.begin(), FreezeOpt.end());
  if (SortOpt != "flops" && SortOpt != "bytes" && SortOpt != "time" && SortOpt != "name" &&
      SortOpt != "order")
    return usageError("--sort '" + SortOpt + "': expected flops, bytes, time, name or order");
  C.Sort = SortOpt;
  C.Top = TopOpt;
  C.Dev = Dev;
  C.SumTerms = NoOverlap;
  C.RooflineTimes = TimeModelOpt == TimeModel::Roofline;
  C.TF32 = TF32Opt;
  C.Winograd = WinogradOpt;
  C.RooflinePath = RooflineOut;
  C.AnnotatePath = AnnotateOut;
  C.ReportPath = ReportOut;
  C.Budgets.assign(FailIf.begin(), FailIf.end());
  C.Inference = InferenceOpt || PromptOpt.getNumOccurrences() || ContextOpt.getNumOccurrences();
  C.KVAppendInPlace = KVAppendOpt == KVAppend::InPlace;
  if (KVAppendOpt.getNumOccurrences() && !C.Inference)
    return usageError("--kv-append: inference's (with --inference, --prompt or --context)");
  return C;
}

/// The planner's options from the `ridge plan` flags, checked.
static llvm::Expected<PlanOptions> planOptions(Timing &Timer) {
  PlanOptions PO;
  PO.Devices = PlanDevices;
  PO.DevicesPerNode = PlanPerNode;
  PO.GlobalBatch = PlanGlobalBatch;
  if (PlanMicroBatch > 0)
    PO.MicroBatch = PlanMicroBatch;
  if (PlanTP)
    PO.TP = PlanTP;
  if (PlanPP)
    PO.PP = PlanPP;
  if (PlanDP)
    PO.DP = PlanDP;
  if (PlanInterleave)
    PO.Interleave = PlanInterleave;
  if (PlanZero >= 0) {
    if (PlanZero > 3)
      return usageError("--zero must be 0, 1, 2 or 3");
    PO.Zero = unsigned(PlanZero);
  }
  if (RecomputeOpt.getNumOccurrences())
    PO.Recomp = RecomputeOpt;
  if (PlanSP.getNumOccurrences())
    PO.SequenceParallel = bool(PlanSP);
  PO.MaxTP = PlanMaxTP;
  PO.OverlapSlowdown = PlanSlowdown;
  PO.OverlapGradReduce = PlanOverlapGrad;
  PO.FineSegments = PlanFineSegments;
  PO.Timer = &Timer;
  PO.Top = PlanTop;
  PO.Scaling = PlanScaling || !PlanScalingSvg.empty() || !ReportOut.empty();
  PO.ScalingSvg = PlanScalingSvg;
  PO.Emit = PlanEmit;
  if (!PO.Emit.empty() && PO.Emit != "megatron" && PO.Emit != "deepspeed" && PO.Emit != "torch")
    return usageError("--emit '" + PO.Emit + "': expected megatron, deepspeed or torch");
  if ((PlanTP || PlanPP || PlanDP) && !(PlanTP && PlanPP && PlanDP))
    return usageError("plan: fix a configuration with all of --tp, --pp and --dp");
  if (PlanTP && uint64_t(PlanTP) * PlanPP * PlanDP != PlanDevices)
    return usageError("plan: --tp x --pp x --dp must equal --devices");
  return PO;
}

/// `ridge plan`: the planner loads the model itself (once, its batch a symbol).
static int runPlan(const LoadOptions &LO, const Config &C, Timing &Timer,
                   DiagnosticEngine &Diags, llvm::raw_ostream &Out) {
  auto PO = planOptions(Timer);
  if (!PO)
    return fail(PO.takeError());
  auto Src = ModelSource::open(ModelPath, LO);
  if (!Src)
    return fail(Src.takeError());
  static_assert(PlanSymbolicBatch == SymbolicBatch, "the planner loads with a free batch");
  auto Load = [&](int64_t Batch, DiagnosticEngine &D, bool Timed) {
    LoadOptions Mine = LO;
    Mine.Timer = Timed ? &Timer : nullptr;
    auto M = loadModelAtBatch(**Src, Mine, PlanBatchDim, Batch, D);
    Src->reset(); // loaded once: the decoded file's memory serves the search
    return M;
  };
  auto R = planParallelism(Load, C, *PO, Diags);
  Diags.flush(llvm::errs());
  if (!R)
    return fail(R.takeError());
  printPlan(*R, C, Out);
  if (!PO->ScalingSvg.empty())
    if (llvm::Error E = writeScalingSvg(*R, PO->ScalingSvg))
      return fail(std::move(E));
  if (!C.ReportPath.empty())
    if (llvm::Error E = writePlanHtml(*R, C, ModelPath, C.ReportPath))
      return fail(std::move(E));
  if (TimePasses)
    llvm::errs() << llvm::formatv("plan: searched {0} configurations in {1:F3} s\n",
                                  R->Evaluated, R->SearchSeconds);
  return finish(Out, 0);
}

/// --prompt, --context, --batch as the serving passes' options.
static ServingOptions servingOptions() {
  ServingOptions SO;
  if (PromptOpt.getNumOccurrences())
    SO.Prompt = PromptOpt;
  if (ContextOpt.getNumOccurrences())
    SO.Context = ContextOpt;
  SO.Batch = BatchOpt;
  return SO;
}

/// `ridge analyze --prompt/--context`: the model loaded at the prefill and
/// decode dims (and the sweep's batches), each pass analyzed forward-only.
static int runServing(const LoadOptions &LO, const Config &C, DiagnosticEngine &Diags,
                      llvm::raw_ostream &Out) {
  if (!C.Budgets.empty())
    return fail(usageError("--fail-if: budgets check analyze's report; with --prompt or "
                           "--context they are not supported yet"));
  if (!C.ReportPath.empty())
    return fail(usageError("--report: the page shows one analyzed graph; with --prompt or "
                           "--context (several passes) it is not supported yet, use "
                           "--inference --dim NAME=N for the pass to show"));
  if (!C.AnnotatePath.empty())
    return fail(usageError("--annotate: annotates one analyzed graph; with --prompt or "
                           "--context (several passes) it is not supported, use "
                           "--inference --dim NAME=N for the pass to annotate"));
  ServingOptions SO = servingOptions();
  SO.Sweep = !NoSweepOpt;
  auto Src = ModelSource::open(ModelPath, LO);
  if (!Src)
    return fail(Src.takeError());
  auto R =
      analyzeServing(servingLoader(**Src, LO, PlanBatchDim, "analyze --batch"), C, SO, Diags);
  Diags.flush(llvm::errs());
  if (!R)
    return fail(R.takeError());
  printServing(*R, SO, C, Out);
  return finish(Out, 0);
}

/// `ridge plan --inference`: tensor parallelism, stages and replicas for
/// one serving pass.
static int runInferencePlan(const LoadOptions &LO, const Config &C, DiagnosticEngine &Diags,
                            llvm::raw_ostream &Out) {
  if (PlanGlobalBatch.getNumOccurrences() || PlanMicroBatch.getNumOccurrences() ||
      PlanDP.getNumOccurrences())
    return fail(usageError("plan --inference: --global-batch, --micro-batch and --dp are "
                           "training's; the batch is --batch (per replica)"));
  if (!C.ReportPath.empty())
    return fail(usageError("--report: plan --inference has no page yet; its --format json "
                           "gives every number"));
  ServingOptions SO = servingOptions();
  InferencePlanOptions PO;
  PO.Devices = PlanDevices;
  PO.DevicesPerNode = PlanPerNode;
  PO.MaxTP = PlanMaxTP;
  if (PlanTP)
    PO.TP = PlanTP;
  if (PlanPP)
    PO.PP = PlanPP;
  PO.Throughput = ObjectiveOpt == Objective::Throughput;
  PO.Top = PlanTop;
  auto Src = ModelSource::open(ModelPath, LO);
  if (!Src)
    return fail(Src.takeError());
  auto R = planInference(servingLoader(**Src, LO, PlanBatchDim, "plan --inference --batch"),
                         C, SO, PO, Diags);
  Diags.flush(llvm::errs());
  if (!R)
    return fail(R.takeError());
  printInferencePlan(*R, C, Out);
  return finish(Out, 0);
}

/// `ridge diff OLD NEW`: both analyzed with the same options, their reports
/// compared; --fail-if budgets on the new one (changes from the old).
static int runDiff(const LoadOptions &LO, const Config &C, DiagnosticEngine &Diags,
                   llvm::raw_ostream &Out) {
  // The models live as long as their documents: a document's strings
  // (node and value names) point into its model's name arena.
  std::vector<std::unique_ptr<Model>> Models;
  auto Document = [&](llvm::StringRef Path) -> llvm::Expected<llvm::json::Value> {
    auto M = loadModel(Path, LO, Diags);
    if (!M)
      return M.takeError();
    Models.push_back(std::move(*M));
    AnalysisManager AM(*Models.back(), C, Diags);
    return analyzeDocument(*Models.back(), AM);
  };
  auto Old = Document(ModelPath);
  if (!Old)
    return fail(Old.takeError());
  auto New = Document(NewModelPath);
  Diags.flush(llvm::errs());
  if (!New)
    return fail(New.takeError());
  printDiff(*Old, *New, C, Out);
  if (llvm::Error E = checkBudgets(C.Budgets, *New, &*Old, NewModelPath))
    return finish(Out, fail(std::move(E)));
  return finish(Out, 0);
}

/// `ridge print`, `analyze` and `run`: load, then run the pipeline.
static int runPipeline(PassManager &PM, const LoadOptions &LO, const Config &C, Timing &Timer,
                       DiagnosticEngine &Diags, llvm::raw_ostream &Out) {
  auto Src = ModelSource::open(ModelPath, LO);
  if (!Src)
    return fail(Src.takeError());
  auto M = (*Src)->load(LO, Diags);
  Src->reset();
  Diags.flush(llvm::errs());
  if (!M)
    return fail(M.takeError());
  int RC = 0;
  // Formulas in the batch alone (the common case) take Count's fast form.
  std::optional<sym::UnivariateScope> FastForm;
  if (C.SymbolicCosts)
    if (sym::ExprRef S = (*M)->leadingSymbol())
      FastForm.emplace(S);
  auto AM = std::make_unique<AnalysisManager>(**M, C, Diags, &Timer);
  if (llvm::Error E = PM.run(**M, *AM))
    RC = fail(std::move(E));
  Diags.flush(llvm::errs());
  return finish(Out, RC);
}

/// The subcommands that read a model: options checked, output opened, then
/// the planner or the pass pipeline.
static int runModelCommand(const Device *Dev) {
  auto LO = loadOptions();
  if (!LO)
    return fail(LO.takeError());
  if (!RooflineOut.empty())
    if (llvm::Error E = checkRooflineChartPath(RooflineOut))
      return fail(std::move(E));
  if (!AnnotateOut.empty())
    if (llvm::Error E = checkAnnotateTarget(ModelPath, AnnotateOut))
      return fail(std::move(E));
  if (!ReportOut.empty())
    if (llvm::Error E = checkReportPath(ReportOut))
      return fail(std::move(E));
  // JSON and the HTML page quote the input files' paths, and must be UTF-8.
  if (Format == OutputFormat::Json || !ReportOut.empty() || DiffCmd)
    for (const std::string *P : {&ModelPath.getValue(), &NewModelPath.getValue(),
                                 &DeviceFile.getValue()})
      if (!llvm::json::isUTF8(*P))
        return fail(usageError("the path '" + llvm::json::fixUTF8(*P) +
                               "' is not UTF-8, which JSON and the HTML report need; "
                               "rename or link the file"));
  PassManager PM;
  std::string Pipeline = PrintCmd ? "print" : AnalyzeCmd ? "report" : Passes.getValue();
  if (RunCmd && Passes.empty())
    return fail(usageError("run: --passes is required (see --list-passes)"));
  if (!PlanCmd && !DiffCmd)
    if (llvm::Error E = parsePipeline(Pipeline, PM))
      return fail(std::move(E));

  Timing Timer(TimePasses);
  LO->Timer = &Timer;
  DiagnosticEngine Diags;
  std::error_code EC;
  llvm::raw_fd_ostream File(OutputPath, EC, llvm::sys::fs::OF_None);
  if (EC)
    return fail(fileError(OutputPath, EC.message()));
  OutFile = &File;
  ControlEscapingStream Out(File);
  auto C = passConfig(Out, Dev);
  if (!C)
    return fail(C.takeError());
  if (DiffCmd) {
    if (Format == OutputFormat::Csv)
      return fail(usageError("diff: the output is text or json, not csv"));
    return runDiff(*LO, *C, Diags, Out);
  }
  // analyze and run print what they can as formulas when dims stay free;
  // diff and plan compare and time numbers.
  C->SymbolicCosts = AnalyzeCmd || RunCmd;
  // print shows symbolic dims as they are: only what no formula gives is
  // unknown there.
  LO->SymbolicShapesCosted = C->SymbolicCosts || PrintCmd;
  if (PlanCmd && C->Inference)
    return runInferencePlan(*LO, *C, Diags, Out);
  if (PlanCmd)
    return runPlan(*LO, *C, Timer, Diags, Out);
  if (AnalyzeCmd && (PromptOpt.getNumOccurrences() || ContextOpt.getNumOccurrences())) {
    if (Format == OutputFormat::Csv)
      return fail(usageError("--prompt/--context: the output is text or json, not csv"));
    return runServing(*LO, *C, Diags, Out);
  }
  return runPipeline(PM, *LO, *C, Timer, Diags, Out);
}

int main(int argc, char **argv) {
  llvm::InitLLVM X(argc, argv);
  parseOptions(argc, argv);
  if (ListPasses) {
    llvm::outs() << "passes:\n";
    printPassList(llvm::outs());
    return 0;
  }
  if (CalibrateCmd)
    return runCalibrate();
  if (LawsCmd) {
    printLaws(LawFraction, LawSpeedups, LawBytes, LawRanks, LawBandwidth, LawLatency,
              LawStages, LawMicro, LawChunks, llvm::outs());
    return 0;
  }
  auto Devices = loadDevices(argv[0]);
  if (!Devices)
    return fail(Devices.takeError());
  if (DevicesCmd) {
    ControlEscapingStream Text(llvm::outs()); // device files are input too
    printDeviceTable(*Devices, Text);
    return 0;
  }
  auto Dev = selectDevice(*Devices);
  if (!Dev)
    return fail(Dev.takeError());
  auto Target = withReserveOptions(**Dev);
  if (!Target)
    return fail(Target.takeError());
  if (!PrintCmd && !AnalyzeCmd && !RunCmd && !PlanCmd && !DiffCmd) {
    llvm::errs() << "ridge: error: no subcommand given (try 'ridge --help')\n";
    return 1;
  }
  return runModelCommand(&*Target);
}
