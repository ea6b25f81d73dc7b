//===- AnnotatedModel.cpp - Write a model back with ridge's findings ------===//
//
// The input is walked field by field (FieldReader): the model's fields are
// copied except its graph and the metadata entries this tool wrote before;
// the graph's except its nodes (copied with their props replaced), its
// value_info of the values annotated, and the outputs retyped. The result
// is a list of pieces, built bytes or slices of the input, whose sizes are
// known before anything is written: the graph's length prefix needs them.
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/AnnotatedModel.h"
#include "analyzer/Diagnostics.h"
#include "analyzer/onnx/Loader.h"
#include "analyzer/onnx/WireFormat.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace ridge;
using namespace ridge::wire::format;
using llvm::Error;

namespace {

/// Field numbers of onnx.proto (ONNX 1.16 for NodeProto.metadata_props).
namespace fields {
constexpr uint64_t ModelGraph = 7, ModelMetadata = 14;
constexpr uint64_t GraphNode = 1, GraphOutput = 12, GraphValueInfo = 13;
constexpr uint64_t NodeOutput = 2, NodeName = 3, NodeOpType = 4, NodeDomain = 7,
                   NodeMetadata = 9;
constexpr uint64_t ValueInfoName = 1, ValueInfoType = 2;
constexpr uint64_t EntryKey = 1, EntryValue = 2;
constexpr uint64_t TypeTensor = 1, TensorElemType = 1, TensorShape = 2, ShapeDim = 1;
constexpr uint64_t DimValue = 1, DimParam = 2;
} // namespace fields

/// Slices of the input at least this long are streamed from the file in
/// chunks of this size instead of being read through the mapping.
constexpr size_t StreamBytes = size_t(1) << 20;

/// The output as a list of pieces, each bytes built here or a slice of the
/// input copied when written. Adjacent slices merge.
class Pieces {
public:
  void own(std::string S) {
    Size += S.size();
    List.push_back({StringRef(), std::move(S)});
  }
  void copy(StringRef Slice) {
    Size += Slice.size();
    Copied += Slice.size();
    if (!List.empty() && List.back().Owned.empty() && !List.back().Slice.empty() &&
        List.back().Slice.end() == Slice.begin()) {
      StringRef &Last = List.back().Slice;
      Last = StringRef(Last.data(), Last.size() + Slice.size());
      return;
    }
    List.push_back({Slice, {}});
  }
  void append(Pieces &&O) {
    Size += O.Size;
    Copied += O.Copied;
    for (Piece &P : O.List)
      List.push_back(std::move(P));
    O.List.clear();
  }
  uint64_t size() const { return Size; }
  uint64_t copied() const { return Copied; }

