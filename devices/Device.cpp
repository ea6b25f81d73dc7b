//===- Device.cpp - Reading and writing device descriptions ---------------===//
//
// LLVM YAML I/O maps the file onto the Device. Each number travels through a
// small field wrapper that knows its dotted key and its valid range, so that a
// bad value is reported at its own line and column, not at the enclosing
// mapping. The same traits drive yaml::Output, so writeDeviceYaml produces
// exactly the schema parseDevice reads.
//
//===----------------------------------------------------------------------===//
#include "devices/Device.h"
#include "analyzer/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"
#include <algorithm>
#include <tuple>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace ridge;
using llvm::formatv;
using llvm::StringRef;
using llvm::yaml::IO;

namespace {

/// Shared by the diagnostic handler and the mapping functions (as the YAML I/O
/// context). IO cannot say whether an error was already reported, and only the
/// first one is worth showing: YAML I/O stops mapping after it. YAML I/O's own
/// messages ("not a mapping", "unknown key 'x'") do not say which key they are
/// about, so the mapping functions record where they are.
struct ParseState {
  bool HasError = false;
  unsigned Line = 0, Col = 0; ///< 1-based; Line 0: no position
  std::string Message;
  bool EmptyDocument = false;
  bool InMapping = false; ///< false while the YAML parser itself runs
  StringRef Section;      ///< "memory", ...; empty at the top level
  StringRef SectionKeys;  ///< the keys Section accepts, for messages
  StringRef Leaf;         ///< dotted key of the value being read, if any
};

ParseState *stateOf(IO &Io) {
  return static_cast<ParseState *>(Io.getContext());
}

bool hasError(IO &Io) {
  ParseState *S = stateOf(Io);
  return S && S->HasError;
}

const char TopKeys[] =
    "name, aliases, kind, peak_flops, vector_flops, transcendentals_per_s, "
    "memory, cache, host_link, node, intra_node, inter_node, "
    "efficiency, efficiency_curves, kernel_overlap, launch_overhead, kernel_gap, cores";

/// Called first in each section's mapping function; the parent restores the
/// top level after the section (unknown keys are reported after mapping()
/// returns, so the section must stay current until then).
void enterSection(IO &Io, StringRef Name, StringRef Keys) {
  if (ParseState *S = stateOf(Io)) {
    S->Section = Name;
    S->SectionKeys = Keys;
  }
}

/// mapOptional for one value, with its dotted path recorded for messages.
template <typename T>
void mapValue(IO &Io, const char *Key, StringRef Path, T &Val) {
  ParseState *S = stateOf(Io);
  if (S)
    S->Leaf = Path;
  Io.mapOptional(Key, Val);
  if (S)
    S->Leaf = {};
}

/// Reports "missing required key" for a key read with mapOptional. The keys
/// are optional to YAML I/O so that the message can carry the dotted path.
void require(IO &Io, bool Seen, const char *Path) {
  if (Io.outputting() || Seen || hasError(Io))
    return;
  Io.setError(llvm::Twine("missing required key '") + Path + "'");
}

/// Shortest decimal that reads back as exactly V, so a written file
/// round-trips.
std::string formatNumber(double V) {
  char Buf[64];
  for (int Precision = 1; Precision <= 17; ++Precision) {
    std::snprintf(Buf, sizeof(Buf), "%.*g", Precision, V);
    if (std::strtod(Buf, nullptr) == V)
      break;
  }
  return Buf;
}

enum class Range { Positive, NonNegative, Fraction, Share };

/// A double of the Device with its dotted key and valid range.
struct NumField {
  NumField(double *Dst, const char *Path, Range R)
      : Dst(Dst), Path(Path), R(R) {}
  double *Dst;
  const char *Path;
  Range R;
  bool Seen = false;
  std::string Msg; ///< owns the error text returned to YAML I/O
};

/// A count >= 1 (devices_per_node).
struct CountField {
  CountField(unsigned *Dst, const char *Path) : Dst(Dst), Path(Path) {}
  unsigned *Dst;
  const char *Path;
  bool Seen = false;
  std::string Msg;
};

/// A string that must not be empty; for Kind, one of gpu|tpu|cpu.
struct TextField {
  TextField(std::string *Dst, const char *Path, bool IsKind = false)
      : Dst(Dst), Path(Path), IsKind(IsKind) {}
  std::string *Dst;
  const char *Path;
  bool IsKind = false;
  bool Seen = false;
  std::string Msg;
};

struct AliasList {
  std::vector<std::string> *V;
  // mapOptional tests sequences for emptiness through begin()/end().
  std::vector<std::string>::iterator begin() const { return V->begin(); }
  std::vector<std::string>::iterator end() const { return V->end(); }
};

// One wrapper per YAML mapping; they point into the Device being filled.
struct DeviceDoc {
  Device *D;
};
struct PeakSection {
  Device *D;
  bool Seen = false;
};
struct MemorySection {
  Device *D;
  bool Seen = false;
};
struct CacheSection {
  Device *D;
};
struct LinkSection {
  LinkSpec *L;
  const char *Key; ///< "host_link", "intra_node" or "inter_node"
};
struct NodeSection {
  Device *D;
};
struct EffSection {
  Device *D;
};
struct VectorSection {
  Device *D;
};
struct CurvesSection {
  Device *D;
};
struct CoresSection {
  Device *D;
};
/// A flow list of strings as written: an efficiency curve's
/// "threshold:efficiency" steps, cores.matrix_units' dtype names.
struct StringList {
  std::vector<std::string> Items;
  std::vector<std::string>::iterator begin() { return Items.begin(); }
  std::vector<std::string>::iterator end() { return Items.end(); }
};

/// The peak_flops keys, in the order they are written.
struct PeakKey {
  const char *Key, *Path;
  DType T; ///< Undefined for tf32, which has its own field
};
const PeakKey PeakKeys[] = {
    {"fp64", "peak_flops.fp64", DType::Double},
    {"fp32", "peak_flops.fp32", DType::Float},
    {"tf32", "peak_flops.tf32", DType::Undefined},
    {"bf16", "peak_flops.bf16", DType::BFloat16},
    {"fp16", "peak_flops.fp16", DType::Float16},
    {"fp8", "peak_flops.fp8", DType::Float8E4M3FN},
    {"int8", "peak_flops.int8", DType::Int8},
};

} // namespace

