//===- LoaderFuzzer.cpp - libFuzzer targets: .onnx and .onnxtxt loading ---===//
//
// Feeds each input to ridge::loadModel as a file named by
// RIDGE_FUZZ_EXTENSION: ".onnx" (decoded in place, or the lean reader and
// protobuf) or ".onnxtxt" (ONNX's text parser); then the importer, shape
// inference and the IR printer, and --annotate's rewrite of what loaded
// (checkAnnotatedCopy). CMake builds it once per extension. Binary
// inputs are also decoded both ways and must agree (see
// checkDecoderAgainstProtobuf).
// A returned llvm::Error is a correct rejection; a crash, a sanitizer report,
// a leak, a timeout or an out-of-memory is a finding.
//
// loadModel takes a path (and picks binary vs text by its extension), so the
// input is written to a file in a private temporary directory. The directory
// is empty apart from that file, so external-data locations named by an input
// resolve to nothing. The directory is under $RIDGE_FUZZ_TMPDIR if set, else
// /dev/shm (or /tmp).
//
// With RIDGE_FUZZ_BYTES (fuzz-bytes-loader) the input goes to
// ModelSource::openBuffer instead, as the Python module's bytes do: no file.
//
// A model that loads is then analyzed as `ridge analyze` analyzes it
// (analyzeLoaded): loaded again with free dims kept for formulas, and the
// report pipeline (cost, training step, roofline with the kernel model,
// fusion, the report) run on H100-SXM5-80GB as text and as JSON, and once more
// for inference; then planned as `ridge plan --devices 8 --global-batch 16`
// plans it (planLoaded). A model's strings and dims reach every pass.
//
// RIDGE_FUZZ_INFER_SHAPES=0 in the environment skips shape inference (ridge's
// rules and ONNX's fallback), to
// fuzz ridge's own code past inputs that crash ONNX 1.12's inference functions.
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/AnnotatedModel.h"
#include "analyzer/onnx/Importer.h"
#include "analyzer/onnx/LeanReader.h"
#include "analyzer/onnx/Loader.h"
#include "analyzer/onnx/OnnxWire.h"
#include "analyzer/PassManager.h"
#include "analyzer/symbolic/Count.h"
#include "devices/Device.h"
#include "passes/Passes.h"
#include "passes/plan/Planner.h"
#include "test/WireOracle.h"
#include <onnx/onnx_pb.h>
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

std::string Dir, ModelPath;
bool InferShapes = true;

void removeTemp() {
  if (!ModelPath.empty())
    ::unlink(ModelPath.c_str());
  if (!Dir.empty())
    ::rmdir(Dir.c_str());
}

bool writeInput(const uint8_t *Data, size_t Size) {
  std::FILE *F = std::fopen(ModelPath.c_str(), "wb");
  if (!F)
    return false;
  bool OK = std::fwrite(Data, 1, Size, F) == Size;
  return std::fclose(F) == 0 && OK;
}

/// The shipped H100 file, read once (the fuzzer's devices are not its input).
const ridge::Device &fuzzDevice() {
  static const ridge::Device D = [] {
    auto All = ridge::loadDeviceDir(ridge::defaultDeviceDir("", RIDGE_SOURCE_DEVICES_DIR));
    if (!All) {
      std::fprintf(stderr, "cannot read the devices: %s\n",
                   llvm::toString(All.takeError()).c_str());
      std::abort();
    }
    auto Dev = ridge::findDevice(*All, "H100-SXM5-80GB");
    if (!Dev) {
      std::fprintf(stderr, "%s\n", llvm::toString(Dev.takeError()).c_str());
      std::abort();
    }
    return **Dev;
  }();
  return D;
}

/// `ridge analyze` on a model the loader accepted (Load: the same input
/// loaded as analyze loads it): the report pipeline as text and as JSON, and
/// as text for inference. An llvm::Error is a correct rejection; a crash, a
/// sanitizer report, a leak or a hang is a finding.
template <typename LoadFn> void analyzeLoaded(LoadFn Load) {
  struct Run {
    ridge::OutputFormat Format;
    bool Inference;
  };
  for (Run R : {Run{ridge::OutputFormat::Text, false}, Run{ridge::OutputFormat::Json, false},
                Run{ridge::OutputFormat::Text, true}}) {
    ridge::DiagnosticEngine Diags;
    llvm::Expected<std::unique_ptr<ridge::Model>> M = Load(Diags);
    if (!M) {
      llvm::consumeError(M.takeError());
      return;
    }
    ridge::Config C;
    C.Out = &llvm::nulls();
    C.Format = R.Format;
    C.Dev = &fuzzDevice();
    C.Inference = R.Inference;
    C.SymbolicCosts = true; // free dims give formulas, as analyze prints them
    std::optional<ridge::sym::UnivariateScope> FastForm;
    if (ridge::sym::ExprRef S = (*M)->leadingSymbol())
      FastForm.emplace(S);
    ridge::PassManager PM;
    if (llvm::Error E = ridge::parsePipeline("report", PM)) {
      std::fprintf(stderr, "%s\n", llvm::toString(std::move(E)).c_str());
      std::abort();
    }
    ridge::AnalysisManager AM(**M, C, Diags);
    if (llvm::Error E = PM.run(**M, AM))
      llvm::consumeError(std::move(E));
    Diags.flush(llvm::nulls());
  }
}