  /// Writes every piece to OS: slices of Input at least StreamBytes long
  /// read from the file FD (when it is one) in chunks, the rest as they are.
  Error write(llvm::raw_ostream &OS, StringRef Input, std::optional<llvm::sys::fs::file_t> FD,
              StringRef InPath) const {
    std::vector<char> Chunk;
    for (const Piece &P : List) {
      if (!P.Owned.empty() || P.Slice.size() < StreamBytes || !FD) {
        OS << (P.Owned.empty() ? P.Slice : StringRef(P.Owned));
        continue;
      }
      Chunk.resize(StreamBytes);
      uint64_t Offset = P.Slice.data() - Input.data();
      for (uint64_t Done = 0; Done < P.Slice.size();) {
        size_t Want = std::min<uint64_t>(StreamBytes, P.Slice.size() - Done);
        auto Got = llvm::sys::fs::readNativeFileSlice(
            *FD, llvm::MutableArrayRef<char>(Chunk.data(), Want), Offset + Done);
        if (!Got)
          return fileError(InPath, "cannot read: " + llvm::toString(Got.takeError()));
        if (*Got == 0)
          return fileError(InPath, "the file shrank while it was copied");
        OS.write(Chunk.data(), *Got);
        Done += *Got;
      }
    }
    return Error::success();
  }

private:
  struct Piece {
    StringRef Slice;
    std::string Owned;
  };
  std::vector<Piece> List;
  uint64_t Size = 0, Copied = 0;
};

/// The first length-delimited field Num of Message (its contents), if any.
std::optional<StringRef> firstString(StringRef Message, uint64_t Num) {
  FieldReader F(Message);
  uint64_t N;
  unsigned Wire;
  StringRef Raw, Sub;
  while (!F.done() && F.nextField(N, Wire, Raw, Sub))
    if (N == Num && Wire == LengthDelim)
      return Sub;
  return std::nullopt;
}

void appendProps(std::string &Out, uint64_t Field, const Props &P) {
  for (const auto &[Key, Value] : P) {
    std::string Entry;
    appendBytes(Entry, fields::EntryKey, Key);
    appendBytes(Entry, fields::EntryValue, Value);
    appendBytes(Out, Field, Entry);
  }
}

/// TypeProto{tensor_type{elem_type, shape{dim...}}}.
std::string encodeType(const AnnotatedType &T) {
  std::string Shape;
  for (const AnnotatedType::Dim &D : T.Dims) {
    std::string Dim;
    if (D.Value >= 0)
      appendVarintField(Dim, fields::DimValue, uint64_t(D.Value));
    else if (!D.Param.empty())
      appendBytes(Dim, fields::DimParam, D.Param);
    appendBytes(Shape, fields::ShapeDim, Dim);
  }
  std::string Tensor;
  appendVarintField(Tensor, fields::TensorElemType, uint64_t(uint32_t(T.ElemType)));
  appendBytes(Tensor, fields::TensorShape, Shape);
  std::string Type;
  appendBytes(Type, fields::TypeTensor, Tensor);
  return Type;
}

class Rewriter {
public:
  Rewriter(const ModelAnnotations &A, StringRef InPath) : A(A), InPath(InPath) {
    for (const auto &[Name, T] : A.ValueInfos)
      Annotated.insert(Name);
  }

  /// The ModelProto in Bytes, rewritten.
  llvm::Expected<Pieces> model(StringRef Bytes) {
    Pieces Out;
    unsigned Graphs = 0, NumGraphs = countGraphs(Bytes);
    FieldReader F(Bytes);
    uint64_t Num;
    unsigned Wire;
    StringRef Raw, Sub;
    while (!F.done()) {
      uint64_t At = F.pos() - reinterpret_cast<const uint8_t *>(Bytes.data());
      if (!F.nextField(Num, Wire, Raw, Sub))
        return malformed(At);
      if (Wire == LengthDelim && Num == fields::ModelMetadata) {
        if (!isOurs(Sub))
          Out.copy(Raw);
      } else if (Wire == LengthDelim && Num == fields::ModelGraph) {
        // Protobuf merges a graph given twice (its repeated fields
        // concatenated): each is rewritten in place, the value_info added to
        // the last, so that the merge reads as one annotated graph.
        auto G = graph(Sub, ++Graphs == NumGraphs);
        if (!G)
          return G.takeError();
        std::string Prefix;
        appendKey(Prefix, fields::ModelGraph, LengthDelim);
        appendVarint(Prefix, G->size());
        Out.own(std::move(Prefix));
        Out.append(std::move(*G));
      } else {
        Out.copy(Raw);
      }
    }
    if (!Graphs)
      return fileError(InPath, "not an ONNX model: it has no graph");
    std::string Meta;
    appendProps(Meta, fields::ModelMetadata, A.ModelProps);
    Out.own(std::move(Meta));
    return Out;
  }

  AnnotateStats Stats;

private:
  size_t NodeIndex = 0; ///< across graph fields, as protobuf's merge counts
  const ModelAnnotations &A;
  StringRef InPath;
  llvm::StringSet<> Annotated;

  Error malformed(uint64_t Offset) {
    return fileError(InPath, llvm::formatv("--annotate: not a valid ONNX protobuf (malformed "
                                           "field at byte {0})",
                                           Offset));
  }