namespace llvm {
namespace yaml {

template <> struct ScalarTraits<NumField> {
  static void output(const NumField &F, void *, raw_ostream &OS) {
    OS << formatNumber(*F.Dst);
  }
  static StringRef input(StringRef S, void *, NumField &F) {
    F.Seen = true;
    double V;
    if (!llvm::to_float(S, V) || !std::isfinite(V)) {
      F.Msg = formatv("{0}: expected a number, got '{1}'", F.Path, S).str();
      return F.Msg;
    }
    switch (F.R) {
    case Range::Positive:
      if (!(V > 0))
        F.Msg = formatv("{0}: must be positive, got {1}", F.Path, S).str();
      break;
    case Range::NonNegative:
      if (V < 0)
        F.Msg = formatv("{0}: must not be negative, got {1}", F.Path, S).str();
      break;
    case Range::Fraction:
      if (!(V > 0 && V <= 1))
        F.Msg = formatv("{0}: must be in (0, 1], got {1}", F.Path, S).str();
      break;
    case Range::Share:
      if (!(V >= 0 && V < 1))
        F.Msg = formatv("{0}: must be in [0, 1), got {1}", F.Path, S).str();
      break;
    }
    if (!F.Msg.empty())
      return F.Msg;
    *F.Dst = V;
    return {};
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::None; }
};

template <> struct ScalarTraits<CountField> {
  static void output(const CountField &F, void *, raw_ostream &OS) {
    OS << *F.Dst;
  }
  static StringRef input(StringRef S, void *, CountField &F) {
    F.Seen = true;
    unsigned V;
    if (S.getAsInteger(10, V) || V == 0) {
      F.Msg = formatv("{0}: expected a whole number >= 1, got '{1}'", F.Path, S)
                  .str();
      return F.Msg;
    }
    *F.Dst = V;
    return {};
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::None; }
};

template <> struct ScalarTraits<TextField> {
  static void output(const TextField &F, void *, raw_ostream &OS) {
    OS << *F.Dst;
  }
  static StringRef input(StringRef S, void *, TextField &F) {
    F.Seen = true;
    if (F.IsKind && S != "gpu" && S != "tpu" && S != "cpu")
      F.Msg =
          formatv("{0}: must be gpu, tpu or cpu, got '{1}'", F.Path, S).str();
    else if (S.trim().empty())
      F.Msg = formatv("{0}: must not be empty", F.Path).str();
    if (!F.Msg.empty())
      return F.Msg;
    *F.Dst = S.str();
    return {};
  }
  static QuotingType mustQuote(StringRef S) { return needsQuotes(S); }
};

template <> struct SequenceTraits<AliasList> {
  static size_t size(IO &, AliasList &L) { return L.V->size(); }
  static std::string &element(IO &, AliasList &L, size_t I) {
    if (I >= L.V->size())
      L.V->resize(I + 1);
    return (*L.V)[I];
  }
  // Read by YAML I/O through SFINAE, which clang does not count as a use.
  [[maybe_unused]] static const bool flow = true;
};

template <> struct SequenceTraits<StringList> {
  static size_t size(IO &, StringList &L) { return L.Items.size(); }
  static std::string &element(IO &, StringList &L, size_t I) {
    if (I >= L.Items.size())
      L.Items.resize(I + 1);
    return L.Items[I];
  }
  [[maybe_unused]] static const bool flow = true;
};

template <> struct MappingTraits<CoresSection> {
  static void mapping(IO &Io, CoresSection &C) {
    enterSection(Io, "cores", "count, matrix_units");
    Device &D = *C.D;
    CountField Count(&D.ComputeUnits, "cores.count");
    mapValue(Io, "count", Count.Path, Count);
    require(Io, Count.Seen, Count.Path);
    StringList Types;
    if (Io.outputting()) {
      if (D.Tf32MatrixUnits)
        Types.Items.push_back("tf32");
      for (DType T : D.MatrixUnitTypes)
        for (const PeakKey &K : PeakKeys)
          if (K.T == T)
            Types.Items.push_back(K.Key);
    }
    if (!Io.outputting() || !Types.Items.empty())
      mapValue(Io, "matrix_units", "cores.matrix_units", Types);
    if (Io.outputting() || hasError(Io))
      return;
    for (const std::string &Name : Types.Items) {
      const PeakKey *Found = nullptr;
      for (const PeakKey &K : PeakKeys)
        if (Name == K.Key)
          Found = &K;
      if (!Found) {
        Io.setError(formatv("cores.matrix_units: unknown type '{0}' (expected fp64, fp32, "
                            "tf32, bf16, fp16, fp8 or int8)",
                            Name)
                        .str());
        return;
      }
      if (Found->T == DType::Undefined)
        D.Tf32MatrixUnits = true;
      else
        D.MatrixUnitTypes.push_back(Found->T);
    }
  }
};

template <> struct MappingTraits<VectorSection> {
  static void mapping(IO &Io, VectorSection &V) {
    enterSection(Io, "vector_flops", "fp64, fp32, bf16, fp16");
    for (const PeakKey &K : PeakKeys) {
      if (K.T == DType::Undefined || K.T == DType::Int8 || K.T == DType::Float8E4M3FN)
        continue;
      double Val = 0;
      if (Io.outputting()) {
        const double *Has = V.D->VectorFlops.find(K.T);
        if (!Has)
          continue;
        Val = *Has;
      }
      std::string Path = std::string("vector_flops.") + K.Key;
      NumField F(&Val, Path.c_str(), Range::Positive);
      mapValue(Io, K.Key, Path, F);
      if (!Io.outputting() && Val > 0)
        V.D->VectorFlops[K.T] = Val;
    }
  }
};

template <> struct MappingTraits<CurvesSection> {
  static void mapping(IO &Io, CurvesSection &C) {
    enterSection(Io, "efficiency_curves", "matrix, vector, memory");
    struct Entry {
      const char *Key;
      EfficiencyCurve *Curve;
    } Entries[] = {{"matrix", &C.D->MatrixEff},
                   {"vector", &C.D->VectorEff},
                   {"memory", &C.D->MemoryEff}};
    for (const Entry &E : Entries) {
      StringList L;
      if (Io.outputting()) {
        if (E.Curve->empty())
          continue;
        for (const auto &[T, Eff] : E.Curve->Steps)
          L.Items.push_back(formatNumber(T) + ":" + formatNumber(Eff));
      }
      std::string Path = std::string("efficiency_curves.") + E.Key;
      mapValue(Io, E.Key, Path, L);
      if (Io.outputting() || hasError(Io) || L.Items.empty())
        continue;
      // "threshold:efficiency", thresholds descending, the last one 0.
      for (const std::string &Item : L.Items) {
        auto [A, B] = StringRef(Item).split(':');
        double T, Eff;
        if (B.empty() || !llvm::to_float(A.trim(), T) || !llvm::to_float(B.trim(), Eff) ||
            T < 0 || !(Eff > 0 && Eff <= 1)) {
          Io.setError(formatv("{0}: expected threshold:efficiency with efficiency in (0, 1], "
                              "got '{1}'",
                              Path, Item));
          return;
        }
        if (!E.Curve->Steps.empty() && T >= E.Curve->Steps.back().first) {
          Io.setError(formatv("{0}: thresholds must decrease, got '{1}'", Path, Item));
          return;
        }
        E.Curve->Steps.emplace_back(T, Eff);
      }
      if (E.Curve->Steps.back().first != 0)
        Io.setError(formatv("{0}: the last threshold must be 0", Path));
    }
  }
};

template <> struct MappingTraits<PeakSection> {
  static void mapping(IO &Io, PeakSection &P) {
    enterSection(Io, "peak_flops", "fp64, fp32, tf32, bf16, fp16, fp8, int8");
    P.Seen = true;
    Device &D = *P.D;
    bool Any = false;
    for (const PeakKey &K : PeakKeys) {
      double V = 0;
      if (Io.outputting()) {
        if (K.T == DType::Undefined)
          V = D.Tf32Flops;
        else if (const double *Has = D.PeakFlops.find(K.T))
          V = *Has;
        if (V == 0)
          continue;
      }
      NumField F(&V, K.Path, Range::Positive);
      mapValue(Io, K.Key, K.Path, F);
      if (Io.outputting() || V == 0)
        continue;
      Any = true;
      if (K.T == DType::Undefined)
        D.Tf32Flops = V;
      else
        D.PeakFlops[K.T] = V;
    }
    if (!Io.outputting() && !Any && !hasError(Io))
      Io.setError("peak_flops: needs at least one of fp64, fp32, tf32, bf16, "
                  "fp16, fp8, int8");
  }
};

template <> struct MappingTraits<MemorySection> {
  static void mapping(IO &Io, MemorySection &M) {
    enterSection(Io, "memory",
                 "bandwidth, capacity, reserve, collective_buffers, fragmentation");
    M.Seen = true;
    NumField Bw(&M.D->MemBandwidth, "memory.bandwidth", Range::Positive);
    NumField Cap(&M.D->MemCapacity, "memory.capacity", Range::Positive);
    NumField Reserve(&M.D->MemReserve, "memory.reserve", Range::NonNegative);
    NumField Coll(&M.D->MemCollectiveBuffers, "memory.collective_buffers",
                  Range::NonNegative);
    NumField Frag(&M.D->MemFragmentation, "memory.fragmentation", Range::Share);
    mapValue(Io, "bandwidth", Bw.Path, Bw);
    mapValue(Io, "capacity", Cap.Path, Cap);
    if (!Io.outputting() || M.D->MemReserve >= 0)
      mapValue(Io, "reserve", Reserve.Path, Reserve);
    if (!Io.outputting() || M.D->MemCollectiveBuffers >= 0)
      mapValue(Io, "collective_buffers", Coll.Path, Coll);
    if (!Io.outputting() || M.D->MemFragmentation >= 0)
      mapValue(Io, "fragmentation", Frag.Path, Frag);
    require(Io, Bw.Seen, Bw.Path);
    require(Io, Cap.Seen, Cap.Path);
  }
};

template <> struct MappingTraits<CacheSection> {
  static void mapping(IO &Io, CacheSection &C) {
    enterSection(Io, "cache", "size, bandwidth");
    NumField Size(&C.D->CacheSize, "cache.size", Range::Positive);
    NumField Bw(&C.D->CacheBandwidth, "cache.bandwidth", Range::Positive);
    mapValue(Io, "size", Size.Path, Size);
    if (!Io.outputting() || C.D->CacheBandwidth > 0)
      mapValue(Io, "bandwidth", Bw.Path, Bw);
    require(Io, Size.Seen, Size.Path);
  }
};

template <> struct MappingTraits<LinkSection> {
  static void mapping(IO &Io, LinkSection &S) {
    enterSection(Io, S.Key, "name, bandwidth, latency");
    // The paths must outlive the fields; the section key is a literal.
    std::string NamePath = std::string(S.Key) + ".name";
    std::string BwPath = std::string(S.Key) + ".bandwidth";
    std::string LatPath = std::string(S.Key) + ".latency";
    if (!Io.outputting() || !S.L->Name.empty())
      mapValue(Io, "name", NamePath, S.L->Name);
    NumField Bw(&S.L->Bandwidth, BwPath.c_str(), Range::Positive);
    NumField Lat(&S.L->Latency, LatPath.c_str(), Range::NonNegative);
    mapValue(Io, "bandwidth", BwPath, Bw);
    mapValue(Io, "latency", LatPath, Lat);
    require(Io, Bw.Seen, Bw.Path);
  }
};

template <> struct MappingTraits<NodeSection> {
  static void mapping(IO &Io, NodeSection &N) {
    enterSection(Io, "node", "devices_per_node");
    CountField F(&N.D->DevicesPerNode, "node.devices_per_node");
    mapValue(Io, "devices_per_node", F.Path, F);
    require(Io, F.Seen, F.Path);
  }
};

template <> struct MappingTraits<EffSection> {
  static void mapping(IO &Io, EffSection &E) {
    enterSection(Io, "efficiency", "compute, simt, memory, intra_node, inter_node");
    NumField Compute(&E.D->EffCompute, "efficiency.compute", Range::Fraction);
    NumField Simt(&E.D->EffSimt, "efficiency.simt", Range::Fraction);
    NumField Memory(&E.D->EffMemory, "efficiency.memory", Range::Fraction);
    NumField Intra(&E.D->EffIntraNode, "efficiency.intra_node",
                   Range::Fraction);
    NumField Inter(&E.D->EffInterNode, "efficiency.inter_node",
                   Range::Fraction);
    mapValue(Io, "compute", Compute.Path, Compute);
    if (!Io.outputting() || E.D->EffSimt > 0)
      mapValue(Io, "simt", Simt.Path, Simt);
    mapValue(Io, "memory", Memory.Path, Memory);
    mapValue(Io, "intra_node", Intra.Path, Intra);
    mapValue(Io, "inter_node", Inter.Path, Inter);
  }
};

template <> struct MappingTraits<DeviceDoc> {
  static void mapping(IO &Io, DeviceDoc &Doc) {
    Device &D = *Doc.D;
    ParseState *S = stateOf(Io);
    bool Out = Io.outputting();
    // operator>> maps even an empty document, with no current node; an error
    // reported then would dereference it. parseDevice reports the empty file.
    if (!Out && !static_cast<llvm::yaml::Input &>(Io).getCurrentNode()) {
      if (S)
        S->EmptyDocument = true;
      return;
    }
    if (S)
      S->InMapping = true;
    enterSection(Io, "", TopKeys);
    // Maps a section, then makes the top level current again.
    auto Section = [&](const char *Key, auto &Sec) {
      Io.mapOptional(Key, Sec);
      enterSection(Io, "", TopKeys);
    };

    TextField Name(&D.Name, "name");
    mapValue(Io, "name", "name", Name);
    AliasList Aliases{&D.Aliases};
    if (!Out || !D.Aliases.empty())
      mapValue(Io, "aliases", "aliases", Aliases);
    TextField Kind(&D.Kind, "kind", /*IsKind=*/true);
    mapValue(Io, "kind", "kind", Kind);

    PeakSection Peak{&D};
    Section("peak_flops", Peak);
    NumField Trans(&D.TranscendentalsPerS, "transcendentals_per_s",
                   Range::Positive);
    if (!Out || D.TranscendentalsPerS > 0)
      mapValue(Io, "transcendentals_per_s", Trans.Path, Trans);
    MemorySection Mem{&D};
    Section("memory", Mem);
    CacheSection Cache{&D};
    if (!Out || D.CacheSize > 0)
      Section("cache", Cache);
    LinkSection Host{&D.HostLink, "host_link"};
    if (!Out || D.HostLink.present())
      Section("host_link", Host);
    NodeSection Node{&D};
    Section("node", Node);
    LinkSection Intra{&D.IntraNode, "intra_node"};
    if (!Out || D.IntraNode.present())
      Section("intra_node", Intra);
    LinkSection Inter{&D.InterNode, "inter_node"};
    if (!Out || D.InterNode.present())
      Section("inter_node", Inter);
    EffSection Eff{&D};
    Section("efficiency", Eff);
    VectorSection Vec{&D};
    if (!Out || !D.VectorFlops.empty())
      Section("vector_flops", Vec);
    CurvesSection Curves{&D};
    if (!Out || !D.MatrixEff.empty() || !D.VectorEff.empty() || !D.MemoryEff.empty())
      Section("efficiency_curves", Curves);
    if (!Out || !D.KernelOverlap)
      mapValue(Io, "kernel_overlap", "kernel_overlap", D.KernelOverlap);
    NumField Launch(&D.LaunchOverhead, "launch_overhead", Range::NonNegative);
    mapValue(Io, "launch_overhead", Launch.Path, Launch);
    NumField Gap(&D.KernelGap, "kernel_gap", Range::NonNegative);
    if (!Out || D.KernelGap > 0)
      mapValue(Io, "kernel_gap", Gap.Path, Gap);
    CoresSection Cores{&D};
    if (!Out || D.ComputeUnits > 0)
      Section("cores", Cores);

    require(Io, Name.Seen, "name");
    require(Io, Kind.Seen, "kind");
    require(Io, Peak.Seen, "peak_flops");
    require(Io, Mem.Seen, "memory");
    if (!Out && !hasError(Io) &&
        llvm::any_of(D.Aliases, [](const std::string &A) {
          return StringRef(A).trim().empty();
        }))
      Io.setError("aliases: an alias must not be empty");
  }
};

} // namespace yaml
} // namespace llvm

