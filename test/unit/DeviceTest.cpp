//===- DeviceTest.cpp - Device files: shipped, errors, writing ------------===//
#include "devices/Device.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdlib>
#include <gtest/gtest.h>

#ifndef RIDGE_SOURCE_DEVICES_DIR
#error "RIDGE_SOURCE_DEVICES_DIR must name the source tree's devices/ folder"
#endif

using namespace ridge;

namespace {

/// The message of a failed Expected, or "" (with a test failure) if it held a
/// value.
template <typename T> std::string errorOf(llvm::Expected<T> E) {
  if (E) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(E.takeError());
}

std::vector<Device> shipped() {
  auto Ds = loadDeviceDir(RIDGE_SOURCE_DEVICES_DIR);
  if (!Ds) {
    ADD_FAILURE() << llvm::toString(Ds.takeError());
    return {};
  }
  return std::move(*Ds);
}

const Device *byName(const std::vector<Device> &Ds, llvm::StringRef Name) {
  auto D = findDevice(Ds, Name);
  if (!D) {
    ADD_FAILURE() << llvm::toString(D.takeError());
    return nullptr;
  }
  return *D;
}

// A valid description to which the error tests append or which they edit.
// Line numbers in the tests below count from here.
const char *const Minimal = "name: Test\n"        // 1
                            "kind: gpu\n"         // 2
                            "peak_flops:\n"       // 3
                            "  bf16: 100e12\n"    // 4
                            "memory:\n"           // 5
                            "  bandwidth: 1e12\n" // 6
                            "  capacity: 16e9\n"; // 7

void expectSameDevice(const Device &A, const Device &B) {
  EXPECT_EQ(A.Name, B.Name);
  EXPECT_EQ(A.Aliases, B.Aliases);
  EXPECT_EQ(A.Kind, B.Kind);
  EXPECT_EQ(A.PeakFlops, B.PeakFlops);
  EXPECT_EQ(A.Tf32Flops, B.Tf32Flops);
  EXPECT_EQ(A.TranscendentalsPerS, B.TranscendentalsPerS);
  EXPECT_EQ(A.MemBandwidth, B.MemBandwidth);
  EXPECT_EQ(A.MemCapacity, B.MemCapacity);
  EXPECT_EQ(A.ComputeUnits, B.ComputeUnits);
  EXPECT_EQ(A.MatrixUnitTypes, B.MatrixUnitTypes);
  EXPECT_EQ(A.Tf32MatrixUnits, B.Tf32MatrixUnits);
  EXPECT_EQ(A.EffSimt, B.EffSimt);
  EXPECT_EQ(A.CacheSize, B.CacheSize);
  EXPECT_EQ(A.CacheBandwidth, B.CacheBandwidth);
  for (auto [L, R] : {std::pair(&A.HostLink, &B.HostLink),
                      std::pair(&A.IntraNode, &B.IntraNode),
                      std::pair(&A.InterNode, &B.InterNode)}) {
    EXPECT_EQ(L->Name, R->Name);
    EXPECT_EQ(L->Bandwidth, R->Bandwidth);
    EXPECT_EQ(L->Latency, R->Latency);
  }
  EXPECT_EQ(A.DevicesPerNode, B.DevicesPerNode);
  EXPECT_EQ(A.EffCompute, B.EffCompute);
  EXPECT_EQ(A.EffMemory, B.EffMemory);
  EXPECT_EQ(A.EffIntraNode, B.EffIntraNode);
  EXPECT_EQ(A.EffInterNode, B.EffInterNode);
  EXPECT_EQ(A.LaunchOverhead, B.LaunchOverhead);
}

} // namespace

