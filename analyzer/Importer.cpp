//===- Importer.cpp - ONNX ModelProto to ridge IR -------------------------===//
#include "analyzer/Importer.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include <onnx/onnx_pb.h>
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

template <typename T> static T readLE(const std::string &Raw, size_t I) {
  T X;
  std::memcpy(&X, Raw.data() + I * sizeof(T), sizeof(T));
  return X;
}

/// Elements of T by its dims: -1 if a dim is negative, INT64_MAX past it
/// (dims come from the file: a product can overflow).
static int64_t numElems(const onnx::TensorProto &T) {
  int64_t N = 1;
  for (int64_t D : T.dims()) {
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
static bool fromRaw(const onnx::TensorProto &T, int64_t N, llvm::SmallVectorImpl<OutT> &Out,
                    ConvFn Conv) {
  if (!T.has_raw_data() || int64_t(T.raw_data().size()) != int64_t(sizeof(Raw)) * N)
    return false;
  for (int64_t I = 0; I < N; ++I)
    Out.push_back(Conv(readLE<Raw>(T.raw_data(), I)));
  return true;
}
template <typename Raw, typename OutT>
static bool fromRaw(const onnx::TensorProto &T, int64_t N, llvm::SmallVectorImpl<OutT> &Out) {
  return fromRaw<Raw>(T, N, Out, [](Raw X) { return OutT(X); });
}

/// A small integer tensor's elements (int and bool types).
bool ridge::smallTensorInts(const onnx::TensorProto &T, llvm::SmallVectorImpl<int64_t> &Out,
                            int64_t Max) {
  int64_t N = numElems(T);
  if (N < 0 || N > Max)
    return false;
  Out.clear();
  using TP = onnx::TensorProto;
  switch (T.data_type()) {
  case TP::INT64:
    if (!fromRaw<int64_t>(T, N, Out) && T.int64_data_size() == N)
      Out.assign(T.int64_data().begin(), T.int64_data().end());
    break;
  case TP::INT32:
    if (!fromRaw<int32_t>(T, N, Out) && T.int32_data_size() == N)
      Out.assign(T.int32_data().begin(), T.int32_data().end());
    break;
  case TP::INT8: case TP::UINT8: case TP::BOOL: case TP::INT16: case TP::UINT16: {
    bool Raw = T.data_type() == TP::INT8    ? fromRaw<int8_t>(T, N, Out)
               : T.data_type() == TP::INT16  ? fromRaw<int16_t>(T, N, Out)
               : T.data_type() == TP::UINT16 ? fromRaw<uint16_t>(T, N, Out)
                                             : fromRaw<uint8_t>(T, N, Out);
    if (!Raw && T.int32_data_size() == N)
      Out.assign(T.int32_data().begin(), T.int32_data().end());
    break;
  }
  case TP::UINT32: case TP::UINT64:
    if (!(T.data_type() == TP::UINT32 && fromRaw<uint32_t>(T, N, Out)) &&
        !fromRaw<uint64_t>(T, N, Out) && T.uint64_data_size() == N)
      Out.assign(T.uint64_data().begin(), T.uint64_data().end());
    break;
  default:
    return false;
  }
  return int64_t(Out.size()) == N;
}

/// A small floating-point tensor's elements.
bool ridge::smallTensorFloats(const onnx::TensorProto &T, llvm::SmallVectorImpl<double> &Out,
                              int64_t Max) {
  int64_t N = numElems(T);
  if (N < 0 || N > Max)
    return false;
  Out.clear();
  using TP = onnx::TensorProto;
  switch (T.data_type()) {
  case TP::FLOAT:
    if (!fromRaw<float>(T, N, Out) && T.float_data_size() == N)
      Out.assign(T.float_data().begin(), T.float_data().end());
    break;
  case TP::DOUBLE:
    if (!fromRaw<double>(T, N, Out) && T.double_data_size() == N)
      Out.assign(T.double_data().begin(), T.double_data().end());
    break;
  case TP::FLOAT16:
    if (!fromRaw<uint16_t>(T, N, Out, halfToFloat) && T.int32_data_size() == N)
      for (int32_t X : T.int32_data()) Out.push_back(halfToFloat(uint16_t(X)));
    break;
  default:
    return false;
  }
  return int64_t(Out.size()) == N;
}


namespace {

std::string normalizeDomain(const std::string &D) {
  return D == "ai.onnx" ? std::string() : D;
}

class Importer {
public:
  Importer(Model &M, llvm::StringRef File, llvm::StringRef ModelDir,
           DiagnosticEngine &Diags)
      : M(M), File(File), ModelDir(ModelDir), Diags(Diags) {}

  Error importGraph(const onnx::GraphProto &GP, Graph &G,
                    const std::map<std::string, int64_t> &Opsets);
  /// One warning per missing external file, not one per initializer (a
  /// generated model can have hundreds of thousands).
  void reportMissingExternal();

private:
  std::map<std::string, std::pair<std::string, size_t>> MissingExternal;
  enum class LocationCheck { Inside, Missing, Unresolvable, Outside };
  llvm::StringMap<LocationCheck> LocationChecks;
  Model &M;
  llvm::StringRef File;
  llvm::StringRef ModelDir;
  DiagnosticEngine &Diags;

  Error err(const llvm::Twine &Msg) { return fileError(File, Msg); }

  /// What names the tensor in errors (a Twine: built only for an error).
  Error importTensorMeta(const onnx::TensorProto &T, const llvm::Twine &What,
                         DType &Elem, llvm::SmallVectorImpl<int64_t> &Dims);
  Error importType(const onnx::TypeProto &T, Value &V);
  Error importInitializer(const onnx::TensorProto &T, Graph &G,
                          const llvm::SmallVectorImpl<int64_t> *SparseDims);
  Error checkExternalData(const onnx::TensorProto &T, InitializerInfo &Info);
  Error importAttribute(const onnx::AttributeProto &AP, Node &N, Graph &G,
                        const std::map<std::string, int64_t> &Opsets);
  Error sortTopologically(Graph &G);
};

Error Importer::importTensorMeta(const onnx::TensorProto &T,
                                 const llvm::Twine &What, DType &Elem,
                                 llvm::SmallVectorImpl<int64_t> &Dims) {
  auto D = dtypeFromOnnx(T.data_type());
  if (!D || *D == DType::Undefined)
    return err(formatv("{0} has unknown element type {1}", What.str(), T.data_type()));
  Elem = *D;
  for (int I = 0; I < T.dims_size(); ++I) {
    if (T.dims(I) < 0)
      return err(formatv("{0} has negative dim {1} at axis {2}", What.str(),
                         T.dims(I), I));
    Dims.push_back(T.dims(I));
  }
  return Error::success();
}

Error Importer::importType(const onnx::TypeProto &T, Value &V) {
  if (T.has_sequence_type() || T.has_map_type() || T.has_optional_type() ||
      T.has_sparse_tensor_type()) {
    V.NonTensor = true; // no dense tensor shape to know
    return Error::success();
  }
  if (!T.has_tensor_type())
    return Error::success(); // no type information: shape unknown
  const auto &TT = T.tensor_type();
  if (TT.elem_type() != 0) {
    auto D = dtypeFromOnnx(TT.elem_type());
    if (!D)
      return err(formatv("value '{0}' has unknown element type {1}", V.Name,
                         TT.elem_type()));
    V.Elem = *D;
  }
  if (!TT.has_shape())
    return Error::success();
  Shape S;
  for (int I = 0; I < TT.shape().dim_size(); ++I) {
    const auto &D = TT.shape().dim(I);
    if (D.has_dim_value()) {
      if (D.dim_value() < 0)
        return err(formatv("value '{0}' has negative dim {1} at axis {2}",
                           V.Name, D.dim_value(), I));
      S.Dims.push_back(Dim::known(D.dim_value()));
    } else {
      S.Dims.push_back(Dim::symbolic(D.dim_param()));
    }
  }
  V.Shp = std::move(S);
  return Error::success();
}

Error Importer::checkExternalData(const onnx::TensorProto &T,
                                  InitializerInfo &Info) {
  Info.External = true;
  for (const auto &KV : T.external_data())
    if (KV.key() == "location")
      Info.Location = KV.value();
  const std::string &Loc = Info.Location;
  auto Refuse = [&](llvm::StringRef Why) {
    return err(formatv("initializer '{0}': external data location '{1}' {2}; "
                       "refused",
                       T.name(), Loc, Why));
  };
  if (Loc.empty())
    return err(formatv("initializer '{0}' is external but names no location",
                       T.name()));
  if (llvm::sys::path::is_absolute(Loc) || Loc[0] == '/' || Loc[0] == '\\')
    return Refuse("is an absolute path");
  for (auto It = llvm::sys::path::begin(Loc), E = llvm::sys::path::end(Loc);
       It != E; ++It)
    if (*It == "..")
      return Refuse("escapes the model's directory with '..'");
  // The file system is asked once per location: a generated model can have
  // hundreds of thousands of initializers in one weights file.
  auto [It, New] = LocationChecks.try_emplace(Loc, LocationCheck::Inside);
  if (New) {
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
    const onnx::TensorProto &T, Graph &G,
    const llvm::SmallVectorImpl<int64_t> *SparseDims) {
  if (T.name().empty())
    return err("an initializer has no name");
  auto [V, Added] = G.tryAddValue(T.name(), ValueKind::Initializer);
  if (!Added)
    return err(formatv("initializer '{0}' is defined twice", T.name()));
  llvm::SmallVector<int64_t, 4> Dims;
  if (Error E = importTensorMeta(T, "initializer '" + llvm::Twine(T.name()) + "'",
                                 V->Elem, Dims))
    return E;
  if (SparseDims)
    Dims.assign(SparseDims->begin(), SparseDims->end());
  V->Shp.emplace();
  for (int64_t D : Dims)
    V->Shp->Dims.push_back(Dim::known(D));
  V->Init.emplace();
  if (T.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    if (Error E = checkExternalData(T, *V->Init))
      return E;
  if (V->Init->LocationMissing) {
    auto &Seen = MissingExternal[V->Init->Location];
    if (Seen.first.empty())
      Seen.first = T.name();
    ++Seen.second;
  }
  // Keep small integer contents (shape vectors, axes, empty lists too) for
  // the shape rules.
  llvm::SmallVector<int64_t, 8> Ints;
  if (smallTensorInts(T, Ints))
    V->IntData.emplace(Ints.begin(), Ints.end());
  G.Initializers.push_back(V);
  return Error::success();
}

Attribute::Kind attributeKind(const onnx::AttributeProto &A) {
  using K = Attribute::Kind;
  if (A.type() != onnx::AttributeProto_AttributeType_UNDEFINED)
    return static_cast<K>(A.type()); // same numbering as onnx.proto
  // Old exporters leave the type unset: infer it from the field present.
  if (A.has_f()) return K::Float;
  if (A.has_i()) return K::Int;
  if (A.has_s()) return K::String;
  if (A.has_t()) return K::Tensor;
  if (A.has_g()) return K::Graph;
  if (A.floats_size()) return K::Floats;
  if (A.ints_size()) return K::Ints;
  if (A.strings_size()) return K::Strings;
  if (A.tensors_size()) return K::Tensors;
  if (A.graphs_size()) return K::Graphs;
  return K::Undefined;
}

Error Importer::importAttribute(const onnx::AttributeProto &AP, Node &N,
                                Graph &G,
                                const std::map<std::string, int64_t> &Opsets) {
  Attribute A;
  A.Name = AP.name();
  A.K = attributeKind(AP);
  using K = Attribute::Kind;
  auto ImportSub = [&](const onnx::GraphProto &SP) -> Error {
    auto Sub = std::make_unique<Graph>();
    Sub->Parent = &G;
    Sub->ParentNode = &N;
    Sub->Name = SP.name().empty() ? N.Name + "." + A.Name : SP.name();
    if (Error E = importGraph(SP, *Sub, Opsets))
      return E;
    // What the subgraph reads from outside it, the node reads too.
    for (Value *C : Sub->Captures)
      if (!G.lookupLocal(C->Name) || G.lookupLocal(C->Name) != C)
        if (llvm::find(G.Captures, C) == G.Captures.end())
          G.Captures.push_back(C);
    A.Graphs.push_back(std::move(Sub));
    return Error::success();
  };
  switch (A.K) {
  case K::Float: A.F = AP.f(); break;
  case K::Int: A.I = AP.i(); break;
  case K::String: A.S = AP.s(); break;
  case K::Floats: A.Floats.assign(AP.floats().begin(), AP.floats().end()); break;
  case K::Ints: A.Ints.assign(AP.ints().begin(), AP.ints().end()); break;
  case K::Strings: A.Strings.assign(AP.strings().begin(), AP.strings().end()); break;
  case K::Tensor: {
    if (Error E = importTensorMeta(
            AP.t(), "attribute '" + llvm::Twine(A.Name) + "' of node '" + N.Name + "'",
            A.TensorElem, A.TensorDims))
      return E;
    // Small payloads (a Constant's shape vector or scale) feed shape rules.
    llvm::SmallVector<int64_t, 8> Ints;
    llvm::SmallVector<double, 8> Floats;
    if (smallTensorInts(AP.t(), Ints))
      A.Ints.assign(Ints.begin(), Ints.end());
    else if (smallTensorFloats(AP.t(), Floats))
      A.Floats.assign(Floats.begin(), Floats.end());
    break;
  }
  case K::Graph:
    if (Error E = ImportSub(AP.g()))
      return E;
    break;
  case K::Graphs:
    for (const auto &SP : AP.graphs())
      if (Error E = ImportSub(SP))
        return E;
    break;
  default:
    break;
  }
  N.Attrs.push_back(std::move(A));
  return Error::success();
}

Error Importer::importGraph(const onnx::GraphProto &GP, Graph &G,
                            const std::map<std::string, int64_t> &Opsets) {
  if (G.Name.empty())
    G.Name = GP.name().empty() ? "main" : GP.name();
  G.reserveValues(GP.initializer_size() + GP.input_size() + 2 * GP.node_size());
  for (const auto &T : GP.initializer())
    if (Error E = importInitializer(T, G, nullptr))
      return E;
  for (const auto &ST : GP.sparse_initializer()) {
    llvm::SmallVector<int64_t, 4> Dims(ST.dims().begin(), ST.dims().end());
    if (Error E = importInitializer(ST.values(), G, &Dims))
      return E;
  }
  for (const auto &VI : GP.input()) {
    if (VI.name().empty())
      return err(formatv("graph '{0}' has an input with no name", G.Name));
    Value *V = G.lookupLocal(VI.name());
    if (!V)
      V = G.addValue(VI.name(), ValueKind::GraphInput);
    else if (llvm::find(G.Inputs, V) != G.Inputs.end())
      return err(formatv("graph '{0}' lists input '{1}' twice", G.Name, VI.name()));
    if (!V->isInitializer())
      if (Error E = importType(VI.type(), *V))
        return E;
    G.Inputs.push_back(V);
  }

  // Pass 1: nodes and the values they define.
  G.Nodes.reserve(GP.node_size());
  for (int I = 0; I < GP.node_size(); ++I) {
    const auto &NP = GP.node(I);
    auto N = std::make_unique<Node>();
    N->OpType = NP.op_type();
    N->Domain = normalizeDomain(NP.domain());
    // Unnamed nodes: "<OpType>_<index>" in the main graph (and function
    // bodies); "<graph name>/<OpType>_<index>" inside subgraphs, so that
    // rows of different bodies cannot be confused.
    if (NP.name().empty())
      N->Name = G.Parent ? formatv("{0}/{1}_{2}", G.Name, NP.op_type(), I).str()
                         : formatv("{0}_{1}", NP.op_type(), I).str();
    else
      N->Name = NP.name();
    N->Parent = &G;
    if (N->OpType.empty())
      return err(formatv("node '{0}' has no op_type", N->Name));
    auto OS = Opsets.find(N->Domain);
    if (OS != Opsets.end())
      N->OpsetVersion = OS->second;
    else if (!M.findFunction(NP.domain(), NP.op_type()))
      return err(formatv("node '{0}' ({1}) uses domain '{2}', which the model "
                         "does not import (unknown domain)",
                         N->Name, N->OpType, N->domainName()));
    for (const auto &Out : NP.output()) {
      if (Out.empty()) {
        N->Outputs.push_back(nullptr);
        continue;
      }
      auto [V, Added] = G.tryAddValue(Out, ValueKind::Intermediate);
      if (!Added) {
        Value *Old = V;
        std::string By = Old->Producer ? "node '" + Old->Producer->Name + "'"
                         : Old->isInitializer() ? std::string("an initializer")
                                                : std::string("a graph input");
        return err(formatv("value '{0}' is defined twice: by {1} and by node "
                           "'{2}'",
                           Out, By, N->Name));
      }
      V->Producer = N.get();
      N->Outputs.push_back(V);
    }
    G.Nodes.push_back(std::move(N));
  }
  // Pass 2: attributes (subgraphs may read any value defined above) and inputs.
  for (int I = 0; I < GP.node_size(); ++I) {
    const auto &NP = GP.node(I);
    Node &N = *G.Nodes[I];
    for (const auto &AP : NP.attribute())
      if (Error E = importAttribute(AP, N, G, Opsets))
        return E;
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
        if (!A || A->Graphs.empty())
          return err(formatv("node '{0}' ({1}) has no '{2}' graph attribute", N.Name,
                             N.OpType, Name));
      }
    }
    for (int J = 0; J < NP.input_size(); ++J) {
      const std::string &In = NP.input(J);
      if (In.empty()) {
        N.Inputs.push_back(nullptr);
        continue;
      }
      // One lookup in the common case: the value is defined in this graph.
      Value *V = G.lookupLocal(In);
      bool Local = V != nullptr;
      if (!V)
        V = G.lookup(In);
      if (!V)
        return err(formatv("node '{0}' ({1}) input {2} '{3}' is not produced "
                           "by any node, graph input or initializer",
                           N.Name, N.OpType, J, In));
      if (!Local && llvm::find(G.Captures, V) == G.Captures.end())
        G.Captures.push_back(V);
      N.Inputs.push_back(V);
      V->Users.push_back(&N);
    }
  }
  for (const auto &VI : GP.value_info())
    if (Value *V = G.lookupLocal(VI.name()))
      if (V->Kind == ValueKind::Intermediate)
        if (Error E = importType(VI.type(), *V))
          return E;
  for (const auto &VI : GP.output()) {
    Value *V = G.lookup(VI.name());
    if (!V)
      return err(formatv("graph '{0}' output '{1}' is not produced by any node, "
                         "graph input or initializer",
                         G.Name, VI.name()));
    if (!V->Shp || V->Elem == DType::Undefined) {
      Value Declared;
      Declared.Name = V->Name;
      if (Error E = importType(VI.type(), Declared))
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
      if (V && V->Producer && V->Producer->Parent == &G)
        F(V->Producer);
    for (Graph *Sub : Nd.subgraphs())
      for (Value *V : Sub->Captures)
        if (V->Producer && V->Producer->Parent == &G)
          F(V->Producer);
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
  std::vector<std::unique_ptr<Node>> Order;
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
ridge::importModel(const onnx::ModelProto &Proto, llvm::StringRef File,
                   llvm::StringRef ModelDir, DiagnosticEngine &Diags) {
  auto M = std::make_unique<Model>();
  M->Path = File.str();
  M->IrVersion = Proto.ir_version();
  M->Producer = Proto.producer_name();
  if (!Proto.producer_version().empty())
    M->Producer += " " + Proto.producer_version();
  if (!Proto.has_graph())
    return fileError(File, "not an ONNX model: it has no graph");
  for (const auto &OS : Proto.opset_import()) {
    std::string D = normalizeDomain(OS.domain());
    if (OS.version() <= 0)
      return fileError(File, formatv("opset version {0} for domain '{1}' is "
                                     "invalid",
                                     OS.version(), D.empty() ? "ai.onnx" : D));
    if (D.empty() && OS.version() > MaxKnownOnnxOpset)
      return fileError(File, formatv("imports ai.onnx opset {0}, newer than any "
                                     "ridge knows (up to {1}); unknown opset",
                                     OS.version(), MaxKnownOnnxOpset));
    if (D.empty() && OS.version() > MaxInferableOnnxOpset)
      Diags.warn(File, formatv("ai.onnx opset {0} is newer than ONNX 1.12's "
                               "({1}): ops whose definition changed since may "
                               "get no inferred shapes",
                               OS.version(), MaxInferableOnnxOpset));
    M->Opsets[D] = OS.version();
  }
  Importer I(*M, File, ModelDir, Diags);
  // Functions first: nodes of the main graph may call them.
  for (const auto &FP : Proto.functions()) {
    Function F;
    F.Domain = FP.domain();
    F.Name = FP.name();
    F.AttributeNames.assign(FP.attribute().begin(), FP.attribute().end());
    F.Body = std::make_unique<Graph>();
    F.Body->Name = F.Domain + "." + F.Name;
    M->Functions.push_back(std::move(F));
  }
  for (size_t FI = 0; FI < M->Functions.size(); ++FI) {
    const auto &FP = Proto.functions(FI);
    onnx::GraphProto Body;
    for (const auto &In : FP.input())
      Body.add_input()->set_name(In);
    for (const auto &Out : FP.output())
      Body.add_output()->set_name(Out);
    *Body.mutable_node() = FP.node();
    std::map<std::string, int64_t> Opsets = M->Opsets;
    for (const auto &OS : FP.opset_import())
      Opsets[normalizeDomain(OS.domain())] = OS.version();
    if (Error E = I.importGraph(Body, *M->Functions[FI].Body, Opsets))
      return E;
  }
  M->Main = std::make_unique<Graph>();
  if (Error E = I.importGraph(Proto.graph(), *M->Main, M->Opsets))
    return E;
  I.reportMissingExternal();
  return M;
}
