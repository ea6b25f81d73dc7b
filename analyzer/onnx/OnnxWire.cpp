//===- OnnxWire.cpp - ONNX messages decoded in place from the wire format -===//
//
// Field numbers are ONNX 1.12's onnx-ml.proto, the variant Debian's libonnx
// is built with (later versions are compatible).
// Each decodeX applies the fields of one serialized message to X, so a
// singular message given twice is merged by decoding both into one struct.
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/OnnxWire.h"
#include "analyzer/onnx/WireFormat.h"
#include <cstring>

using namespace ridge::wire;
using llvm::StringRef;

namespace {

using namespace ridge::wire::format;

/// Appends a repeated scalar field's value(s): one value, or a packed run.
/// Integers are read as protobuf reads their declared type (int32 keeps the
/// low 32 bits of the varint).
template <typename VecT> bool readVarints(FieldReader &F, unsigned Wire, VecT &Out) {
  using T = typename VecT::value_type;
  if (Wire == Varint) {
    uint64_t V;
    if (!F.varint(V))
      return false;
    Out.push_back(T(V));
    return true;
  }
  StringRef B;
  if (!F.bytes(B))
    return false;
  FieldReader Packed(B);
  while (!Packed.done()) {
    uint64_t V;
    if (!Packed.varint(V))
      return false;
    Out.push_back(T(V));
  }
  return true;
}
/// The same of a float or double field: one value of wire type ScalarWire,
/// or a packed run.
template <typename T>
bool readFixed(FieldReader &F, unsigned Wire, unsigned ScalarWire, std::vector<T> &Out) {
  if (Wire == ScalarWire) {
    T V;
    if (!F.fixed(V))
      return false;
    Out.push_back(V);
    return true;
  }
  StringRef B;
  if (!F.bytes(B) || B.size() % sizeof(T))
    return false;
  for (size_t I = 0; I < B.size(); I += sizeof(T)) {
    T V;
    std::memcpy(&V, B.data() + I, sizeof(T));
    Out.push_back(V);
  }
  return true;
}

/// What a field visitor did with a field: read it, leave it to be skipped
/// (an unknown field, or a known one of another wire type), or found it
/// malformed.
enum class Got { Read, Skip, Bad };

/// Calls Visit(F, Num, Wire) for each field of the message in B, skipping
/// what it leaves; false on malformed bytes.
template <typename VisitFn> bool eachField(StringRef B, VisitFn &&Visit) {
  FieldReader F(B);
  while (!F.done()) {
    uint64_t Num;
    unsigned W;
    if (!F.next(Num, W))
      return false;
    switch (Visit(F, Num, W)) {
    case Got::Read:
      break;
    case Got::Skip:
      if (!F.skip(W))
        return false;
      break;
    case Got::Bad:
      return false;
    }
  }
  return true;
}

Got ok(bool Read) { return Read ? Got::Read : Got::Bad; }

/// A varint field of wire type Varint read into Out (as protobuf reads its
/// declared type); any other wire type is an unknown field.
template <typename T> Got varintField(FieldReader &F, unsigned W, T &Out) {
  if (W != Varint)
    return Got::Skip;
  uint64_t V;
  if (!F.varint(V))
    return Got::Bad;
  Out = T(V);
  return Got::Read;
}

/// A length-delimited field: its bytes to Out.
Got bytesField(FieldReader &F, unsigned W, StringRef &Out) {
  return W != LengthDelim ? Got::Skip : ok(F.bytes(Out));
}

/// A message field: its bytes decoded by Decode(Sub).
template <typename DecodeFn> Got messageField(FieldReader &F, unsigned W, DecodeFn &&Decode) {
  StringRef Sub;
  if (W != LengthDelim)
    return Got::Skip;
  return ok(F.bytes(Sub) && Decode(Sub));
}

/// A repeated message field: a new element at the end of List, the field's
/// bytes decoded into it by Decode(Sub, Element).
template <typename ListT, typename DecodeFn>
Got appendField(FieldReader &F, unsigned W, ListT &List, DecodeFn &&Decode) {
  return messageField(F, W, [&](StringRef Sub) {
    List.emplace_back();
    return Decode(Sub, List.back());
  });
}

/// A repeated integer field, packed or not.
template <typename VecT> Got varintsField(FieldReader &F, unsigned W, VecT &Out) {
  return W != Varint && W != LengthDelim ? Got::Skip : ok(readVarints(F, W, Out));
}

class Decoder {
public:
  Decoder(const DecodeOptions &Opts, uint64_t &Skipped) : Opts(Opts), Skipped(Skipped) {}