TEST(ShippedDevices, CoresForTheKernelModel) {
  std::vector<Device> Ds = shipped();
  auto Find = [&](llvm::StringRef Name) -> const Device & {
    for (const Device &D : Ds)
      if (D.Name == Name)
        return D;
    ADD_FAILURE() << Name.str();
    return Ds.front();
  };
  const Device &T4 = Find("T4");
  EXPECT_EQ(T4.ComputeUnits, 40u);
  EXPECT_TRUE(T4.hasMatrixUnits(DType::Float16));
  EXPECT_FALSE(T4.hasMatrixUnits(DType::Float));
  EXPECT_DOUBLE_EQ(T4.EffSimt, 0.57);
  const Device &A100 = Find("A100-SXM4-80GB");
  EXPECT_EQ(A100.ComputeUnits, 108u);
  EXPECT_TRUE(A100.Tf32MatrixUnits);
  EXPECT_TRUE(A100.hasMatrixUnits(DType::BFloat16));
  EXPECT_EQ(Find("P100-PCIE-16GB").ComputeUnits, 56u);
  EXPECT_TRUE(Find("P100-PCIE-16GB").MatrixUnitTypes.empty());
}

TEST(ShippedDevices, AllLoadAndAreSane) {
  std::vector<Device> Ds = shipped();
  ASSERT_EQ(Ds.size(), 15u);
  for (size_t I = 0; I < Ds.size(); ++I) {
    const Device &D = Ds[I];
    SCOPED_TRACE(D.Name);
    EXPECT_TRUE(D.Kind == "gpu" || D.Kind == "tpu" || D.Kind == "cpu");
    EXPECT_FALSE(D.PeakFlops.empty());
    EXPECT_GT(D.MemBandwidth, 0);
    EXPECT_GT(D.MemCapacity, 0);
    EXPECT_GE(D.DevicesPerNode, 1u);
    // Single workstation cards (DeepBench's GPUs) have no scale-up domain.
    if (D.DevicesPerNode > 1) {
      EXPECT_TRUE(D.IntraNode.present());
      EXPECT_TRUE(D.InterNode.present());
    }
    for (double E :
         {D.EffCompute, D.EffMemory, D.EffIntraNode, D.EffInterNode}) {
      EXPECT_GT(E, 0);
      EXPECT_LE(E, 1);
    }
    // Each shipped file is named after its device, and the list is sorted by
    // file.
    EXPECT_EQ(llvm::sys::path::filename(D.SourcePath), D.Name + ".yaml");
    if (I > 0) {
      EXPECT_LT(llvm::sys::path::filename(Ds[I - 1].SourcePath),
                llvm::sys::path::filename(D.SourcePath));
    }
  }
}

TEST(ShippedDevices, H100Numbers) {
  std::vector<Device> Ds = shipped();
  const Device *D = byName(Ds, "H100-SXM5-80GB");
  ASSERT_TRUE(D);
  EXPECT_EQ(D->Kind, "gpu");
  EXPECT_EQ(*D->peak(DType::BFloat16), 989.4e12);
  EXPECT_EQ(*D->peak(DType::Float16), 989.4e12);
  EXPECT_EQ(*D->peak(DType::Float), 67e12);
  EXPECT_EQ(*D->peak(DType::Double), 67e12);
  EXPECT_EQ(D->Tf32Flops, 494.7e12);
  EXPECT_EQ(D->MemBandwidth, 3.35e12);
  EXPECT_EQ(D->MemCapacity, 80e9);
  EXPECT_DOUBLE_EQ(*D->ridgePoint(DType::BFloat16), 989.4e12 / 3.35e12);
  EXPECT_NEAR(*D->ridgePoint(DType::BFloat16), 295.3, 0.05); // README's table
  EXPECT_EQ(D->IntraNode.Name, "NVLink4");
  EXPECT_EQ(D->IntraNode.Bandwidth, 450e9);
  EXPECT_EQ(D->IntraNode.Latency, 1e-6); // per ring step (Calculon a100_80g.json)
  EXPECT_EQ(D->HostLink.Bandwidth, 64e9);
  EXPECT_EQ(D->DevicesPerNode, 8u);
  EXPECT_EQ(D->EffCompute, 0.8);
  EXPECT_EQ(D->LaunchOverhead, 5e-6);
  EXPECT_EQ(D->CacheSize, 52.43e6);
  EXPECT_EQ(D->CacheBandwidth, 0);
}