  /// A metadata entry whose key this tool wrote.
  bool isOurs(StringRef Entry) const {
    std::optional<StringRef> Key = firstString(Entry, fields::EntryKey);
    return Key && Key->starts_with(A.Prefix);
  }

  /// The model's graph fields (framing checked by model()).
  static unsigned countGraphs(StringRef Bytes) {
    unsigned N = 0;
    FieldReader F(Bytes);
    uint64_t Num;
    unsigned Wire;
    StringRef Raw, Sub;
    while (!F.done() && F.nextField(Num, Wire, Raw, Sub))
      N += Num == fields::ModelGraph && Wire == LengthDelim;
    return N;
  }

  /// A graph field's contents rewritten; Last: the value_info goes here.
  llvm::Expected<Pieces> graph(StringRef Bytes, bool Last) {
    Pieces Out;
    FieldReader F(Bytes);
    uint64_t Num;
    unsigned Wire;
    StringRef Raw, Sub;
    while (!F.done()) {
      if (!F.nextField(Num, Wire, Raw, Sub))
        return fileError(InPath, "--annotate: the graph is not valid protobuf");
      if (Wire == LengthDelim && Num == fields::GraphNode) {
        Out.own(node(Sub, NodeIndex++));
        continue;
      }
      if (Wire != LengthDelim || (Num != fields::GraphOutput && Num != fields::GraphValueInfo)) {
        Out.copy(Raw);
        continue;
      }
      std::optional<StringRef> Name = firstString(Sub, fields::ValueInfoName);
      if (Num == fields::GraphValueInfo) {
        if (!Name || !Annotated.contains(*Name))
          Out.copy(Raw);
        continue;
      }
      auto It = Name ? A.OutputTypes.find(*Name) : A.OutputTypes.end();
      if (It == A.OutputTypes.end())
        Out.copy(Raw);
      else
        Out.own(retyped(Sub, It->second));
    }
    if (!Last)
      return Out;
    std::string Infos;
    for (const auto &[Name, T] : A.ValueInfos) {
      std::string VI;
      appendBytes(VI, fields::ValueInfoName, Name);
      appendBytes(VI, fields::ValueInfoType, encodeType(T));
      appendBytes(Infos, fields::GraphValueInfo, VI);
    }
    Out.own(std::move(Infos));
    return Out;
  }

  /// A NodeProto field with its props replaced by the ones for its first
  /// output (or its name; for a function call, its body's).
  std::string node(StringRef Bytes, size_t Index) {
    std::string Body;
    std::optional<StringRef> FirstOutput, Name;
    StringRef OpType, Domain;
    FieldReader F(Bytes);
    uint64_t Num;
    unsigned Wire;
    StringRef Raw, Sub;
    // The graph walk checked the framing; a bad field ends the node.
    while (!F.done() && F.nextField(Num, Wire, Raw, Sub)) {
      bool Str = Wire == LengthDelim;
      if (Str && Num == fields::NodeOutput && !FirstOutput)
        FirstOutput = Sub;
      if (Str && Num == fields::NodeName)
        Name = Sub;
      if (Str && Num == fields::NodeOpType)
        OpType = Sub;
      if (Str && Num == fields::NodeDomain)
        Domain = Sub;
      if (Str && Num == fields::NodeMetadata && isOurs(Sub))
        continue;
      Body += Raw;
    }
    std::string Key = FirstOutput ? FirstOutput->str() : "name:" + (Name ? Name->str() : "");
    if (A.FunctionOps.contains((Domain + "\x1f" + OpType).str()))
      Key = "call:" +
            (Name && !Name->empty() ? Name->str() : OpType.str() + "_" + std::to_string(Index)) +
            "/";
    auto It = A.NodeProps.find(Key);
    if (It != A.NodeProps.end()) {
      appendProps(Body, fields::NodeMetadata, It->second);
      ++Stats.NodesAnnotated;
    } else {
      ++Stats.NodesNotFound;
    }
    std::string Out;
    appendBytes(Out, fields::GraphNode, Body);
    return Out;
  }