/// Keeps the first error, in words that name the key at fault.
static void collectDiagnostic(const llvm::SMDiagnostic &Diag, void *Ctx) {
  auto *S = static_cast<ParseState *>(Ctx);
  if (Diag.getKind() != llvm::SourceMgr::DK_Error || S->HasError)
    return;
  S->HasError = true;
  if (Diag.getLineNo() > 0) {
    S->Line = Diag.getLineNo();
    S->Col = Diag.getColumnNo() + 1;
  }
  StringRef Msg = Diag.getMessage();
  if (!S->InMapping) {
    // The scanner's and parser's own messages, before any key was read.
    S->Message = ("invalid YAML: " + Msg).str();
    return;
  }
  if (Msg == "unexpected scalar" && !S->Leaf.empty()) {
    // YAML I/O says this for a null value as well as for a list or mapping
    // where a single value belongs.
    S->Message = (S->Leaf + ": expected a single value").str();
  } else if (Msg == "not a sequence" && !S->Leaf.empty()) {
    S->Message = (S->Leaf + ": expected a list such as [name1, name2]").str();
  } else if (Msg == "not a mapping") {
    S->Message =
        S->Section.empty()
            ? "expected a YAML mapping with name, kind, peak_flops and memory"
            : formatv("{0}: expected a mapping with keys {1}", S->Section,
                      S->SectionKeys)
                  .str();
  } else if (Msg.starts_with("unknown key '")) {
    S->Message =
        S->Section.empty()
            ? formatv("{0} (known keys: {1})", Msg, S->SectionKeys).str()
            : formatv("{0} in {1} (known keys: {2})", Msg, S->Section,
                      S->SectionKeys)
                  .str();
  } else {
    S->Message = Msg.str();
  }
}