  bool model(StringRef B, Model &M) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      switch (Num) {
      case 1: return varintField(F, W, M.IrVersion);
      case 2: return bytesField(F, W, M.ProducerName);
      case 3: return bytesField(F, W, M.ProducerVersion);
      case 7: // graph (merged when repeated)
        return messageField(F, W, [&](StringRef Sub) {
          M.HasGraph = true;
          return graph(Sub, M.G, 1);
        });
      case 8:
        return appendField(F, W, M.Opsets, opset);
      case 25: // functions: inlined on the protobuf path
        return appendField(F, W, M.Functions, [&](StringRef Sub, Function &Fn) {
          return !Opts.Strict && function(Sub, Fn, 1);
        });
      case 14: // metadata_props
      case 20: // training_info
        return W == LengthDelim && Opts.Strict ? Got::Bad : Got::Skip;
      }
      return Got::Skip;
    });
  }

  bool tensor(StringRef B, Tensor &T, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    // One pass: metadata now, payload fields noted and decoded at the end
    // if they total at most KeepPayloadBytes (the lean reader's rule).
    struct Payload {
      uint64_t Num;
      unsigned Wire;
      const uint8_t *At;
    };
    llvm::SmallVector<Payload, 4> Payloads;
    uint64_t PayloadBytes = 0;
    bool Ok = eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      if (ridge::isTensorPayloadField(Num)) {
        const uint8_t *At = F.pos();
        if (!F.skip(W))
          return Got::Bad;
        PayloadBytes += uint64_t(F.pos() - At);
        Payloads.push_back({Num, W, At});
        return Got::Read;
      }
      switch (Num) {
      case 1: return varintsField(F, W, T.Dims);
      case 2: return varintField(F, W, T.DataType);
      case 3: return messageField(F, W, [](StringRef Sub) { return segment(Sub); });
      case 8: return bytesField(F, W, T.Name);
      case 13: // external_data: the last "location" entry
        return messageField(F, W, [&](StringRef Sub) {
          StringRef Key, Value;
          if (!entry(Sub, Key, Value))
            return false;
          if (Key == "location")
            T.Location = Value;
          return true;
        });
      case 14: { // data_location (enum: DEFAULT, EXTERNAL)
        int32_t L = T.DataLocation;
        Got G = varintField(F, W, L);
        if (L == 0 || L == 1)
          T.DataLocation = L;
        return G;
      }
      }
      return Got::Skip;
    });
    if (!Ok)
      return false;
    if (PayloadBytes > Opts.KeepPayloadBytes) {
      Skipped += PayloadBytes;
      return true;
    }
    for (const Payload &Pl : Payloads) {
      FieldReader V(StringRef(reinterpret_cast<const char *>(Pl.At),
                         B.end() - reinterpret_cast<const char *>(Pl.At)));
      bool Read = true;
      switch (Pl.Num) {
      case 4:
        if (Pl.Wire == Fixed32 || Pl.Wire == LengthDelim)
          Read = readFixed(V, Pl.Wire, Fixed32, T.mutableLists().FloatData);
        break;
      case 5:
        if (Pl.Wire == Varint || Pl.Wire == LengthDelim)
          Read = readVarints(V, Pl.Wire, T.mutableLists().Int32Data);
        break;
      case 7:
        if (Pl.Wire == Varint || Pl.Wire == LengthDelim)
          Read = readVarints(V, Pl.Wire, T.mutableLists().Int64Data);
        break;
      case 9:
        if (Pl.Wire == LengthDelim) {
          Read = V.bytes(T.Raw);
          T.HasRaw = true;
        }
        break;
      case 10:
        if (Pl.Wire == Fixed64 || Pl.Wire == LengthDelim)
          Read = readFixed(V, Pl.Wire, Fixed64, T.mutableLists().DoubleData);
        break;
      case 11:
        if (Pl.Wire == Varint || Pl.Wire == LengthDelim)
          Read = readVarints(V, Pl.Wire, T.mutableLists().Uint64Data);
        break;
      default: // string_data: framing checked above, contents unused
        break;
      }
      if (!Read)
        return false;
    }
    return true;
  }