TEST(ShippedDevices, Fp8AndInt8CoverTheirVariants) {
  std::vector<Device> Ds = shipped();
  const Device *D = byName(Ds, "H100-SXM5-80GB");
  ASSERT_TRUE(D);
  for (DType T : {DType::Float8E4M3FN, DType::Float8E4M3FNUZ, DType::Float8E5M2,
                  DType::Float8E5M2FNUZ})
    EXPECT_EQ(*D->peak(T), 1978.9e12) << dtypeName(T).str();
  EXPECT_EQ(*D->peak(DType::Int8), 1978.9e12);
  EXPECT_EQ(*D->peak(DType::UInt8), 1978.9e12);
  EXPECT_FALSE(D->peak(DType::Float4E2M1));
  EXPECT_FALSE(D->peak(DType::Int64));
}

TEST(ShippedDevices, UnsupportedTypeHasNoRidgePoint) {
  std::vector<Device> Ds = shipped();
  const Device *D = byName(Ds, "v100");
  ASSERT_TRUE(D);
  EXPECT_FALSE(D->peak(DType::BFloat16));
  EXPECT_FALSE(D->ridgePoint(DType::BFloat16));
  EXPECT_FALSE(D->peak(DType::Float8E4M3FN));
  EXPECT_NEAR(*D->ridgePoint(DType::Float16), 138.9, 0.05); // README's table
}

TEST(ShippedDevices, OptionalSections) {
  std::vector<Device> Ds = shipped();
  const Device *Cpu = byName(Ds, "EPYC-9654");
  ASSERT_TRUE(Cpu);
  EXPECT_EQ(Cpu->Kind, "cpu");
  EXPECT_FALSE(Cpu->HostLink.present()); // a CPU has no host link
  const Device *Mi = byName(Ds, "MI300X");
  ASSERT_TRUE(Mi);
  EXPECT_EQ(Mi->CacheBandwidth, 17e12); // the one cache bandwidth shipped
}

TEST(FindDevice, NameOrAliasAnyCase) {
  std::vector<Device> Ds = shipped();
  for (const char *N :
       {"H100-SXM5-80GB", "h100-sxm5-80gb", "h100", "H100", "H100-SXM"}) {
    auto D = findDevice(Ds, N);
    ASSERT_TRUE(bool(D)) << N << ": " << llvm::toString(D.takeError());
    EXPECT_EQ((*D)->Name, "H100-SXM5-80GB") << N;
  }
  auto A100 = findDevice(Ds, "a100");
  ASSERT_TRUE(bool(A100));
  EXPECT_EQ((*A100)->Name, "A100-SXM4-80GB");
}