/// `ridge plan --devices 8 --global-batch 16` on Src (bf16, the planner's
/// default): the batch a symbol, the search over tensor, pipeline and data
/// parallelism, the printed plan. An llvm::Error is a correct rejection.
void planLoaded(const ridge::ModelSource &Src, const ridge::LoadOptions &LO) {
  ridge::Config C;
  C.Out = &llvm::nulls();
  C.Dev = &fuzzDevice();
  C.ComputeDType = ridge::DType::BFloat16;
  ridge::PlanOptions PO;
  PO.Devices = 8;
  PO.DevicesPerNode = 8;
  PO.GlobalBatch = 16;
  PO.Top = 2;
  auto Load = [&](int64_t Batch, ridge::DiagnosticEngine &D, bool) {
    return ridge::loadModelAtBatch(Src, LO, "", Batch, D);
  };
  ridge::DiagnosticEngine Diags;
  auto R = ridge::planParallelism(Load, C, PO, Diags);
  Diags.flush(llvm::nulls());
  if (!R) {
    llvm::consumeError(R.takeError());
    return;
  }
  ridge::printPlan(*R, C, llvm::nulls());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // A crashing process leaves its directory behind: scripts/fuzz.sh points
  // RIDGE_FUZZ_TMPDIR at a folder it cleans.
  const char *Base = std::getenv("RIDGE_FUZZ_TMPDIR");
  if (!Base || !*Base)
    Base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string Template = std::string(Base) + "/ridge-fuzz-XXXXXX";
  if (!::mkdtemp(Template.data())) {
    std::perror(RIDGE_FUZZ_NAME ": mkdtemp");
    std::abort();
  }
  Dir = Template;
  ModelPath = Dir + "/input" RIDGE_FUZZ_EXTENSION; // loadModel picks the reader by it
  std::atexit(removeTemp);
  if (const char *E = std::getenv("RIDGE_FUZZ_INFER_SHAPES"))
    InferShapes = std::string(E) != "0";
  return 0;
}

/// The in-place decoder against protobuf (binary inputs): bytes strict
/// decoding accepts must parse with protobuf too, every field decoded must be
/// what protobuf parsed (test/WireOracle.h), and both must import to the
/// same IR, or the same error. A difference aborts (a finding).
void checkDecoderAgainstProtobuf(const uint8_t *Data, size_t Size) {
  llvm::StringRef Bytes(reinterpret_cast<const char *>(Data), Size);
  ridge::wire::Model W;
  if (!ridge::wire::decodeModel(Bytes, W) || !W.HasGraph)
    return; // the loader takes protobuf's path
  std::string Filtered;
  ridge::LeanReadStats Stats;
  onnx::ModelProto P;
  if (ridge::leanFilterModel(Bytes, Filtered, Stats) || !P.ParseFromString(Filtered)) {
    std::fprintf(stderr, "decoded in place, but protobuf refuses it\n");
    std::abort();
  }
  std::string Field = ridge::wireoracle::firstDifference(W, P);
  if (!Field.empty()) {
    std::fprintf(stderr, "in-place decoder and protobuf differ at %s\n", Field.c_str());
    std::abort();
  }
  auto Print = [](llvm::Expected<std::unique_ptr<ridge::Model>> M) {
    if (!M)
      return "error: " + llvm::toString(M.takeError());
    std::string S;
    llvm::raw_string_ostream OS(S);
    ridge::printModel(**M, OS);
    return S;
  };
  ridge::DiagnosticEngine D1, D2;
  std::string Mine = Print(ridge::importModel(W, "in.onnx", Dir, D1));
  std::string Theirs = Print(ridge::importModel(P, "in.onnx", Dir, D2));
  if (Mine != Theirs || W.SkippedPayloadBytes != Stats.SkippedPayloadBytes) {
    std::fprintf(stderr, "in-place decoder and protobuf differ:\n--- decoded\n%s\n--- "
                         "protobuf\n%s\n",
                 Mine.c_str(), Theirs.c_str());
    std::abort();
  }
}