std::optional<double> Device::ridgePoint(DType T) const {
  std::optional<double> P = peak(T);
  if (!P || !(MemBandwidth > 0))
    return std::nullopt;
  return *P / MemBandwidth;
}

llvm::Expected<Device> ridge::parseDevice(StringRef Text, StringRef FileName) {
  // YAML has no NUL; without this check a binary file reads as a strange
  // "empty plain scalar".
  if (Text.contains('\0'))
    return fileError(FileName, "not a YAML text file (it contains NUL bytes)");
  // YAML is Unicode text; a name with bytes that are not UTF-8 would reach
  // the JSON ridge writes (which must be).
  if (size_t At = 0; !llvm::json::isUTF8(Text, &At))
    return fileError(FileName, formatv("not UTF-8 text (at byte {0}); a YAML file is", At));
  ParseState State;
  Device D;
  {
    llvm::yaml::Input YIn(llvm::MemoryBufferRef(Text, FileName), &State,
                          collectDiagnostic, &State);
    DeviceDoc Doc{&D};
    YIn >> Doc;
    State.InMapping = false;
    // A second document would be silently ignored; say so instead. Empty ones
    // (a trailing "---") are harmless, and setCurrentDocument skips them.
    if (!State.HasError && !State.EmptyDocument && YIn.nextDocument() &&
        YIn.setCurrentDocument() && !State.HasError)
      return fileError(FileName, "holds more than one YAML document; a device "
                                 "description is one mapping");
    // Every error so far went through the handler; this is a safety net.
    if (!State.HasError && YIn.error()) {
      State.HasError = true;
      State.Message = YIn.error().message();
    }
  }
  if (State.HasError) {
    if (State.Line == 0)
      return fileError(FileName, State.Message);
    return fileError(
        formatv("{0}:{1}:{2}", FileName, State.Line, State.Col).str(),
        State.Message);
  }
  if (State.EmptyDocument)
    return fileError(FileName, "empty device description: expected a mapping "
                               "with name, kind, peak_flops and memory");
  // The reserve: the file's, else the kind's defaults.
  ReserveDefaults Def = reserveDefaults(D.Kind);
  // A default never takes more than a tenth of a small device (the parts
  // are what a large training job loads; an explicit value is taken as is).
  if (D.MemReserve < 0)
    D.MemReserve = std::min(Def.Context + Def.Workspaces, 0.1 * D.MemCapacity);
  if (D.MemCollectiveBuffers < 0)
    D.MemCollectiveBuffers = std::min(Def.Collectives, 0.05 * D.MemCapacity);
  if (D.MemFragmentation < 0)
    D.MemFragmentation = Def.Fragmentation;
  if (llvm::Error E = checkReserve(D))
    return fileError(FileName, llvm::toString(std::move(E)));
  D.SourcePath = FileName.str();
  return D;
}

