//===- RidgeModule.cpp - The `ridge` Python module (pybind11) -------------===//
//
// A second front end beside tools/ridge.cpp, on the same libraries: keyword
// options become the Config and LoadOptions the CLI builds from its flags,
// and the results are the CLI's JSON documents (analyzeDocument, printPlan's
// JSON) handed to Python's json.loads, so that a field here is the field
// `ridge ... --format json` prints, bit for bit.
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/Loader.h"
#include "devices/Device.h"
#include "passes/Passes.h"
#include "passes/plan/Planner.h"
#include "analyzer/onnx/AnnotatedModel.h"
#include "passes/inference/Inference.h"
#include "analyzer/symbolic/Count.h"
#include "passes/report/AnalyzeReport.h"
#include "passes/report/HtmlReport.h"
#include "passes/report/RooflineChart.h"
#include "passes/report/ServingReport.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <optional>
#include <set>
#include <type_traits>
#include <stdexcept>

namespace py = pybind11;
using namespace ridge;

namespace {

/// ridge.Error: what the CLI would print after "ridge: error: ".
struct RidgeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <typename T> T take(llvm::Expected<T> E) {
  if (!E)
    throw RidgeError(llvm::toString(E.takeError()));
  return std::move(*E);
}

/// The keyword options, each taken once; what is left over is an error.
class Options {
public:
  Options(const char *Fn, py::kwargs KW) : Fn(Fn), KW(std::move(KW)) {}
  template <typename T> std::optional<T> get(const char *Name) {
    Used.insert(Name);
    if (!KW.contains(Name) || KW[Name].is_none())
      return std::nullopt;
    try {
      return KW[Name].cast<T>();
    } catch (const py::cast_error &) {
      throw RidgeError(llvm::formatv("{0}: option '{1}' has the wrong type", Fn, Name).str());
    }
  }
  void finish() {
    for (auto Item : KW) {
      std::string K = py::str(Item.first);
      if (!Used.count(K)) {
        std::string Known;
        for (const std::string &U : Used)
          Known += (Known.empty() ? "" : ", ") + U;
        throw RidgeError(
            llvm::formatv("{0}: unknown option '{1}' (options: {2})", Fn, K, Known).str());
      }
    }
  }

private:
  const char *Fn;
  py::kwargs KW;
  std::set<std::string> Used;
};

/// The shipped device files (or one --device-file) and the chosen device.
struct Devices {
  std::vector<Device> All;
  const Device *Dev = nullptr;
};

Devices devicesFor(Options &O) {
  Devices D;
  std::optional<std::string> File = O.get<std::string>("device_file");
  if (File) {
    D.All.push_back(take(loadDeviceFile(*File)));
    D.Dev = &D.All.front();
    return D;
  }
  D.All = take(loadDeviceDir(defaultDeviceDir("", RIDGE_SOURCE_DEVICES_DIR)));
  D.Dev = take(findDevice(D.All, O.get<std::string>("device").value_or("H100-SXM5-80GB")));
  return D;
}

/// memory_reserve=, collective_buffers=, fragmentation=: the CLI's
/// --memory-reserve, --collective-buffers, --fragmentation, on a copy of the
/// chosen device (D.Dev then points to it).
void applyReserve(const char *Fn, Options &O, Devices &D) {
  ReserveOverrides R{O.get<double>("memory_reserve"), O.get<double>("collective_buffers"),
                     O.get<double>("fragmentation")};
  if (!R.Reserve && !R.CollectiveBuffers && !R.Fragmentation)
    return;
  Device T = take(withReserveOverrides(*D.Dev, R, [&](const char *Key) {
    return std::string(Fn) + ": " + Key;
  }));
  D.All.push_back(std::move(T)); // D.Dev may dangle now: it is set below
  D.Dev = &D.All.back();
}

/// dims, input_shapes, shape_inference: the load options.
LoadOptions loadOptions(Options &O) {
  LoadOptions LO;
  if (auto Dims = O.get<std::map<std::string, int64_t>>("dims"))
    for (const auto &[K, V] : *Dims)
      LO.DimBindings.emplace_back(K, V);
  if (auto Shapes = O.get<std::map<std::string, std::vector<int64_t>>>("input_shapes"))
    for (const auto &[K, V] : *Shapes)
      LO.InputShapes.emplace_back(K, V);
  LO.InferShapes = O.get<bool>("shape_inference").value_or(true);
  return LO;
}

template <typename E>
E choose(const char *Fn, const char *Name, const std::string &V,
         std::initializer_list<std::pair<const char *, E>> Choices) {
  std::string Names;
  for (const auto &[N, X] : Choices) {
    if (V == N)
      return X;
    Names += (Names.empty() ? "" : ", ") + std::string(N);
  }
  throw RidgeError(llvm::formatv("{0}: {1}='{2}': expected one of {3}", Fn, Name, V, Names).str());
}

/// The options every analysis reads (the CLI's passConfig).
Config config(const char *Fn, Options &O, const Device *Dev, bool Plan) {
  Config C;
  C.Format = OutputFormat::Json;
  C.Dev = Dev;
  C.Inference = O.get<bool>("inference").value_or(false);
  if (auto V = O.get<std::string>("kv_append"))
    C.KVAppendInPlace = choose<bool>(Fn, "kv_append", *V, {{"copy", false}, {"in-place", true}});
  if (auto T = O.get<std::string>("dtype")) {
    auto D = parseDType(*T);
    if (!D || !isFloatingPoint(*D))
      throw RidgeError(llvm::formatv("{0}: dtype='{1}': expected a floating-point type "
                                     "(fp32, bf16, fp16, fp8, fp64)",
                                     Fn, *T)
                           .str());
    C.ComputeDType = *D;
  } else if (Plan && !C.Inference) {
    C.ComputeDType = Dev ? Dev->trainingDType() : DType::BFloat16; // as `ridge plan` defaults
  }
  if (auto V = O.get<std::string>("optimizer"))
    C.Opt = choose<Config::Optimizer>(Fn, "optimizer", *V,
                                      {{"sgd", Config::Optimizer::SGD},
                                       {"momentum", Config::Optimizer::Momentum},
                                       {"adam", Config::Optimizer::Adam},
                                       {"adamw", Config::Optimizer::AdamW}});
  if (auto V = O.get<std::string>("recompute"))
    C.Recomp = choose<Config::Recompute>(Fn, "recompute", *V,
                                         {{"none", Config::Recompute::None},
                                          {"selective", Config::Recompute::Selective},
                                          {"cheap", Config::Recompute::Cheap},
                                          {"full", Config::Recompute::Full}});
  if (auto V = O.get<std::string>("time_model"))
    C.RooflineTimes = choose<bool>(Fn, "time_model", *V, {{"kernels", false}, {"roofline", true}});
  C.TF32 = O.get<bool>("tf32").value_or(false);
  C.SumTerms = O.get<bool>("no_overlap").value_or(false);
  C.Strict = O.get<bool>("strict").value_or(false);
  C.FreezeConstants = O.get<bool>("freeze_constants").value_or(false);
  if (auto N = O.get<int64_t>("trip_count"))
    C.TripCount = *N;
  if (auto T = O.get<std::vector<std::string>>("trainable_inputs"))
    C.TrainableInputs = *T;
  if (auto F = O.get<std::vector<std::string>>("freeze"))
    C.Freeze = *F;
  return C;
}

/// A printer's JSON text as Python objects.
template <typename PrintFn> py::object printedJson(PrintFn Print) {
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  Print(OS);
  OS.flush();
  return py::module_::import("json").attr("loads")(Text);
}

/// The result of an analysis run with the GIL released (ridge plan loads
/// and searches on two threads), or RidgeError with its message.
template <typename Fn> auto withoutGil(Fn Run) {
  using T = std::remove_reference_t<decltype(*Run())>;
  std::optional<T> Out;
  std::string Failed;
  {
    py::gil_scoped_release Release;
    auto R = Run();
    if (R)
      Out = std::move(*R);
    else
      Failed = llvm::toString(R.takeError());
  }
  if (!Out)
    throw RidgeError(Failed);
  return std::move(*Out);
}

/// The model given as its bytes (bytes, bytearray, memoryview).
bool isBytes(py::handle Model) {
  return py::isinstance<py::bytes>(Model) || py::isinstance<py::bytearray>(Model) ||
         py::isinstance<py::memoryview>(Model);
}

/// A path (str or os.PathLike) or the model's bytes.
std::unique_ptr<ModelSource> openModel(py::handle Model, const LoadOptions &LO) {
  if (isBytes(Model)) {
    std::string Bytes = py::bytes(py::module_::import("builtins").attr("bytes")(Model));
    return take(ModelSource::openBuffer(llvm::MemoryBuffer::getMemBufferCopy(Bytes, "<bytes>"),
                                        "<bytes>", LO));
  }
  py::object Fspath = py::module_::import("os").attr("fspath");
  std::string Path;
  try {
    Path = py::str(Fspath(Model));
  } catch (const py::error_already_set &) {
    throw RidgeError("model: expected a path (str or os.PathLike) or the model's bytes");
  }
  return take(ModelSource::open(Path, LO));
}


/// prompt, context, batch: the serving options (Sweep as given).
ServingOptions servingOptions(Options &O) {
  ServingOptions SO;
  SO.Prompt = O.get<int64_t>("prompt");
  SO.Context = O.get<int64_t>("context");
  SO.Batch = O.get<int64_t>("batch").value_or(1);
  return SO;
}


/// report=, annotate=, roofline=: the files written beside the result,
/// checked as the CLI checks its flags.
void outputFiles(const char *Fn, Options &O, py::handle Model, Config &C, bool Analyze) {
  C.ReportPath = O.get<std::string>("report").value_or("");
  if (!C.ReportPath.empty())
    if (llvm::Error E = checkReportPath(C.ReportPath))
      throw RidgeError(llvm::toString(std::move(E)));
  if (!Analyze)
    return;
  C.AnnotatePath = O.get<std::string>("annotate").value_or("");
  C.RooflinePath = O.get<std::string>("roofline").value_or("");
  if (!C.RooflinePath.empty())
    if (llvm::Error E = checkRooflineChartPath(C.RooflinePath))
      throw RidgeError(llvm::toString(std::move(E)));
  if (!C.AnnotatePath.empty() && isBytes(Model))
    throw RidgeError(llvm::formatv("{0}: annotate= copies the model's file; pass its path, "
                                   "not its bytes",
                                   Fn)
                         .str());
}

py::object analyze(py::handle Model, py::kwargs KW) {
  Options O("analyze", std::move(KW));
  Devices D = devicesFor(O);
  applyReserve("analyze", O, D);
  LoadOptions LO = loadOptions(O);
  Config C = config("analyze", O, D.Dev, /*Plan=*/false);
  ServingOptions SO = servingOptions(O);
  SO.Sweep = O.get<bool>("sweep").value_or(true);
  std::string BatchDim = O.get<std::string>("batch_dim").value_or("");
  outputFiles("analyze", O, Model, C, /*Analyze=*/true);
  O.finish();
  std::unique_ptr<ModelSource> Src = openModel(Model, LO);
  if (!C.AnnotatePath.empty())
    if (llvm::Error E = checkAnnotateTarget(Src->path(), C.AnnotatePath))
      throw RidgeError(llvm::toString(std::move(E)));
  DiagnosticEngine Diags;
  if (SO.Prompt || SO.Context) {
    if (!C.ReportPath.empty() || !C.AnnotatePath.empty() || !C.RooflinePath.empty())
      throw RidgeError("analyze: report=, annotate= and roofline= show one analyzed graph; "
                       "with prompt= or context= they are not supported yet");
    C.Inference = true;
    ServingResult R = take(analyzeServing(servingLoader(*Src, LO, BatchDim, "analyze batch="),
                                          C, SO, Diags));
    return printedJson([&](llvm::raw_ostream &OS) { printServing(R, SO, C, OS); });
  }
  // Free dims give formulas, as `ridge analyze` prints them.
  C.SymbolicCosts = true;
  LO.SymbolicShapesCosted = C.SymbolicCosts;
  std::unique_ptr<ridge::Model> M = take(Src->load(LO, Diags));
  Src.reset();
  std::optional<ridge::sym::UnivariateScope> FastForm; // as ridge analyze
  if (ridge::sym::ExprRef S = M->leadingSymbol())
    FastForm.emplace(S);
  AnalysisManager AM(*M, C, Diags);
  llvm::json::Value Doc = take(analyzeDocument(*M, AM));
  if (llvm::Error E = writeAnalyzeFiles(*M, AM, &Doc))
    throw RidgeError(llvm::toString(std::move(E)));
  return printedJson([&](llvm::raw_ostream &OS) { OS << Doc; });
}

/// plan(inference=True): tensor parallelism, stages and replicas for one
/// serving pass, as `ridge plan --inference`.
py::object planServing(py::handle Model, Options &O, const LoadOptions &LO, Config &C) {
  ServingOptions SO = servingOptions(O);
  C.Inference = true;
  InferencePlanOptions PO;
  PO.Devices = O.get<unsigned>("devices").value_or(1);
  PO.DevicesPerNode = O.get<unsigned>("devices_per_node").value_or(0);
  PO.MaxTP = O.get<unsigned>("max_tp").value_or(0);
  PO.TP = O.get<unsigned>("tp");
  PO.PP = O.get<unsigned>("pp");
  PO.Top = O.get<unsigned>("show").value_or(5);
  if (auto V = O.get<std::string>("objective"))
    PO.Throughput =
        choose<bool>("plan", "objective", *V, {{"latency", false}, {"throughput", true}});
  std::string BatchDim = O.get<std::string>("batch_dim").value_or("");
  for (const char *Training : {"global_batch", "micro_batch", "dp"})
    if (O.get<int64_t>(Training))
      throw RidgeError(llvm::formatv("plan: {0}= is training's; with inference=True the batch "
                                     "is batch= (per replica)",
                                     Training)
                           .str());
  if (O.get<std::string>("report"))
    throw RidgeError("plan: report= has no page for inference=True yet; the result has every "
                     "number");
  O.finish();
  std::unique_ptr<ModelSource> Src = openModel(Model, LO);
  DiagnosticEngine Diags;
  InferencePlanResult R = withoutGil([&] {
    return planInference(servingLoader(*Src, LO, BatchDim, "plan batch="), C, SO, PO, Diags);
  });
  return printedJson([&](llvm::raw_ostream &OS) { printInferencePlan(R, C, OS); });
}

py::object plan(py::handle Model, py::kwargs KW) {
  Options O("plan", std::move(KW));
  Devices D = devicesFor(O);
  applyReserve("plan", O, D);
  LoadOptions LO = loadOptions(O);
  Config C = config("plan", O, D.Dev, /*Plan=*/true);
  if (C.Inference || O.get<int64_t>("prompt") || O.get<int64_t>("context"))
    return planServing(Model, O, LO, C);
  PlanOptions PO;
  PO.Devices = O.get<unsigned>("devices").value_or(1);
  PO.DevicesPerNode = O.get<unsigned>("devices_per_node").value_or(0);
  PO.GlobalBatch = O.get<int64_t>("global_batch").value_or(0);
  PO.MicroBatch = O.get<int64_t>("micro_batch");
  PO.TP = O.get<unsigned>("tp");
  PO.PP = O.get<unsigned>("pp");
  PO.DP = O.get<unsigned>("dp");
  PO.Interleave = O.get<unsigned>("interleave");
  PO.Zero = O.get<unsigned>("zero");
  if (auto R = O.get<std::string>("recompute"))
    PO.Recomp = C.Recomp;
  PO.SequenceParallel = O.get<bool>("sequence_parallel");
  PO.MaxTP = O.get<unsigned>("max_tp").value_or(0);
  PO.Top = O.get<unsigned>("show").value_or(5);
  std::string BatchDim = O.get<std::string>("batch_dim").value_or("");
  outputFiles("plan", O, Model, C, /*Analyze=*/false);
  PO.Scaling = !C.ReportPath.empty();
  O.finish();
  if ((PO.TP || PO.PP || PO.DP) && !(PO.TP && PO.PP && PO.DP))
    throw RidgeError("plan: fix a configuration with all of tp, pp and dp");
  if (PO.TP && uint64_t(*PO.TP) * *PO.PP * *PO.DP != PO.Devices)
    throw RidgeError("plan: tp x pp x dp must equal devices");
  std::unique_ptr<ModelSource> Src = openModel(Model, LO);
  BatchLoader Load = [&](int64_t Batch, DiagnosticEngine &Diags, bool) {
    return loadModelAtBatch(*Src, LO, BatchDim, Batch, Diags);
  };
  DiagnosticEngine Diags;
  PlanResult R = withoutGil([&] { return planParallelism(Load, C, PO, Diags); });
  if (!C.ReportPath.empty())
    if (llvm::Error E = writePlanHtml(R, C, Src->path(), C.ReportPath))
      throw RidgeError(llvm::toString(std::move(E)));
  return printedJson([&](llvm::raw_ostream &OS) { printPlan(R, C, OS); });
}

py::list devices(py::kwargs KW) {
  Options O("devices", std::move(KW));
  Devices D = devicesFor(O);
  O.finish();
  py::list Out;
  for (const Device &X : D.All) {
    py::dict Peaks;
    X.PeakFlops.forEach(
        [&](DType T, double F) { Peaks[py::str(dtypeName(T).str())] = F; });
    py::dict E;
    E["name"] = X.Name;
    E["kind"] = X.Kind;
    E["peak_flops"] = Peaks;
    E["memory_bandwidth"] = X.MemBandwidth;
    E["memory_capacity"] = X.MemCapacity;
    E["source"] = X.SourcePath;
    Out.append(E);
  }
  return Out;
}

} // namespace