private:
  const DecodeOptions &Opts;
  uint64_t &Skipped;

  static bool opset(StringRef B, OpsetId &O) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      return Num == 1 ? bytesField(F, W, O.Domain)
             : Num == 2 ? varintField(F, W, O.Version)
                        : Got::Skip;
    });
  }

  /// StringStringEntryProto.
  static bool entry(StringRef B, StringRef &Key, StringRef &Value) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      return Num == 1 ? bytesField(F, W, Key) : Num == 2 ? bytesField(F, W, Value) : Got::Skip;
    });
  }

  /// TensorProto.Segment: its framing checked, nothing kept.
  static bool segment(StringRef B) {
    return eachField(B, [](FieldReader &, uint64_t, unsigned) { return Got::Skip; });
  }

  bool sparse(StringRef B, SparseTensor &S, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      if (Num == 1 || Num == 2)
        return messageField(F, W, [&](StringRef Sub) {
          return tensor(Sub, Num == 1 ? S.Values : S.Indices, Depth + 1);
        });
      return Num == 3 ? varintsField(F, W, S.Dims) : Got::Skip;
    });
  }

  static bool dimension(StringRef B, Dimension &D) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      // oneof value: the last member wins.
      if (Num == 1 && W == Varint) {
        D.K = Dimension::Kind::Value;
        D.Param = {};
        return varintField(F, W, D.Value);
      }
      if (Num == 2 && W == LengthDelim) {
        D.K = Dimension::Kind::Param;
        D.Value = 0;
        return bytesField(F, W, D.Param);
      }
      return Got::Skip;
    });
  }

  static bool tensorType(StringRef B, Type &T) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      if (Num == 1)
        return varintField(F, W, T.ElemType);
      if (Num == 2) // shape (merged when repeated)
        return messageField(F, W, [&](StringRef Sub) {
          T.HasShape = true;
          return eachField(Sub, [&](FieldReader &G, uint64_t N, unsigned X) {
            return N != 1 ? Got::Skip : appendField(G, X, T.Dims, dimension);
          });
        });
      return Got::Skip;
    });
  }

  bool type(StringRef B, Type &T) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      Type::Kind K = Num == 1   ? Type::Kind::Tensor
                     : Num == 4 ? Type::Kind::Sequence
                     : Num == 5 ? Type::Kind::Map
                     : Num == 9 ? Type::Kind::Optional
                     : Num == 8 ? Type::Kind::SparseTensor
                     : Num == 7 ? Type::Kind::Opaque
                                : Type::Kind::None;
      if (K == Type::Kind::None)
        return Got::Skip;
      return messageField(F, W, [&](StringRef Sub) {
        if (K != Type::Kind::Tensor && Opts.Strict)
          return false; // their contents are left to protobuf
        if (T.K != K) { // oneof: another member clears this one
          T = Type();
          T.K = K;
        }
        return K != Type::Kind::Tensor || tensorType(Sub, T);
      });
    });
  }

  bool valueInfo(StringRef B, ValueInfo &V) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      if (Num == 1)
        return bytesField(F, W, V.Name);
      if (Num == 2)
        return messageField(F, W, [&](StringRef Sub) { return type(Sub, V.Ty); });
      return Got::Skip;
    });
  }

  bool attribute(StringRef B, Attribute &A, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      switch (Num) {
      case 1: return bytesField(F, W, A.Name);
      case 2: // f
        if (W != Fixed32)
          return Got::Skip;
        A.HasF = true;
        return ok(F.fixed(A.F));
      case 3: { // i
        Got G = varintField(F, W, A.I);
        A.HasI |= G == Got::Read;
        return G;
      }
      case 4: { // s
        Got G = bytesField(F, W, A.S);
        A.HasS |= G == Got::Read;
        return G;
      }
      case 5: // t (merged when repeated)
        return messageField(F, W, [&](StringRef Sub) {
          A.HasT = true;
          return tensor(Sub, A.T, Depth + 1);
        });
      case 6: // g (merged when repeated)
        return messageField(F, W, [&](StringRef Sub) {
          A.HasG = true;
          if (!A.G)
            A.G = std::make_unique<Graph>();
          return graph(Sub, *A.G, Depth + 1);
        });
      case 7: // floats
        return W != Fixed32 && W != LengthDelim
                   ? Got::Skip
                   : ok(readFixed(F, W, Fixed32, A.Floats));
      case 8: return varintsField(F, W, A.Ints);
      case 9:
        return messageField(F, W, [&](StringRef Sub) {
          A.Strings.push_back(Sub);
          return true;
        });
      case 10:
        return appendField(F, W, A.Tensors, [&](StringRef Sub, Tensor &T) {
          return tensor(Sub, T, Depth + 1);
        });
      case 11:
        return appendField(F, W, A.Graphs, [&](StringRef Sub, Graph &G) {
          return graph(Sub, G, Depth + 1);
        });
      case 20: { // type (enum AttributeType: 0..14)
        int32_t Ty = A.Type;
        Got G = varintField(F, W, Ty);
        if (Ty >= 0 && Ty <= 14)
          A.Type = Ty;
        return G;
      }
      case 14: // tp
      case 15: // type_protos
      case 22: // sparse_tensor
      case 23: // sparse_tensors: their contents are left to protobuf
        return W == LengthDelim && Opts.Strict ? Got::Bad : Got::Skip;
      }
      return Got::Skip;
    });
  }