/// --annotate's rewrite of a model the loader accepted: props on every node
/// and a value_info for every value of known rank. The copy must parse with
/// protobuf and load to as many nodes as the input (else a finding).
void checkAnnotatedCopy(const ridge::Model &M) {
  ridge::ModelAnnotations A;
  A.ModelProps = {{"ridge.fuzz", "1"}};
  for (const auto &N : M.Main->Nodes) {
    std::string Key = "name:" + N->Name.str();
    for (const ridge::Value *V : N->Outputs)
      if (V) {
        Key = V->Name.str();
        break;
      }
    A.NodeProps[Key] = {{"ridge.seconds", "1e-06"}, {"ridge.bound", "memory"}};
  }
  for (const ridge::Value &V : M.Main->Values)
    if (V.Shp && V.Kind == ridge::ValueKind::Intermediate && !V.IsGraphOutput) {
      ridge::AnnotatedType T;
      T.ElemType = int32_t(V.Elem);
      for (const ridge::Dim &D : V.Shp->Dims)
        T.Dims.push_back({D.extent(), D.isSymbolic() ? D.str() : ""});
      A.ValueInfos.emplace_back(V.Name.str(), std::move(T));
    }
  std::string Out = Dir + "/annotated.onnx";
  auto Stats = ridge::writeAnnotatedModel(ModelPath, Out, A);
  if (!Stats) {
    std::fprintf(stderr, "the loader accepted the model, --annotate refused it: %s\n",
                 llvm::toString(Stats.takeError()).c_str());
    std::abort();
  }
  ridge::LoadOptions Opts;
  Opts.InferShapes = false;
  ridge::DiagnosticEngine Diags;
  auto Again = ridge::loadModel(Out, Opts, Diags);
  ::unlink(Out.c_str());
  if (!Again) {
    std::fprintf(stderr, "the annotated copy does not load: %s\n",
                 llvm::toString(Again.takeError()).c_str());
    std::abort();
  }
  if ((*Again)->Main->Nodes.size() != M.Main->Nodes.size()) {
    std::fprintf(stderr, "the annotated copy has %zu nodes, the input %zu\n",
                 (*Again)->Main->Nodes.size(), M.Main->Nodes.size());
    std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
#ifdef RIDGE_FUZZ_BYTES
  // The Python module's bytes input: ModelSource::openBuffer on a copy of
  // the bytes, named "<bytes>" (binary or text told by content), no file.
  {
    ridge::LoadOptions Opts;
    Opts.InferShapes = InferShapes;
    ridge::DiagnosticEngine Diags;
    llvm::StringRef Bytes(reinterpret_cast<const char *>(Data), Size);
    auto Src = ridge::ModelSource::openBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(Bytes, "<bytes>"), "<bytes>", Opts);
    if (!Src) {
      llvm::consumeError(Src.takeError());
      return 0;
    }
    auto M = (*Src)->load(Opts, Diags);
    if (!M) {
      llvm::consumeError(M.takeError());
      return 0;
    }
    ridge::printModel(**M, llvm::nulls());
    ridge::LoadOptions AO = Opts;
    AO.SymbolicShapesCosted = true;
    analyzeLoaded([&](ridge::DiagnosticEngine &D) { return (*Src)->load(AO, D); });
    planLoaded(**Src, Opts);
    return 0;
  }
#endif
  if (std::string(RIDGE_FUZZ_EXTENSION) == ".onnx")
    checkDecoderAgainstProtobuf(Data, Size);
  if (!writeInput(Data, Size)) {
    std::perror(RIDGE_FUZZ_NAME ": cannot write the input file");
    std::abort();
  }
  ridge::LoadOptions Opts;
  Opts.InferShapes = InferShapes;
  ridge::DiagnosticEngine Diags;
  auto M = ridge::loadModel(ModelPath, Opts, Diags);
  if (!M) {
    llvm::consumeError(M.takeError());
    return 0;
  }
  ridge::printModel(**M, llvm::nulls());
  checkAnnotatedCopy(**M);
  ridge::LoadOptions AO = Opts;
  AO.SymbolicShapesCosted = true;
  analyzeLoaded([&](ridge::DiagnosticEngine &D) { return ridge::loadModel(ModelPath, AO, D); });
  auto Src = ridge::ModelSource::open(ModelPath, Opts);
  if (!Src) {
    std::fprintf(stderr, "the model loaded, but does not open again: %s\n",
                 llvm::toString(Src.takeError()).c_str());
    std::abort();
  }
  planLoaded(**Src, Opts);
  return 0;
}