PYBIND11_MODULE(_ridge, m) {
  m.doc() = "ridge: training and inference cost, roofline and parallelism analysis of ONNX "
            "models. analyze() and plan() return what `ridge analyze|plan --format json` "
            "prints.";
  m.attr("__version__") = RIDGE_VERSION;
  py::register_exception<RidgeError>(m, "Error");
  m.def("analyze", &analyze, py::arg("model"),
        "analyze(model, **options) -> dict: `ridge analyze MODEL --format json`. model: a "
        "path or the model's bytes. options: dims={'batch': 8}, input_shapes={'x': [1, 3, "
        "224, 224]}, device='A100-SXM4-80GB', device_file=, dtype='bf16', optimizer=, "
        "recompute=, inference=True, time_model='kernels'|'roofline', tf32=, no_overlap=, "
        "strict=, freeze_constants=, trip_count=, trainable_inputs=[...], freeze=[...], "
        "shape_inference=; prompt=P, context=C, batch=B, sweep=, batch_dim= (`--prompt/--context`); files: "
        "report='x.html', annotate='x.onnx', roofline='x.svg'");
  m.def("plan", &plan, py::arg("model"),
        "plan(model, devices=N, global_batch=B, **options) -> dict: `ridge plan ... --format "
        "json`. options as analyze's, and micro_batch, tp, pp, dp, interleave, zero, "
        "sequence_parallel, max_tp, devices_per_node, show, batch_dim, report='x.html'; "
        "inference=True (or prompt=/context=): `ridge plan --inference`, with batch=, "
        "objective='latency'|'throughput', tp, pp, max_tp");
  m.def("devices", &devices, "devices(device_file=None) -> list of dicts: the device files");
}
