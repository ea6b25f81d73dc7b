//===- DeviceYamlFuzzer.cpp - libFuzzer target: device YAML parsing -------===//
//
// Feeds each input to ridge::parseDevice, the reader of devices/*.yaml (and of
// the user's own --device FILE). A returned llvm::Error is a correct
// rejection; a crash, a sanitizer report, a leak, a timeout or an
// out-of-memory is a finding. No file is involved: parseDevice takes the text.
//
// A description that parses must also survive a round trip: writeDeviceYaml
// promises YAML that parseDevice reads back to an equal Device, so
// write(parse(write(D))) must equal write(D). A mismatch aborts (a finding).
//
//===----------------------------------------------------------------------===//
#include "devices/Device.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdlib>
#include <string>

static std::string toYaml(const ridge::Device &D) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  ridge::writeDeviceYaml(D, OS);
  OS.flush();
  return S;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  // libFuzzer passes a heap copy of exactly Size bytes with no terminator, so
  // a read past the end is an ASan report.
  llvm::StringRef Text(reinterpret_cast<const char *>(Data), Size);
  auto D = ridge::parseDevice(Text, "fuzz.yaml");
  if (!D) {
    llvm::consumeError(D.takeError());
    return 0;
  }
  std::string Y1 = toYaml(*D);
  auto D2 = ridge::parseDevice(Y1, "roundtrip.yaml");
  if (!D2) {
    llvm::errs() << "writeDeviceYaml wrote YAML that parseDevice rejects: "
                 << llvm::toString(D2.takeError()) << "\n--- written:\n"
                 << Y1 << "---\n";
    std::abort();
  }
  std::string Y2 = toYaml(*D2);
  if (Y1 != Y2) {
    llvm::errs() << "device YAML does not round-trip\n--- first write:\n"
                 << Y1 << "--- after re-parsing it:\n" << Y2 << "---\n";
    std::abort();
  }
  return 0;
}