llvm::Error ridge::checkReserve(const Device &D) {
  if (D.withReserve(0, /*Communicates=*/true) < D.MemCapacity)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      formatv("the memory reserve ({0:F2} GB: runtime {1:F2} + collective buffers {2:F2}) "
              "leaves nothing of {3}'s {4:F2} GB",
              D.withReserve(0, true) / 1e9, D.MemReserve / 1e9, D.MemCollectiveBuffers / 1e9,
              D.Name, D.MemCapacity / 1e9)
          .str());
}

llvm::Expected<Device>
ridge::withReserveOverrides(const Device &D, const ReserveOverrides &O,
                            llvm::function_ref<std::string(const char *)> Name) {
  Device T = D;
  for (auto [Key, Value, Field] :
       {std::tuple{"memory_reserve", O.Reserve, &T.MemReserve},
        std::tuple{"collective_buffers", O.CollectiveBuffers, &T.MemCollectiveBuffers}}) {
    if (!Value)
      continue;
    if (*Value < 0)
      return usageError(Name(Key) + " must not be negative");
    *Field = *Value;
  }
  if (O.Fragmentation) {
    if (!(*O.Fragmentation >= 0 && *O.Fragmentation < 1))
      return usageError(Name("fragmentation") + " must be in [0, 1)");
    T.MemFragmentation = *O.Fragmentation;
  }
  if (llvm::Error E = checkReserve(T))
    return usageError(llvm::toString(std::move(E)));
  return T;
}