public:
  bool node(StringRef B, Node &N, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      switch (Num) {
      case 1:
      case 2:
        return messageField(F, W, [&](StringRef Sub) {
          if (Num == 1)
            N.Inputs.push_back(Sub);
          else
            N.Outputs.push_back(Sub);
          return true;
        });
      case 3: return bytesField(F, W, N.Name);
      case 4: return bytesField(F, W, N.OpType);
      case 7: return bytesField(F, W, N.Domain);
      case 5:
        return appendField(F, W, N.Attrs, [&](StringRef Sub, Attribute &A) {
          return attribute(Sub, A, Depth + 1);
        });
      }
      return Got::Skip;
    });
  }

private:
  /// A NodeProto of G: decoded to be checked (subgraphs and all), its bytes
  /// kept (decodeNode reads them again).
  Got nodeField(FieldReader &F, unsigned W, Graph &G, unsigned Depth) {
    return messageField(F, W, [&](StringRef Sub) {
      Node N;
      if (!node(Sub, N, Depth))
        return false;
      G.Nodes.push_back(Sub);
      G.NumNodeOutputs += N.Outputs.size();
      return true;
    });
  }

  bool graph(StringRef B, Graph &G, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    // Counted first, so that the lists are allocated once: grown by
    // doubling, a million nodes would be copied and leave freed blocks
    // of 100 MB and more behind.
    size_t NumNodes = 0, NumInits = 0;
    if (!eachField(B, [&](FieldReader &, uint64_t Num, unsigned W) {
          NumNodes += Num == 1 && W == LengthDelim;
          NumInits += Num == 5 && W == LengthDelim;
          return Got::Skip;
        }))
      return false;
    G.Nodes.reserve(G.Nodes.size() + NumNodes);
    G.Initializers.reserve(G.Initializers.size() + NumInits);
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      switch (Num) {
      case 1: return nodeField(F, W, G, Depth + 1);
      case 2: return bytesField(F, W, G.Name);
      case 5:
        return messageField(F, W, [&](StringRef Sub) {
          Tensor T;
          if (!tensor(Sub, T, Depth + 1))
            return false;
          G.Initializers.push_back(Sub);
          return true;
        });
      case 11:
      case 12:
      case 13:
        return appendField(F, W, Num == 11 ? G.Inputs : Num == 12 ? G.Outputs : G.ValueInfos,
                           [&](StringRef Sub, ValueInfo &V) { return valueInfo(Sub, V); });
      case 14: // quantization_annotation: checked by protobuf only
        return W == LengthDelim && Opts.Strict ? Got::Bad : Got::Skip;
      case 15: // sparse_initializer: left to protobuf in strict mode
        return appendField(F, W, G.SparseInitializers, [&](StringRef Sub, SparseTensor &S) {
          return !Opts.Strict && sparse(Sub, S, Depth + 1);
        });
      }
      return Got::Skip;
    });
  }

  bool function(StringRef B, Function &Fn, unsigned Depth) {
    return eachField(B, [&](FieldReader &F, uint64_t Num, unsigned W) {
      switch (Num) {
      case 1: return bytesField(F, W, Fn.Name);
      case 10: return bytesField(F, W, Fn.Domain);
      case 4:
      case 5:
      case 6:
        return messageField(F, W, [&](StringRef Sub) {
          if (Num == 6)
            Fn.AttributeNames.push_back(Sub);
          else
            (Num == 4 ? Fn.Body.Inputs : Fn.Body.Outputs).push_back({Sub, {}});
          return true;
        });
      case 7: return nodeField(F, W, Fn.Body, Depth + 1);
      case 9:
        return appendField(F, W, Fn.Opsets, opset);
      }
      return Got::Skip;
    });
  }
};

} // namespace

