//===- Importer.cpp - ONNX ModelProto to ridge IR -------------------------===//
#include "analyzer/onnx/Importer.h"
#include "analyzer/onnx/OnnxWire.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include <onnx/onnx_pb.h>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <queue>

using namespace ridge;
using llvm::Error;
using llvm::formatv;

namespace {

static float halfToFloat(uint16_t H) {
  uint32_t Sign = (H >> 15) & 1, Exp = (H >> 10) & 0x1f, Man = H & 0x3ff;
  float F;
  if (Exp == 0)
    F = std::ldexp(float(Man), -24);
  else if (Exp == 31)
    F = Man ? NAN : INFINITY;
  else
    F = std::ldexp(float(Man | 0x400), int(Exp) - 25);
  return Sign ? -F : F;
}

template <typename T> static T readLE(llvm::StringRef Raw, size_t I) {
  T X;
  std::memcpy(&X, Raw.data() + I * sizeof(T), sizeof(T));
  return X;
}

/// Elements of T by its dims: -1 if a dim is negative, INT64_MAX past it
/// (dims come from the file: a product can overflow).
static int64_t numElems(const wire::Tensor &T) {
  int64_t N = 1;
  for (int64_t D : T.Dims) {
    if (D < 0)
      return -1;
    if (__builtin_mul_overflow(N, D, &N))
      return std::numeric_limits<int64_t>::max();
  }
  return N;
}

} // namespace

/// Fills Out with T's N elements from raw_data read as little-endian Raw,
/// each converted by Conv; false (Out untouched) unless raw_data holds
/// exactly N of them.
template <typename Raw, typename OutT, typename ConvFn>
static bool fromRaw(const wire::Tensor &T, int64_t N, llvm::SmallVectorImpl<OutT> &Out,
                    ConvFn Conv) {
  if (!T.HasRaw || int64_t(T.Raw.size()) != int64_t(sizeof(Raw)) * N)
    return false;
  for (int64_t I = 0; I < N; ++I)
    Out.push_back(Conv(readLE<Raw>(T.Raw, I)));
  return true;
}
template <typename Raw, typename OutT>
static bool fromRaw(const wire::Tensor &T, int64_t N, llvm::SmallVectorImpl<OutT> &Out) {
  return fromRaw<Raw>(T, N, Out, [](Raw X) { return OutT(X); });
}

/// Out = List when it has exactly N elements.
template <typename ListT, typename OutT>
static void fromList(const ListT &List, int64_t N, llvm::SmallVectorImpl<OutT> &Out) {
  if (int64_t(List.size()) == N)
    Out.assign(List.begin(), List.end());
}

/// A small integer tensor's elements (int and bool types).
bool ridge::smallTensorInts(const wire::Tensor &T, llvm::SmallVectorImpl<int64_t> &Out,
                            int64_t Max) {
  int64_t N = numElems(T);
  if (N < 0 || N > Max)
    return false;
  Out.clear();
  using TP = onnx::TensorProto;
  switch (T.DataType) {
  case TP::INT64:
    if (!fromRaw<int64_t>(T, N, Out))
      fromList(T.lists().Int64Data, N, Out);
    break;
  case TP::INT32:
    if (!fromRaw<int32_t>(T, N, Out))
      fromList(T.lists().Int32Data, N, Out);
    break;
  case TP::INT8: case TP::UINT8: case TP::BOOL: case TP::INT16: case TP::UINT16: {
    bool Raw = T.DataType == TP::INT8    ? fromRaw<int8_t>(T, N, Out)
               : T.DataType == TP::INT16  ? fromRaw<int16_t>(T, N, Out)
               : T.DataType == TP::UINT16 ? fromRaw<uint16_t>(T, N, Out)
                                          : fromRaw<uint8_t>(T, N, Out);
    if (!Raw)
      fromList(T.lists().Int32Data, N, Out);
    break;
  }
  case TP::UINT32: case TP::UINT64:
    if (!(T.DataType == TP::UINT32 && fromRaw<uint32_t>(T, N, Out)) &&
        !fromRaw<uint64_t>(T, N, Out))
      fromList(T.lists().Uint64Data, N, Out);
    break;
  default:
    return false;
  }
  return int64_t(Out.size()) == N;
}

/// A small floating-point tensor's elements.
bool ridge::smallTensorFloats(const wire::Tensor &T, llvm::SmallVectorImpl<double> &Out,
                              int64_t Max) {
  int64_t N = numElems(T);
  if (N < 0 || N > Max)
    return false;
  Out.clear();
  using TP = onnx::TensorProto;
  switch (T.DataType) {
  case TP::FLOAT:
    if (!fromRaw<float>(T, N, Out))
      fromList(T.lists().FloatData, N, Out);
    break;
  case TP::DOUBLE:
    if (!fromRaw<double>(T, N, Out))
      fromList(T.lists().DoubleData, N, Out);
    break;
  case TP::FLOAT16:
    if (!fromRaw<uint16_t>(T, N, Out, halfToFloat) && int64_t(T.lists().Int32Data.size()) == N)
      for (int32_t X : T.lists().Int32Data) Out.push_back(halfToFloat(uint16_t(X)));
    break;
  default:
    return false;
  }
  return int64_t(Out.size()) == N;
}