TEST(FindDevice, UnknownListsKnownNames) {
  std::vector<Device> Ds = shipped();
  std::string Msg = errorOf(findDevice(Ds, "Z9000"));
  EXPECT_NE(Msg.find("unknown device 'Z9000'"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("known devices: A100-SXM4-40GB, A100-SXM4-80GB, B200"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("V100-SXM2-32GB"), std::string::npos) << Msg;
  EXPECT_EQ(Msg.find("did you mean"), std::string::npos) << Msg;

  Msg = errorOf(findDevice(Ds, "h10"));
  EXPECT_NE(Msg.find("did you mean 'H100-SXM5-80GB'?"), std::string::npos)
      << Msg;
  Msg = errorOf(findDevice({}, "h100"));
  EXPECT_NE(Msg.find("no device descriptions are loaded"), std::string::npos)
      << Msg;
}

TEST(ParseDevice, MinimalGetsDefaults) {
  auto D = parseDevice(Minimal, "min.yaml");
  ASSERT_TRUE(bool(D)) << llvm::toString(D.takeError());
  EXPECT_EQ(D->Name, "Test");
  EXPECT_TRUE(D->Aliases.empty());
  EXPECT_EQ(D->SourcePath, "min.yaml");
  EXPECT_EQ(D->PeakFlops.size(), 1u);
  EXPECT_EQ(*D->peak(DType::BFloat16), 100e12);
  EXPECT_EQ(*D->ridgePoint(DType::BFloat16), 100.0);
  EXPECT_FALSE(D->peak(DType::Float));
  EXPECT_EQ(D->Tf32Flops, 0);
  EXPECT_EQ(D->TranscendentalsPerS, 0);
  EXPECT_EQ(D->CacheSize, 0);
  EXPECT_FALSE(D->HostLink.present());
  EXPECT_FALSE(D->IntraNode.present());
  EXPECT_FALSE(D->InterNode.present());
  EXPECT_EQ(D->DevicesPerNode, 1u);
  EXPECT_EQ(D->EffCompute, 1);
  EXPECT_EQ(D->EffMemory, 1);
  EXPECT_EQ(D->EffIntraNode, 1);
  EXPECT_EQ(D->EffInterNode, 1);
  EXPECT_EQ(D->LaunchOverhead, 0);
}

TEST(ParseDevice, ReadmeExample) {
  // The "Minimal example" of devices/README.md, verbatim.
  const char *Text = R"(# My accelerator. Source: vendor datasheet v1.2.
name: MyAccel
aliases: [myaccel]
kind: gpu
peak_flops:
  fp32: 50e12      # datasheet p.3
  bf16: 400e12     # datasheet p.3, dense (800 with sparsity)
transcendentals_per_s: 2e12   # 100 SMs x 16/clk x 1.25 GHz
memory:
  bandwidth: 2e12  # datasheet
  capacity: 64e9   # datasheet, 64 GB
node:
  devices_per_node: 4
intra_node:
  name: MyLink
  bandwidth: 200e9 # 400 GB/s bidirectional / 2
  latency: 10e-6
inter_node:
  name: 200G Ethernet
  bandwidth: 25e9  # 200 Gb/s per device / 8
  latency: 20e-6
efficiency:
  compute: 0.8
  memory: 0.85
  intra_node: 0.65
  inter_node: 0.9
launch_overhead: 5e-6
)";
  auto D = parseDevice(Text, "my.yaml");
  ASSERT_TRUE(bool(D)) << llvm::toString(D.takeError());
  EXPECT_EQ(D->Aliases, std::vector<std::string>{"myaccel"});
  EXPECT_EQ(D->InterNode.Name, "200G Ethernet");
  EXPECT_EQ(*D->ridgePoint(DType::BFloat16), 200.0);
  EXPECT_EQ(D->DevicesPerNode, 4u);
}

namespace {
struct BadCase {
  const char *What;
  std::string Text;
  const char *Expected; ///< must appear in the message, after "bad.yaml"
};
} // namespace

TEST(ParseDevice, ValidationErrorsNameLineAndKey) {
  std::string M = Minimal;
  auto Edit = [&](const char *From, const char *To) {
    std::string S = M;
    S.replace(S.find(From), strlen(From), To);
    return S;
  };
  const BadCase Cases[] = {
      {"unknown top-level key", M + "bogus: 1\n",
       "bad.yaml:8:1: unknown key 'bogus' (known keys: name, aliases, kind,"},
      {"unknown nested key",
       Edit("  bf16: 100e12\n", "  bf16: 100e12\n  fp4: 1e15\n"),
       "bad.yaml:5:3: unknown key 'fp4' in peak_flops (known keys: fp64, fp32, "
       "tf32, "
       "bf16, fp16, fp8, int8)"},
      {"missing name", Edit("name: Test\n", ""),
       "bad.yaml:1:1: missing required key 'name'"},
      {"missing kind", Edit("kind: gpu\n", ""),
       "bad.yaml:1:1: missing required key 'kind'"},
      {"missing peak_flops", Edit("peak_flops:\n  bf16: 100e12\n", ""),
       "bad.yaml:1:1: missing required key 'peak_flops'"},
      {"empty peak_flops", Edit("  bf16: 100e12\n", ""),
       "bad.yaml:4:1: peak_flops: needs at least one of fp64, fp32, tf32, "
       "bf16, fp16, fp8, int8"},
      {"empty flow peak_flops",
       Edit("peak_flops:\n  bf16: 100e12\n", "peak_flops: {}\n"),
       "bad.yaml:3:14: peak_flops: needs at least one of"},
      {"missing memory",
       Edit("memory:\n  bandwidth: 1e12\n  capacity: 16e9\n", ""),
       "bad.yaml:1:1: missing required key 'memory'"},
      {"missing memory.bandwidth", Edit("  bandwidth: 1e12\n", ""),
       "bad.yaml:6:3: missing required key 'memory.bandwidth'"},
      {"missing memory.capacity", Edit("  capacity: 16e9\n", ""),
       "bad.yaml:6:3: missing required key 'memory.capacity'"},
      {"non-numeric peak", Edit("100e12", "lots"),
       "bad.yaml:4:9: peak_flops.bf16: expected a number, got 'lots'"},
      {"infinite rate", Edit("100e12", "inf"),
       "bad.yaml:4:9: peak_flops.bf16: expected a number, got 'inf'"},
      {"list for a number", Edit("100e12", "[1, 2]"),
       "bad.yaml:4:10: peak_flops.bf16: expected a single value"},
      {"negative bandwidth", Edit("bandwidth: 1e12", "bandwidth: -1e12"),
       "bad.yaml:6:14: memory.bandwidth: must be positive, got -1e12"},
      {"zero capacity", Edit("capacity: 16e9", "capacity: 0"),
       "bad.yaml:7:13: memory.capacity: must be positive, got 0"},
      {"negative peak", Edit("100e12", "-5"),
       "bad.yaml:4:9: peak_flops.bf16: must be positive, got -5"},
      {"zero transcendentals", M + "transcendentals_per_s: 0\n",
       "bad.yaml:8:24: transcendentals_per_s: must be positive, got 0"},
      {"efficiency above 1", M + "efficiency:\n  compute: 1.5\n",
       "bad.yaml:9:12: efficiency.compute: must be in (0, 1], got 1.5"},
      {"efficiency zero", M + "efficiency:\n  inter_node: 0\n",
       "bad.yaml:9:15: efficiency.inter_node: must be in (0, 1], got 0"},
      {"bad kind", Edit("kind: gpu", "kind: fpga"),
       "bad.yaml:2:7: kind: must be gpu, tpu or cpu, got 'fpga'"},
      {"empty name", Edit("name: Test", "name: ''"),
       "bad.yaml:1:7: name: must not be empty"},
      {"negative latency",
       M + "intra_node:\n  bandwidth: 1e11\n  latency: -1e-6\n",
       "bad.yaml:10:12: intra_node.latency: must not be negative, got -1e-6"},
      {"link without bandwidth",
       M + "inter_node:\n  name: IB\n  latency: 1e-6\n",
       "bad.yaml:9:3: missing required key 'inter_node.bandwidth'"},
      {"negative link bandwidth", M + "host_link:\n  bandwidth: -32e9\n",
       "bad.yaml:9:14: host_link.bandwidth: must be positive, got -32e9"},
      {"cache without size", M + "cache:\n  bandwidth: 1e13\n",
       "bad.yaml:9:3: missing required key 'cache.size'"},
      {"zero devices per node", M + "node:\n  devices_per_node: 0\n",
       "bad.yaml:9:21: node.devices_per_node: expected a whole number >= 1, "
       "got '0'"},
      {"fractional devices per node", M + "node:\n  devices_per_node: 2.5\n",
       "bad.yaml:9:21: node.devices_per_node: expected a whole number >= 1, "
       "got '2.5'"},
      {"unknown matrix unit type", M + "cores:\n  count: 4\n  matrix_units: [fp16, fp4]\n",
       "cores.matrix_units: unknown type 'fp4'"},
      {"cores without a count", M + "cores:\n  matrix_units: [fp16]\n",
       "cores.count"},
      {"negative launch overhead", M + "launch_overhead: -1e-6\n",
       "bad.yaml:8:18: launch_overhead: must not be negative, got -1e-6"},
      {"scalar section", M + "efficiency: 0.8\n",
       "bad.yaml:8:13: efficiency: expected a mapping with keys compute, "
       "simt, memory, "
       "intra_node, inter_node"},
      {"scalar aliases", M + "aliases: t\n",
       "bad.yaml:8:10: aliases: expected a list such as [name1, name2]"},
      {"empty alias", M + "aliases: [t, '']\n",
       "bad.yaml:1:1: aliases: an alias must not be empty"},
      {"duplicate key", M + "name: Other\n",
       "bad.yaml:8:1: invalid YAML: duplicated mapping key 'name'"},
      {"not YAML", "name: [unclosed\nkind: {\n",
       "bad.yaml:2:8: invalid YAML: "},
      {"tab indentation", "name: X\n\tkind: gpu\n",
       "bad.yaml:2:1: invalid YAML: Found invalid tab character in "
       "indentation"},
      {"a scalar, not a mapping", "just words\n",
       "bad.yaml:1:1: expected a YAML mapping with name, kind, peak_flops and "
       "memory"},
      {"a list, not a mapping", "- a\n- b\n",
       "bad.yaml:1:1: expected a YAML mapping"},
      {"empty file", "", "bad.yaml: empty device description"},
      {"comments only", "# nothing here\n",
       "bad.yaml: empty device description"},
      {"two documents", M + "---\nname: Other\n",
       "bad.yaml: holds more than one YAML document"},
      {"garbage after the document", M + "...\n[\n",
       "bad.yaml:9:2: invalid YAML: Could not find closing ]!"},
      {"binary", std::string("name: \0\x01\x02", 9),
       "bad.yaml: not a YAML text file"},
  };
  for (const BadCase &C : Cases) {
    SCOPED_TRACE(C.What);
    std::string Msg = errorOf(parseDevice(C.Text, "bad.yaml"));
    EXPECT_EQ(Msg.rfind("bad.yaml", 0), 0u) << Msg;
    EXPECT_NE(Msg.find(C.Expected), std::string::npos) << Msg;
    EXPECT_EQ(Msg.find('\n'), std::string::npos) << "one line: " << Msg;
  }
}

TEST(ParseDevice, DocumentMarkersAreFine) {
  for (std::string Text : {"---\n" + std::string(Minimal) + "...\n",
                           std::string(Minimal) + "---\n",
                           std::string(Minimal) + "---\n# trailing note\n"}) {
    auto D = parseDevice(Text, "m.yaml");
    EXPECT_TRUE(bool(D)) << llvm::toString(D.takeError()) << "\n" << Text;
  }
}

TEST(ParseDevice, CommentsAndQuotingAreFine) {
  std::string Text =
      "# header\nname: \"Quoted Name\"  # trailing\naliases: [q1, 'q2']\n" +
      std::string(Minimal).substr(strlen("name: Test\n"));
  auto D = parseDevice(Text, "q.yaml");
  ASSERT_TRUE(bool(D)) << llvm::toString(D.takeError());
  EXPECT_EQ(D->Name, "Quoted Name");
  EXPECT_EQ(D->Aliases, (std::vector<std::string>{"q1", "q2"}));
}

TEST(LoadDevice, MissingFileNamesIt) {
  std::string Msg = errorOf(loadDeviceFile("/nonexistent/dir/gone.yaml"));
  EXPECT_EQ(Msg, "/nonexistent/dir/gone.yaml: No such file or directory");
}

namespace {
/// A temporary folder, removed with everything in it.
struct TempDir {
  llvm::SmallString<128> Path;
  TempDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("ridge-devtest", Path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(Path); }
  std::string write(llvm::StringRef Name, llvm::StringRef Text) {
    llvm::SmallString<128> P(Path);
    llvm::sys::path::append(P, Name);
    std::error_code EC;
    llvm::raw_fd_ostream OS(P, EC);
    EXPECT_FALSE(EC);
    OS << Text;
    return std::string(P);
  }
};

std::string withName(llvm::StringRef Name, llvm::StringRef Aliases) {
  return ("name: " + Name + "\naliases: " + Aliases + "\n" +
          llvm::StringRef(Minimal).drop_front(strlen("name: Test\n")))
      .str();
}
} // namespace

TEST(LoadDeviceDir, SortedByFileAndOnlyYaml) {
  TempDir T;
  T.write("b.yaml", withName("Bee", "[bee]"));
  T.write("a.yaml", withName("Ay", "[ay]"));
  T.write("notes.txt", "not a device");
  T.write("c.yml", "not: read");
  auto Ds = loadDeviceDir(T.Path);
  ASSERT_TRUE(bool(Ds)) << llvm::toString(Ds.takeError());
  ASSERT_EQ(Ds->size(), 2u);
  EXPECT_EQ((*Ds)[0].Name, "Ay");
  EXPECT_EQ((*Ds)[1].Name, "Bee");
}

TEST(LoadDeviceDir, BadFileIsNamed) {
  TempDir T;
  T.write("a.yaml", withName("Ay", "[ay]"));
  std::string Bad = T.write("bad.yaml", std::string(Minimal) +
                                            "efficiency:\n  memory: 1.5\n");
  std::string Msg = errorOf(loadDeviceDir(T.Path));
  EXPECT_EQ(Msg, Bad + ":9:11: efficiency.memory: must be in (0, 1], got 1.5");
}

TEST(LoadDeviceDir, NameClashIsAnError) {
  TempDir T;
  T.write("a.yaml", withName("Ay", "[shared]"));
  std::string B = T.write("b.yaml", withName("Bee", "[Shared]"));
  std::string Msg = errorOf(loadDeviceDir(T.Path));
  EXPECT_NE(Msg.find(B + ": device name or alias 'shared' is already used by"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("a.yaml"), std::string::npos) << Msg;
}

TEST(LoadDeviceDir, OwnAliasEqualToNameIsFine) {
  TempDir T;
  T.write("a.yaml", withName("Ay", "[ay, AY]"));
  auto Ds = loadDeviceDir(T.Path);
  ASSERT_TRUE(bool(Ds)) << llvm::toString(Ds.takeError());
}

TEST(LoadDeviceDir, EmptyOrMissingFolder) {
  TempDir T;
  std::string Msg = errorOf(loadDeviceDir(T.Path));
  EXPECT_NE(Msg.find("no device descriptions (*.yaml)"), std::string::npos)
      << Msg;
  Msg = errorOf(loadDeviceDir("/nonexistent/devices"));
  EXPECT_EQ(Msg.rfind("/nonexistent/devices: cannot read the device folder", 0),
            0u)
      << Msg;
}

TEST(DefaultDeviceDir, EnvironmentThenInstallThenSource) {
  const char *Old = std::getenv("RIDGE_DEVICES_DIR");
  std::string Saved = Old ? Old : "";
  setenv("RIDGE_DEVICES_DIR", "/from/env", 1);
  EXPECT_EQ(defaultDeviceDir("ridge", "/src/devices"), "/from/env");
  setenv("RIDGE_DEVICES_DIR", "", 1); // empty counts as unset
  std::string WithEmpty = defaultDeviceDir("ridge", "/src/devices");
  unsetenv("RIDGE_DEVICES_DIR");

  // Without the variable: <prefix>/share/ridge/devices beside this binary's
  // bin/ if the build or install put one there, else the source tree's.
  static int Anchor;
  std::string Exe = llvm::sys::fs::getMainExecutable("ridge", &Anchor);
  llvm::SmallString<256> Share(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(Exe)));
  llvm::sys::path::append(Share, "share", "ridge", "devices");
  std::string Expected = llvm::sys::fs::is_directory(Share)
                             ? std::string(Share)
                             : std::string("/src/devices");
  EXPECT_EQ(defaultDeviceDir("ridge", "/src/devices"), Expected);
  EXPECT_EQ(defaultDeviceDir(nullptr, "/src/devices"), Expected);
  EXPECT_EQ(WithEmpty, Expected);
  if (Old)
    setenv("RIDGE_DEVICES_DIR", Saved.c_str(), 1);
}

TEST(WriteDevice, ShippedDevicesRoundTrip) {
  for (const Device &D : shipped()) {
    SCOPED_TRACE(D.Name);
    std::string Text;
    llvm::raw_string_ostream OS(Text);
    writeDeviceYaml(D, OS);
    OS.flush();
    auto Back = parseDevice(Text, "written.yaml");
    ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError()) << "\n" << Text;
    expectSameDevice(D, *Back);
  }
}

