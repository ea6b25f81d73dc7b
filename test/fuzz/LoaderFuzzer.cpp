//===- LoaderFuzzer.cpp - libFuzzer targets: .onnx and .onnxtxt loading ---===//
//
// Feeds each input to ridge::loadModel as a file named by
// RIDGE_FUZZ_EXTENSION: ".onnx" (the lean reader and protobuf) or ".onnxtxt"
// (ONNX's text parser); then the importer, shape inference and the IR
// printer. CMake builds it once per extension.
// A returned llvm::Error is a correct rejection; a crash, a sanitizer report,
// a leak, a timeout or an out-of-memory is a finding.
//
// loadModel takes a path (and picks binary vs text by its extension), so the
// input is written to a file in a private temporary directory. The directory
// is empty apart from that file, so external-data locations named by an input
// resolve to nothing. The directory is under $RIDGE_FUZZ_TMPDIR if set, else
// /dev/shm (or /tmp).
//
// RIDGE_FUZZ_INFER_SHAPES=0 in the environment skips shape inference (ridge's
// rules and ONNX's fallback), to
// fuzz ridge's own code past inputs that crash ONNX 1.12's inference functions.
//
//===----------------------------------------------------------------------===//
#include "analyzer/Loader.h"
#include "analyzer/PassManager.h"
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
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
  return 0;
}