ReserveDefaults ridge::reserveDefaults(StringRef Kind) {
  ReserveDefaults R;
  if (Kind != "gpu")
    return R; // TPU runtimes and host processes: no reserve modeled
  // The CUDA context with the kernels a training job loads: PyTorch measured
  // 287 MB with lazy module loading and 667 MB eager for torch alone
  // (pytorch/pytorch#86509); cuBLAS, cuDNN and NCCL load theirs on top.
  // Assumption: 0.75 GB.
  R.Context = 0.75e9;
  // Library workspaces: cuBLAS 8 x 4 MiB per handle and stream (PyTorch's
  // CUBLAS_WORKSPACE_CONFIG default ":4096:8"), cuBLASLt's, cuDNN's for
  // convolutions. Assumption: 0.25 GB.
  R.Workspaces = 0.25e9;
  // NCCL's buffers: NCCL_BUFFSIZE (4 MiB) per channel and peer, for each
  // protocol, in each communicator (tensor, data, pipeline groups).
  // Assumption: 0.5 GB, charged only when the job communicates.
  R.Collectives = 0.5e9;
  // The caching allocator's fragmentation (blocks reserved but not usable
  // for the next request). Assumption: 5% of the bytes allocated.
  R.Fragmentation = 0.05;
  return R;
}