DecodeOptions ridge::wire::trustedDecode() {
  DecodeOptions Opts;
  Opts.Strict = false;
  Opts.MaxDepth = 100;
  return Opts;
}

bool ridge::wire::decodeModel(StringRef Bytes, Model &M, const DecodeOptions &Opts) {
  M.Opts = Opts;
  Decoder D(Opts, M.SkippedPayloadBytes);
  return D.model(Bytes, M);
}

bool ridge::wire::decodeTensor(StringRef Bytes, Tensor &T, const DecodeOptions &Opts) {
  uint64_t Skipped = 0;
  Decoder D(Opts, Skipped);
  return D.tensor(Bytes, T, 0);
}

bool ridge::wire::decodeInitializer(StringRef Bytes, Tensor &T, const DecodeOptions &Opts) {
  uint64_t Skipped = 0; // counted by the model's decode
  Decoder D(Opts, Skipped);
  T = Tensor();
  return D.tensor(Bytes, T, 0);
}

StringRef ridge::wire::initializerName(StringRef Bytes) {
  StringRef Name; // the last name field wins, as protobuf reads it
  eachField(Bytes, [&](FieldReader &F, uint64_t Num, unsigned W) {
    return Num == 8 ? bytesField(F, W, Name) : Got::Skip;
  });
  return Name;
}

bool ridge::wire::decodeNode(StringRef Bytes, Node &N, const DecodeOptions &Opts) {
  uint64_t Skipped = 0; // counted by the model's decode
  Decoder D(Opts, Skipped);
  N = Node();
  return D.node(Bytes, N, 0);
}