/// F applied to T as the importer reads it: serialized, then decoded.
template <typename OutT, typename FnT>
static bool onDecoded(const onnx::TensorProto &T, llvm::SmallVectorImpl<OutT> &Out,
                      int64_t Max, FnT Fn) {
  wire::Tensor W;
  std::string Bytes = T.SerializeAsString(); // W refers into it
  return wire::decodeTensor(Bytes, W, wire::trustedDecode()) && Fn(W, Out, Max);
}

bool ridge::smallTensorInts(const onnx::TensorProto &T, llvm::SmallVectorImpl<int64_t> &Out,
                            int64_t Max) {
  return onDecoded(T, Out, Max, [](const wire::Tensor &W, auto &O, int64_t M) {
    return smallTensorInts(W, O, M);
  });
}

bool ridge::smallTensorFloats(const onnx::TensorProto &T, llvm::SmallVectorImpl<double> &Out,
                              int64_t Max) {
  return onDecoded(T, Out, Max, [](const wire::Tensor &W, auto &O, int64_t M) {
    return smallTensorFloats(W, O, M);
  });
}

namespace {

/// D, with the default domain's explicit name as the empty one.
llvm::StringRef normalizeDomain(llvm::StringRef D) {
  return D == "ai.onnx" ? llvm::StringRef() : D;
}

class Importer {
public:
  Importer(Model &M, const wire::DecodeOptions &DecodeOpts, llvm::StringRef File,
           llvm::StringRef ModelDir, DiagnosticEngine &Diags)
      : M(M), DecodeOpts(DecodeOpts), File(File), ModelDir(ModelDir), Diags(Diags) {}

  Error importGraph(const wire::Graph &GP, Graph &G,
                    const std::map<std::string, int64_t> &Opsets);
  /// One warning per missing external file, not one per initializer (a
  /// generated model can have hundreds of thousands).
  void reportMissingExternal();
  /// The first name that is not valid UTF-8, as an error's words ("" when
  /// none is).
  llvm::StringRef badText() const { return BadText; }

private:
  std::map<std::string, std::pair<std::string, size_t>> MissingExternal;
  enum class LocationCheck { Inside, Missing, Unresolvable, Outside };
  llvm::StringMap<LocationCheck> LocationChecks;
  Model &M;
  /// The options the nodes' bytes were checked with (wire::decodeNode).
  wire::DecodeOptions DecodeOpts;
  llvm::StringRef File;
  llvm::StringRef ModelDir;
  DiagnosticEngine &Diags;

  /// Op types and domains seen, interned (internString takes a lock; this
  /// import's own table does not).
  llvm::StringMap<InternedString> Interned;

  Error err(const llvm::Twine &Msg) { return fileError(File, Msg); }
  /// In front of Interned, the strings found last, by their length and end
  /// bytes: a graph has a few op types, and a hash table's lookup per node
  /// (hashing the string, probing, comparing) was 2% of a bound analyze.
  struct RecentEntry {
    llvm::StringRef Key; ///< the interned copy's bytes
    InternedString Value;
  };
  std::array<RecentEntry, 32> Recent;
  InternedString intern(llvm::StringRef S) {
    if (S.empty())
      return {};
    RecentEntry &R =
        Recent[(S.size() * 7 + (unsigned char)S.front() * 3 + (unsigned char)S.back()) %
               Recent.size()];
    if (R.Key == S)
      return R.Value;
    auto [It, New] = Interned.try_emplace(S);
    if (New) {
      It->second = InternedString::of(S);
      checkText(S, "an op type or domain");
    }
    R = {It->second.ref(), It->second};
    return It->second;
  }

  /// The first name or type string that is not valid UTF-8, said as the
  /// error the import ends with (ONNX's names are protobuf strings: valid
  /// UTF-8; JSON and the reports carry them). Checked as the IR keeps each:
  /// plain ASCII, nearly every name, is one pass over its bytes.
  std::string BadText;
  void checkText(llvm::StringRef S, const llvm::Twine &What) {
    if (LLVM_LIKELY(llvm::all_of(S, [](char C) { return (unsigned char)C < 0x80; })) ||
        !BadText.empty() || llvm::json::isUTF8(S))
      return;
    BadText = (What + " '" + llvm::json::fixUTF8(S) + "' is not valid UTF-8").str();
  }