llvm::Expected<Device> ridge::loadDeviceFile(StringRef Path) {
  auto BufOrErr = llvm::MemoryBuffer::getFile(Path, /*IsText=*/true);
  if (!BufOrErr)
    return fileError(Path, BufOrErr.getError().message());
  return parseDevice((*BufOrErr)->getBuffer(), Path);
}

llvm::Expected<std::vector<Device>> ridge::loadDeviceDir(StringRef Dir) {
  std::vector<std::string> Files;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC)) {
    StringRef P = It->path();
    if (llvm::sys::path::extension(P) == ".yaml" &&
        llvm::sys::fs::is_regular_file(P))
      Files.push_back(P.str());
  }
  if (EC)
    return fileError(Dir, "cannot read the device folder: " + EC.message());
  if (Files.empty())
    return fileError(Dir, "no device descriptions (*.yaml) in this folder");
  llvm::sort(Files, [](const std::string &A, const std::string &B) {
    return llvm::sys::path::filename(A) < llvm::sys::path::filename(B);
  });

  std::vector<Device> Devices;
  // Lower-cased name or alias -> file that claims it; a clash would make
  // --device pick whichever file sorts first.
  llvm::StringMap<std::string> Owner;
  for (const std::string &F : Files) {
    auto D = loadDeviceFile(F);
    if (!D)
      return D.takeError();
    llvm::SmallVector<std::string, 8> Names{StringRef(D->Name).lower()};
    for (const std::string &A : D->Aliases)
      Names.push_back(StringRef(A).lower());
    llvm::sort(Names);
    Names.erase(std::unique(Names.begin(), Names.end()), Names.end());
    for (const std::string &N : Names) {
      auto [It, Inserted] = Owner.try_emplace(N, F);
      if (!Inserted)
        return fileError(
            F, formatv("device name or alias '{0}' is already used by {1}", N,
                       It->second));
    }
    Devices.push_back(std::move(*D));
  }
  return Devices;
}