  /// A graph output (ValueInfoProto field) with its type replaced.
  std::string retyped(StringRef Bytes, const AnnotatedType &T) {
    std::string Body;
    FieldReader F(Bytes);
    uint64_t Num;
    unsigned Wire;
    StringRef Raw, Sub;
    while (!F.done() && F.nextField(Num, Wire, Raw, Sub))
      if (!(Num == fields::ValueInfoType && Wire == LengthDelim))
        Body += Raw;
    appendBytes(Body, fields::ValueInfoType, encodeType(T));
    std::string Out;
    appendBytes(Out, fields::GraphOutput, Body);
    return Out;
  }
};

} // namespace

Error ridge::checkAnnotateTarget(StringRef InPath, StringRef OutPath) {
  if (InPath == "-")
    return usageError("--annotate: the model must be read from a file, not stdin (the "
                      "annotated copy is written from the file's own bytes)");
  bool Same = false;
  if (!llvm::sys::fs::equivalent(InPath, OutPath, Same) && Same)
    return fileError(OutPath, "--annotate would overwrite its input; write to another file");
  return Error::success();
}

llvm::Expected<AnnotateStats> ridge::writeAnnotatedModel(StringRef InPath, StringRef OutPath,
                                                         const ModelAnnotations &A) {
  if (Error E = checkAnnotateTarget(InPath, OutPath))
    return E;
  auto Buf = llvm::MemoryBuffer::getFile(InPath, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!Buf)
    return fileError(InPath, Buf.getError().message());
  std::string Serialized;
  bool Binary = true;
  if (Error E = modelAsBinary(InPath, (*Buf)->getBuffer(), Serialized, Binary))
    return E;
  StringRef Input = Binary ? (*Buf)->getBuffer() : StringRef(Serialized);
  std::optional<Rewriter> R(std::in_place, A, InPath);
  auto Out = R->model(Input);
  if (!Out && Binary) {
    // Framing protobuf reads but the field reader does not (a key past 32
    // bits): rewrite what protobuf parses of it instead.
    llvm::consumeError(Out.takeError());
    if (Error E = reserializeModel(InPath, Input, Serialized))
      return E;
    Binary = false;
    Input = Serialized;
    R.emplace(A, InPath);
    Out = R->model(Input);
  }
  if (!Out)
    return Out.takeError();

  std::optional<llvm::sys::fs::file_t> InFD;
  if (Binary) {
    auto FD = llvm::sys::fs::openNativeFileForRead(InPath);
    if (!FD)
      return fileError(InPath, llvm::toString(FD.takeError()));
    InFD = *FD;
  }
  auto CloseInput = llvm::make_scope_exit([&] {
    if (InFD)
      llvm::sys::fs::closeFile(*InFD);
  });
  int TmpFD;
  llvm::SmallString<256> Tmp;
  if (std::error_code EC =
          llvm::sys::fs::createUniqueFile(OutPath + ".tmp-%%%%%%", TmpFD, Tmp))
    return fileError(OutPath, "cannot write: " + EC.message());
  auto Discard = [&](Error E) -> Error {
    llvm::sys::fs::remove(Tmp);
    return E;
  };
  {
    llvm::raw_fd_ostream OS(TmpFD, /*shouldClose=*/true);
    if (Error E = Out->write(OS, Input, InFD, InPath))
      return Discard(std::move(E));
    OS.close();
    if (OS.has_error()) {
      std::string Why = OS.error().message();
      OS.clear_error();
      return Discard(fileError(OutPath, "write failed: " + Why));
    }
  }
  if (std::error_code EC = llvm::sys::fs::rename(Tmp, OutPath))
    return Discard(fileError(OutPath, "cannot write: " + EC.message()));
  R->Stats.BytesCopied = Out->copied();
  return R->Stats;
}