  /// What names the tensor in errors (a Twine: built only for an error).
  Error importTensorMeta(const wire::Tensor &T, const llvm::Twine &What,
                         DType &Elem, llvm::SmallVectorImpl<int64_t> &Dims);
  Error importType(const wire::Type &T, Value &V);
  Error importInitializer(const wire::Tensor &T, Graph &G,
                          const llvm::SmallVectorImpl<int64_t> *SparseDims,
                          const NameKey *Key = nullptr);
  Error checkExternalData(const wire::Tensor &T, InitializerInfo &Info);
  Error importAttribute(const wire::Attribute &AP, Node &N, Graph &G,
                        const std::map<std::string, int64_t> &Opsets);
  Error sortTopologically(Graph &G);
};

Error Importer::importTensorMeta(const wire::Tensor &T,
                                 const llvm::Twine &What, DType &Elem,
                                 llvm::SmallVectorImpl<int64_t> &Dims) {
  auto D = dtypeFromOnnx(T.DataType);
  if (!D || *D == DType::Undefined)
    return err(formatv("{0} has unknown element type {1}", What.str(), T.DataType));
  Elem = *D;
  for (size_t I = 0; I < T.Dims.size(); ++I) {
    if (T.Dims[I] < 0)
      return err(formatv("{0} has negative dim {1} at axis {2}", What.str(),
                         T.Dims[I], I));
    Dims.push_back(T.Dims[I]);
  }
  return Error::success();
}

Error Importer::importType(const wire::Type &T, Value &V) {
  using K = wire::Type::Kind;
  if (T.K == K::Sequence || T.K == K::Map || T.K == K::Optional || T.K == K::SparseTensor) {
    V.NonTensor = true; // no dense tensor shape to know
    return Error::success();
  }
  if (T.K != K::Tensor)
    return Error::success(); // no type information: shape unknown
  if (T.ElemType != 0) {
    auto D = dtypeFromOnnx(T.ElemType);
    if (!D)
      return err(formatv("value '{0}' has unknown element type {1}", V.Name, T.ElemType));
    V.Elem = *D;
  }
  if (!T.HasShape)
    return Error::success();
  Shape S;
  for (size_t I = 0; I < T.Dims.size(); ++I) {
    const wire::Dimension &D = T.Dims[I];
    if (D.K == wire::Dimension::Kind::Value) {
      if (D.Value < 0)
        return err(formatv("value '{0}' has negative dim {1} at axis {2}",
                           V.Name, D.Value, I));
      S.Dims.push_back(Dim::known(D.Value));
    } else {
      checkText(D.Param, "dim name");
      S.Dims.push_back(Dim::fromParam(D.Param));
    }
  }
  V.Shp = std::move(S);
  return Error::success();
}

Error Importer::checkExternalData(const wire::Tensor &T,
                                  InitializerInfo &Info) {
  Info.External = true;
  Info.Location = T.Location.str();
  const std::string &Loc = Info.Location;
  auto Refuse = [&](llvm::StringRef Why) {
    return err(formatv("initializer '{0}': external data location '{1}' {2}; "
                       "refused",
                       T.Name, Loc, Why));
  };
  if (Loc.empty())
    return err(formatv("initializer '{0}' is external but names no location",
                       T.Name));
  // A location is checked once: a generated model can have hundreds of
  // thousands of initializers in one weights file. One already checked
  // passed the path's checks (a refused one ends the import).
  auto It = LocationChecks.find(Loc);
  if (It == LocationChecks.end()) {
    if (llvm::sys::path::is_absolute(Loc) || Loc[0] == '/' || Loc[0] == '\\')
      return Refuse("is an absolute path");
    for (auto P = llvm::sys::path::begin(Loc), E = llvm::sys::path::end(Loc); P != E; ++P)
      if (*P == "..")
        return Refuse("escapes the model's directory with '..'");
    It = LocationChecks.try_emplace(Loc, LocationCheck::Inside).first;
    llvm::SmallString<256> Full(ModelDir);
    llvm::sys::path::append(Full, Loc);
    llvm::SmallString<256> RealDir, RealFile;
    if (!llvm::sys::fs::exists(Full))
      It->second = LocationCheck::Missing;
    else if (llvm::sys::fs::real_path(ModelDir.empty() ? "." : ModelDir, RealDir) ||
             llvm::sys::fs::real_path(Full, RealFile))
      It->second = LocationCheck::Unresolvable;
    // A symlink inside the directory may still point outside it.
    else if (!llvm::StringRef(RealFile).starts_with((RealDir + "/").str()))
      It->second = LocationCheck::Outside;
  }
  switch (It->second) {
  case LocationCheck::Missing:
    Info.LocationMissing = true;
    return Error::success();
  case LocationCheck::Unresolvable:
    return Refuse("cannot be resolved");
  case LocationCheck::Outside:
    return Refuse("resolves outside the model's directory (through a symlink)");
  case LocationCheck::Inside:
    return Error::success();
  }
  return Error::success();
}

Error Importer::importInitializer(
    const wire::Tensor &T, Graph &G,
    const llvm::SmallVectorImpl<int64_t> *SparseDims, const NameKey *Key) {
  if (T.Name.empty())
    return err("an initializer has no name");
  auto [V, Added] = G.tryAddValue(Key ? *Key : NameIndex::key(T.Name), ValueKind::Initializer);
  if (!Added)
    return err(formatv("initializer '{0}' is defined twice", T.Name));
  checkText(T.Name, "initializer");
  llvm::SmallVector<int64_t, 4> Dims;
  if (Error E = importTensorMeta(T, "initializer '" + llvm::Twine(T.Name) + "'",
                                 V->Elem, Dims))
    return E;
  if (SparseDims)
    Dims.assign(SparseDims->begin(), SparseDims->end());
  Shape S;
  for (int64_t D : Dims)
    S.Dims.push_back(Dim::known(D));
  V->Shp = S;
  InitializerInfo Info;
  if (T.DataLocation == onnx::TensorProto_DataLocation_EXTERNAL)
    if (Error E = checkExternalData(T, Info))
      return E;
  V->setInit(M.initializerInfo(Info));
  if (V->init()->LocationMissing) {
    auto &Seen = MissingExternal[V->init()->Location];
    if (Seen.first.empty())
      Seen.first = T.Name.str();
    ++Seen.second;
  }
  // Keep small integer contents (shape vectors, axes, empty lists too) for
  // the shape rules.
  llvm::SmallVector<int64_t, 8> Ints;
  if (smallTensorInts(T, Ints, MaxIntValueElems))
    V->IntData.emplace(Ints.begin(), Ints.end());
  G.Initializers.push_back(V);
  return Error::success();
}

Attribute::Kind attributeKind(const wire::Attribute &A) {
  using K = Attribute::Kind;
  if (A.Type != onnx::AttributeProto_AttributeType_UNDEFINED)
    return static_cast<K>(A.Type); // same numbering as onnx.proto
  // Old exporters leave the type unset: infer it from the field present.
  if (A.HasF) return K::Float;
  if (A.HasI) return K::Int;
  if (A.HasS) return K::String;
  if (A.HasT) return K::Tensor;
  if (A.HasG) return K::Graph;
  if (!A.Floats.empty()) return K::Floats;
  if (!A.Ints.empty()) return K::Ints;
  if (!A.Strings.empty()) return K::Strings;
  if (!A.Tensors.empty()) return K::Tensors;
  if (!A.Graphs.empty()) return K::Graphs;
  return K::Undefined;
}

Error Importer::importAttribute(const wire::Attribute &AP, Node &N,
                                Graph &G,
                                const std::map<std::string, int64_t> &Opsets) {
  Attribute A;
  A.Name = AP.Name.str();
  checkText(AP.Name, "attribute name");
  A.K = attributeKind(AP);
  using K = Attribute::Kind;
  auto ImportSub = [&](const wire::Graph &SP) -> Error {
    auto Sub = std::make_unique<Graph>();
    Sub->Parent = &G;
    Sub->ParentNode = &N;
    Sub->Name = SP.Name.empty() ? N.Name.str() + "." + A.Name : SP.Name.str();
    if (Error E = importGraph(SP, *Sub, Opsets))
      return E;
    // What the subgraph reads from outside it, the node reads too.
    for (Value *C : Sub->Captures)
      if (!G.lookupLocal(C->Name) || G.lookupLocal(C->Name) != C)
        if (llvm::find(G.Captures, C) == G.Captures.end())
          G.Captures.push_back(C);
    A.more().Graphs.push_back(std::move(Sub));
    return Error::success();
  };
  switch (A.K) {
  case K::Float: A.F = AP.F; break;
  case K::Int: A.I = AP.I; break;
  case K::String: A.more().S = AP.S.str(); break;
  case K::Floats: A.more().Floats.assign(AP.Floats.begin(), AP.Floats.end()); break;
  case K::Ints: A.Ints.assign(AP.Ints.begin(), AP.Ints.end()); break;
  case K::Strings:
    for (llvm::StringRef X : AP.Strings)
      A.more().Strings.push_back(X.str());
    break;
  case K::Tensor: {
    if (Error E = importTensorMeta(
            AP.T, "attribute '" + llvm::Twine(A.Name) + "' of node '" + N.Name.ref() + "'",
            A.TensorElem, A.more().TensorDims))
      return E;
    // Small payloads (a Constant's shape vector or scale) feed shape rules.
    llvm::SmallVector<int64_t, 8> Ints;
    llvm::SmallVector<double, 8> Floats;
    if (smallTensorInts(AP.T, Ints, MaxIntValueElems))
      A.Ints.assign(Ints.begin(), Ints.end());
    else if (smallTensorFloats(AP.T, Floats))
      A.more().Floats.assign(Floats.begin(), Floats.end());
    break;
  }
  case K::Graph:
    if (AP.G) {
      if (Error E = ImportSub(*AP.G))
        return E;
    } else if (Error E = ImportSub(wire::Graph())) { // type GRAPH, no graph: empty
      return E;
    }
    break;
  case K::Graphs:
    for (const auto &SP : AP.Graphs)
      if (Error E = ImportSub(SP))
        return E;
    break;
  default:
    break;
  }
  N.Attrs.push_back(std::move(A));
  return Error::success();
}

Error Importer::importGraph(const wire::Graph &GP, Graph &G,
                            const std::map<std::string, int64_t> &Opsets) {
  if (G.Name.empty())
    G.Name = GP.Name.empty() ? "main" : GP.Name.str();
  checkText(GP.Name, "graph name");
  // Sized for the values there will be (the index's slots are all written
  // when it is allocated).
  G.reserveValues(GP.Initializers.size() + GP.Inputs.size() + GP.NumNodeOutputs);
  // Names are looked up in the index PrefetchAhead entries after they are
  // prefetched: a large graph's index is far larger than the caches, and
  // its misses then overlap instead of following one another (import of a
  // million nodes 0.60 -> 0.41 s).
  constexpr size_t PrefetchAhead = 8;
  // Initializers are decoded from their bytes PrefetchAhead ahead of their
  // import, into a ring (as the nodes below), so that their names are
  // prefetched.
  size_t NumInits = GP.Initializers.size();
  std::array<wire::Tensor, PrefetchAhead + 1> Inits;
  std::array<NameKey, PrefetchAhead + 1> InitKeys; ///< their names, hashed once
  auto DecodeInit = [&](size_t I) -> Error {
    wire::Tensor &T = Inits[I % Inits.size()];
    if (!wire::decodeInitializer(GP.Initializers[I], T, DecodeOpts))
      return err(formatv("cannot decode initializer {0} of graph '{1}' again (internal error)",
                         I, G.Name));
    NameKey &K = InitKeys[I % Inits.size()];
    K = NameIndex::key(T.Name);
    G.prefetchName(K);
    return Error::success();
  };
  for (size_t I = 0; I < std::min(PrefetchAhead, NumInits); ++I)
    if (Error E = DecodeInit(I))
      return E;
  for (size_t I = 0; I < NumInits; ++I) {
    if (I + PrefetchAhead < NumInits)
      if (Error E = DecodeInit(I + PrefetchAhead))
        return E;
    if (Error E = importInitializer(Inits[I % Inits.size()], G, nullptr,
                                    &InitKeys[I % Inits.size()]))
      return E;
  }
  for (const auto &ST : GP.SparseInitializers)
    if (Error E = importInitializer(ST.Values, G, &ST.Dims))
      return E;
  for (const auto &VI : GP.Inputs) {
    if (VI.Name.empty())
      return err(formatv("graph '{0}' has an input with no name", G.Name));
    Value *V = G.lookupLocal(VI.Name);
    if (!V) {
      V = G.addValue(VI.Name, ValueKind::GraphInput);
      checkText(VI.Name, "graph input");
    } else if (llvm::find(G.Inputs, V) != G.Inputs.end())
      return err(formatv("graph '{0}' lists input '{1}' twice", G.Name, VI.Name));
    if (!V->isInitializer())
      if (Error E = importType(VI.Ty, *V))
        return E;
    G.Inputs.push_back(V);
  }

  // Pass 1: nodes and the values they define. Each node is decoded from its
  // bytes PrefetchAhead nodes ahead of its import, into a ring.
  size_t NumNodes = GP.Nodes.size();
  G.Nodes.reserve(NumNodes);
  std::array<wire::Node, PrefetchAhead + 1> Ring;
  auto Decode = [&](size_t I, wire::Node &NP) -> Error {
    if (!wire::decodeNode(GP.Nodes[I], NP, DecodeOpts))
      return err(formatv("cannot decode node {0} of graph '{1}' again (internal error)", I,
                         G.Name));
    return Error::success();
  };
  // Each ring entry's output and input names, hashed once as they are
  // prefetched.
  std::array<llvm::SmallVector<NameKey, 2>, PrefetchAhead + 1> OutKeys, InKeys;
  auto KeysOf = [&](size_t Slot) {
    const wire::Node &NP = Ring[Slot];
    OutKeys[Slot].clear();
    InKeys[Slot].clear();
    for (llvm::StringRef Name : NP.Outputs)
      G.prefetchName(OutKeys[Slot].emplace_back(NameIndex::key(Name)));
    for (llvm::StringRef Name : NP.Inputs)
      G.prefetchName(InKeys[Slot].emplace_back(NameIndex::key(Name)));
  };
  for (size_t I = 0; I < std::min(PrefetchAhead, NumNodes); ++I) {
    if (Error E = Decode(I, Ring[I]))
      return E;
    KeysOf(I);
  }
  // Nodes whose attributes, or inputs not found in pass 1, pass 2 reads:
  // only they are decoded again there.
  std::vector<bool> Revisit(NumNodes);
  llvm::DenseMap<const char *, const int64_t *> OpsetOf; ///< by interned domain
  for (size_t I = 0; I < NumNodes; ++I) {
    if (I + PrefetchAhead < NumNodes) {
      size_t Slot = (I + PrefetchAhead) % Ring.size();
      if (Error E = Decode(I + PrefetchAhead, Ring[Slot]))
        return E;
      KeysOf(Slot);
    }
    const wire::Node &NP = Ring[I % Ring.size()];
    const NameKey *OutKey = OutKeys[I % Ring.size()].data(),
                  *InKey = InKeys[I % Ring.size()].data();
    Node *N = G.newNode();
    N->OpType = intern(NP.OpType);
    N->Domain = intern(normalizeDomain(NP.Domain));
    // Unnamed nodes: "<OpType>_<index>" in the main graph (and function
    // bodies); "<graph name>/<OpType>_<index>" inside subgraphs, so that
    // rows of different bodies cannot be confused.
    if (NP.Name.empty())
      N->Name = G.saveName(G.Parent ? formatv("{0}/{1}_{2}", G.Name, NP.OpType, I).str()
                                    : formatv("{0}_{1}", NP.OpType, I).str());
    else
      N->Name = G.saveName(NP.Name);
    checkText(NP.Name, "node name");
    N->Parent = &G;
    if (N->OpType.empty())
      return err(formatv("node '{0}' has no op_type", N->Name));
    // By the interned domain's address: the map's keys are strings.
    auto [Known, New] = OpsetOf.try_emplace(N->Domain.data(), nullptr);
    if (New) {
      auto OS = Opsets.find(N->Domain.str());
      Known->second = OS == Opsets.end() ? nullptr : &OS->second;
    }
    if (Known->second)
      N->OpsetVersion = int32_t(std::clamp<int64_t>(*Known->second, INT32_MIN, INT32_MAX));
    else if (!M.findFunction(NP.Domain, NP.OpType))
      return err(formatv("node '{0}' ({1}) uses domain '{2}', which the model "
                         "does not import (unknown domain)",
                         N->Name, N->OpType, N->domainName()));
    N->Outputs = G.operands(NP.Outputs.size());
    for (size_t J = 0; J < NP.Outputs.size(); ++J) {
      llvm::StringRef Out = NP.Outputs[J];
      if (Out.empty())
        continue; // an omitted optional output
      auto [V, Added] = G.tryAddValue(OutKey[J], ValueKind::Intermediate);
      if (!Added) {
        Value *Old = V;
        std::string By = Old->producer() ? "node '" + Old->producer()->Name.str() + "'"
                         : Old->isInitializer() ? std::string("an initializer")
                                                : std::string("a graph input");
        return err(formatv("value '{0}' is defined twice: by {1} and by node "
                           "'{2}'",
                           Out, By, N->Name));
      }
      checkText(Out, "value");
      V->setProducer(N);
      N->Outputs[J] = V;
    }
    // Inputs defined above in this graph are looked up now, while their
    // values are still in cache (at a million nodes, pass 2 would miss the
    // cache three times an input); pass 2 takes them as found, and looks up
    // the rest as before. A name found here is the value pass 2 would find:
    // values are only ever added.
    N->Inputs = G.operands(NP.Inputs.size());
    Revisit[I] = !NP.Attrs.empty();
    for (size_t J = 0; J < NP.Inputs.size(); ++J)
      if (!NP.Inputs[J].empty()) {
        N->Inputs[J] = G.lookupLocal(InKey[J]);
        Revisit[I] = Revisit[I] || !N->Inputs[J];
      }
    G.Nodes.push_back(std::move(N));
  }
  // Pass 2: attributes (subgraphs may read any value defined above) and inputs.
  wire::Node Again;
  for (size_t I = 0; I < NumNodes; ++I) {
    // Not revisited: no attributes, and every input found in pass 1 (or
    // omitted: null).
    const wire::Node *NP = nullptr;
    if (Revisit[I]) {
      if (Error E = Decode(I, Again))
        return E;
      NP = &Again;
    }
    Node &N = *G.Nodes[I];
    if (NP) {
      N.Attrs.reserve(NP->Attrs.size()); // (grown by doubling: 2 attributes took 3's room)
      for (const auto &AP : NP->Attrs)
        if (Error E = importAttribute(AP, N, G, Opsets))
          return E;
    }
    // Control flow without its bodies has no meaning (and crashes ONNX's
    // shape inference): say so.
    if (N.Domain.empty()) {
      llvm::SmallVector<const char *, 2> Required;
      if (N.OpType == "If")
        Required = {"then_branch", "else_branch"};
      else if (N.OpType == "Loop" || N.OpType == "Scan" || N.OpType == "SequenceMap")
        Required = {"body"};
      for (const char *Name : Required) {
        const Attribute *A = N.attr(Name);
        if (!A || A->graphs().empty())
          return err(formatv("node '{0}' ({1}) has no '{2}' graph attribute", N.Name,
                             N.OpType, Name));
      }
    }
    for (size_t J = 0; J < N.Inputs.size(); ++J) {
      Value *V = N.Inputs[J];
      if (V) {
        G.addUser(V, &N);
        continue;
      }
      llvm::StringRef In = NP ? NP->Inputs[J] : llvm::StringRef();
      if (In.empty())
        continue; // an omitted optional input: N.Inputs[J] stays null
      // Defined further down (a file not in topological order), or not here.
      V = G.lookupLocal(In);
      bool Local = V != nullptr;
      if (!V)
        V = G.lookup(In);
      if (!V)
        return err(formatv("node '{0}' ({1}) input {2} '{3}' is not produced "
                           "by any node, graph input or initializer",
                           N.Name, N.OpType, J, In));
      if (!Local && llvm::find(G.Captures, V) == G.Captures.end())
        G.Captures.push_back(V);
      N.Inputs[J] = V;
      G.addUser(V, &N);
    }
  }
  for (const auto &VI : GP.ValueInfos)
    if (Value *V = G.lookupLocal(VI.Name))
      if (V->Kind == ValueKind::Intermediate)
        if (Error E = importType(VI.Ty, *V))
          return E;
  for (const auto &VI : GP.Outputs) {
    Value *V = G.lookup(VI.Name);
    if (!V)
      return err(formatv("graph '{0}' output '{1}' is not produced by any node, "
                         "graph input or initializer",
                         G.Name, VI.Name));
    if (!V->Shp || V->Elem == DType::Undefined) {
      Value Declared;
      Declared.Name = V->Name;
      if (Error E = importType(VI.Ty, Declared))
        return E;
      if (!V->Shp)
        V->Shp = Declared.Shp;
      if (V->Elem == DType::Undefined)
        V->Elem = Declared.Elem;
      if (!V->Shp && V->Elem == DType::Undefined)
        V->NonTensor |= Declared.NonTensor;
    }
    V->IsGraphOutput = true;
    G.Outputs.push_back(V);
  }
  return sortTopologically(G);
}

/// Orders G's nodes so that every producer precedes its users, keeping the
/// file's order where it already is one. Iterative: a graph 100k nodes deep
/// cannot overflow the stack.
Error Importer::sortTopologically(Graph &G) {
  size_t N = G.Nodes.size();
  for (size_t I = 0; I < N; ++I)
    G.Nodes[I]->Index = I;
  // Local producers of a node's inputs, including values its subgraphs read.
  auto ForEachDep = [&](Node &Nd, auto &&F) {
    for (Value *V : Nd.Inputs)
      if (V && V->producer() && V->producer()->Parent == &G)
        F(V->producer());
    for (Graph *Sub : Nd.subgraphs())
      for (Value *V : Sub->Captures)
        if (V->producer() && V->producer()->Parent == &G)
          F(V->producer());
  };
  bool Sorted = true;
  for (size_t I = 0; I < N && Sorted; ++I)
    ForEachDep(*G.Nodes[I], [&](Node *P) {
      if (P->Index >= I)
        Sorted = false;
    });
  if (Sorted)
    return Error::success();

  std::vector<unsigned> InDegree(N, 0);
  std::vector<llvm::SmallVector<unsigned, 2>> Succ(N);
  for (size_t I = 0; I < N; ++I)
    ForEachDep(*G.Nodes[I], [&](Node *P) {
      ++InDegree[I];
      Succ[P->Index].push_back(I);
    });
  std::priority_queue<unsigned, std::vector<unsigned>, std::greater<unsigned>> Ready;
  for (size_t I = 0; I < N; ++I)
    if (!InDegree[I])
      Ready.push(I);
  std::vector<Node *> Order;
  Order.reserve(N);
  while (!Ready.empty()) {
    unsigned I = Ready.top();
    Ready.pop();
    for (unsigned S : Succ[I])
      if (--InDegree[S] == 0)
        Ready.push(S);
    Order.push_back(std::move(G.Nodes[I]));
  }
  if (Order.size() != N) {
    for (size_t I = 0; I < N; ++I)
      if (InDegree[I])
        return err(formatv("graph '{0}' has a cycle through node '{1}' ({2})",
                           G.Name, G.Nodes[I]->Name, G.Nodes[I]->OpType));
  }
  G.Nodes = std::move(Order);
  for (size_t I = 0; I < N; ++I)
    G.Nodes[I]->Index = I;
  return Error::success();
}

void Importer::reportMissingExternal() {
  for (const auto &[Location, FirstAndCount] : MissingExternal) {
    if (FirstAndCount.second == 1)
      Diags.warn(File, formatv("initializer '{0}': external data file '{1}' "
                               "not found; ridge needs only its shape",
                               FirstAndCount.first, Location));
    else
      Diags.warn(File, formatv("external data file '{0}' not found ({1} "
                               "initializers, the first '{2}'); ridge needs "
                               "only their shapes",
                               Location, FirstAndCount.second,
                               FirstAndCount.first));
  }
}

} // namespace