llvm::Expected<const Device *> ridge::findDevice(llvm::ArrayRef<Device> Devices,
                                                 StringRef Name) {
  for (const Device &D : Devices) {
    if (StringRef(D.Name).equals_insensitive(Name))
      return &D;
    for (const std::string &A : D.Aliases)
      if (StringRef(A).equals_insensitive(Name))
        return &D;
  }
  if (Devices.empty())
    return usageError(formatv(
        "unknown device '{0}': no device descriptions are loaded", Name));

  // Suggest the closest name when the miss looks like a typo.
  std::string Lower = Name.lower();
  const Device *Best = nullptr;
  unsigned BestDist = 3; // suggest only within 2 edits
  for (const Device &D : Devices) {
    llvm::SmallVector<StringRef, 8> Cands{D.Name};
    Cands.append(D.Aliases.begin(), D.Aliases.end());
    for (StringRef C : Cands) {
      unsigned Dist = StringRef(Lower).edit_distance(C.lower(), true, BestDist);
      if (Dist < BestDist) {
        BestDist = Dist;
        Best = &D;
      }
    }
  }
  std::string Known;
  for (const Device &D : Devices)
    Known += (Known.empty() ? "" : ", ") + D.Name;
  std::string Hint =
      Best ? formatv(" (did you mean '{0}'?)", Best->Name).str() : "";
  return usageError(formatv("unknown device '{0}'{1}; known devices: {2}", Name,
                            Hint, Known));
}

std::string ridge::defaultDeviceDir(const char *Argv0,
                                    StringRef SourceDevicesDir) {
  if (const char *Env = std::getenv("RIDGE_DEVICES_DIR"); Env && *Env)
    return Env;
  // Any function in this binary serves as the anchor for finding it.
  void *Anchor = reinterpret_cast<void *>(&ridge::defaultDeviceDir);
  std::string Exe =
      llvm::sys::fs::getMainExecutable(Argv0 ? Argv0 : "", Anchor);
  if (!Exe.empty()) {
    // <prefix>/bin/ridge -> <prefix>/share/ridge/devices
    llvm::SmallString<256> P(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(Exe)));
    llvm::sys::path::append(P, "share", "ridge", "devices");
    if (llvm::sys::fs::is_directory(P))
      return std::string(P);
  }
  return SourceDevicesDir.str();
}

void ridge::writeDeviceYaml(const Device &D, llvm::raw_ostream &OS) {
  // Output only reads through the wrappers, but they hold non-const pointers.
  Device Copy = D;
  DeviceDoc Doc{&Copy};
  llvm::yaml::Output YOut(OS, nullptr, /*WrapColumn=*/100);
  YOut << Doc;
}

void ridge::printDeviceTable(llvm::ArrayRef<Device> Devices, llvm::raw_ostream &OS) {
  auto Peak = [](std::optional<double> P) {
    return P ? llvm::formatv("{0,7:F1}", *P / 1e12).str() : std::string("      -");
  };
  auto Ridge = [](std::optional<double> P, double Bw) {
    return P ? llvm::formatv("{0,6:F1}", *P / Bw).str() : std::string("     -");
  };
  OS << "                        peak TFLOP/s (dense, no sparsity)         memory     "
        "       ridge point FLOP/byte\n";
  OS << llvm::formatv("{0,-18} {1,-4} {2,7} {3,7} {4,7} {5,7} {6,7} {7,8} {8,7} {9,6} {10,6} "
                      "{11,6} {12,6} {13,6}\n",
                      "device", "kind", "fp32", "tf32", "fp16", "bf16", "fp8", "TB/s", "GB",
                      "fp32", "tf32", "fp16", "bf16", "fp8");
  for (const Device &D : Devices) {
    std::optional<double> Tf32;
    if (D.Tf32Flops > 0)
      Tf32 = D.Tf32Flops;
    OS << llvm::formatv("{0,-18} {1,-4} {2} {3} {4} {5} {6} {7,8:F2} {8,7:F0} {9} {10} {11} "
                        "{12} {13}\n",
                        D.Name, D.Kind, Peak(D.peak(DType::Float)), Peak(Tf32),
                        Peak(D.peak(DType::Float16)), Peak(D.peak(DType::BFloat16)),
                        Peak(D.peak(DType::Float8E4M3FN)), D.MemBandwidth / 1e12,
                        D.MemCapacity / 1e9, Ridge(D.peak(DType::Float), D.MemBandwidth),
                        Ridge(Tf32, D.MemBandwidth),
                        Ridge(D.peak(DType::Float16), D.MemBandwidth),
                        Ridge(D.peak(DType::BFloat16), D.MemBandwidth),
                        Ridge(D.peak(DType::Float8E4M3FN), D.MemBandwidth));
  }
}