TEST(WriteDevice, MinimalAndOddNumbersRoundTrip) {
  auto D = parseDevice(Minimal, "min.yaml");
  ASSERT_TRUE(bool(D)) << llvm::toString(D.takeError());
  // Numbers such as a calibration produces: no short decimal form.
  D->MemBandwidth = 1.0 / 3.0 * 1e12;
  D->EffCompute = 0.7777777777777777;
  D->LaunchOverhead = 3.14159e-6;
  D->HostLink.Name = "PCIe: Gen5 # x16"; // needs quoting
  D->HostLink.Bandwidth = 64e9;
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  writeDeviceYaml(*D, OS);
  OS.flush();
  EXPECT_EQ(Text.find("transcendentals_per_s"), std::string::npos) << Text;
  EXPECT_EQ(Text.find("cache"), std::string::npos) << Text;
  EXPECT_EQ(Text.find("\nintra_node:"), std::string::npos) << Text;
  auto Back = parseDevice(Text, "written.yaml");
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError()) << "\n" << Text;
  expectSameDevice(*D, *Back);
}

// PerDType: a figure per type code, found by index; absent types (and codes
// past the ones ridge knows) hold nothing; iteration in type-code order;
// equal tables hold the same types with the same figures.
TEST(PerDTypeTest, FindsInsertsAndIteratesByTypeCode) {
  PerDType T;
  EXPECT_TRUE(T.empty());
  EXPECT_EQ(T.find(DType::Float), nullptr);
  T[DType::BFloat16] = 989e12;
  T[DType::Float] = 67e12;
  T[DType::Int8] = 1979e12;
  ASSERT_NE(T.find(DType::Float), nullptr);
  EXPECT_EQ(*T.find(DType::Float), 67e12);
  EXPECT_EQ(T.find(DType::Float16), nullptr);
  EXPECT_EQ(T.find(DType(200)), nullptr); // a code no ONNX type has
  EXPECT_FALSE(T.has(DType(200)));
  EXPECT_EQ(T.size(), 3u);
  std::vector<DType> Order;
  T.forEach([&](DType D, double) { Order.push_back(D); });
  EXPECT_EQ(Order, (std::vector<DType>{DType::Float, DType::Int8, DType::BFloat16}));
  PerDType U = T;
  EXPECT_TRUE(U == T);
  U[DType::Float] = 60e12;
  EXPECT_FALSE(U == T);
  U[DType::Float] = 67e12;
  U[DType::Double] = 0; // present at 0 is not absent
  EXPECT_FALSE(U == T);
}