llvm::Expected<std::unique_ptr<Model>>
ridge::importModel(const wire::Model &Proto, llvm::StringRef File,
                   llvm::StringRef ModelDir, DiagnosticEngine &Diags) {
  auto M = std::make_unique<Model>();
  M->Path = File.str();
  M->IrVersion = Proto.IrVersion;
  M->Producer = Proto.ProducerName.str();
  if (!Proto.ProducerVersion.empty())
    M->Producer += " " + Proto.ProducerVersion.str();
  if (!llvm::json::isUTF8(M->Producer)) // shown only: made valid, not refused
    M->Producer = llvm::json::fixUTF8(M->Producer);
  if (!Proto.HasGraph)
    return fileError(File, "not an ONNX model: it has no graph");
  for (const auto &OS : Proto.Opsets) {
    std::string D = normalizeDomain(OS.Domain).str();
    if (OS.Version <= 0)
      return fileError(File, formatv("opset version {0} for domain '{1}' is "
                                     "invalid",
                                     OS.Version, D.empty() ? "ai.onnx" : D));
    if (D.empty() && OS.Version > MaxKnownOnnxOpset)
      return fileError(File, formatv("imports ai.onnx opset {0}, newer than any "
                                     "ridge knows (up to {1}); unknown opset",
                                     OS.Version, MaxKnownOnnxOpset));
    if (D.empty() && OS.Version > MaxInferableOnnxOpset)
      Diags.warn(File, formatv("ai.onnx opset {0} is newer than ONNX 1.12's "
                               "({1}): ops whose definition changed since may "
                               "get no inferred shapes",
                               OS.Version, MaxInferableOnnxOpset));
    M->Opsets[D] = OS.Version;
  }
  Importer I(*M, Proto.Opts, File, ModelDir, Diags);
  // Functions first: nodes of the main graph may call them.
  for (const auto &FP : Proto.Functions) {
    Function F;
    F.Domain = FP.Domain.str();
    F.Name = FP.Name.str();
    for (llvm::StringRef A : FP.AttributeNames)
      F.AttributeNames.push_back(A.str());
    F.Body = std::make_unique<Graph>();
    F.Body->Name = F.Domain + "." + F.Name;
    M->Functions.push_back(std::move(F));
  }
  for (size_t FI = 0; FI < M->Functions.size(); ++FI) {
    const wire::Function &FP = Proto.Functions[FI];
    std::map<std::string, int64_t> Opsets = M->Opsets;
    for (const auto &OS : FP.Opsets)
      Opsets[normalizeDomain(OS.Domain).str()] = OS.Version;
    if (Error E = I.importGraph(FP.Body, *M->Functions[FI].Body, Opsets))
      return E;
  }
  M->Main = std::make_unique<Graph>();
  if (Error E = I.importGraph(Proto.G, *M->Main, M->Opsets))
    return E;
  if (!I.badText().empty())
    return fileError(File, I.badText() + " (ONNX's names are protobuf strings, which must be "
                                       "UTF-8); refused");
  I.reportMissingExternal();
  // Every name is resolved: free the indexes until a pass asks for one.
  M->Main->releaseNameIndex();
  for (Function &F : M->Functions)
    F.Body->releaseNameIndex();
  return M;
}

llvm::Expected<std::unique_ptr<Model>>
ridge::importModel(const onnx::ModelProto &Proto, llvm::StringRef File,
                   llvm::StringRef ModelDir, DiagnosticEngine &Diags) {
  std::string Bytes = Proto.SerializeAsString(); // the decoded model refers into it
  wire::Model W;
  if (!wire::decodeModel(Bytes, W, wire::trustedDecode()))
    return fileError(File, "cannot decode the model protobuf serialized");
  return importModel(W, File, ModelDir, Diags);
}
