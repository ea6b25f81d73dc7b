//===- OnnxWire.cpp - ONNX messages decoded in place from the wire format -===//
//
// Field numbers are ONNX 1.12's onnx.proto (later versions are compatible).
// Each decodeX applies the fields of one serialized message to X, so a
// singular message given twice is merged by decoding both into one struct.
//
//===----------------------------------------------------------------------===//
#include "analyzer/OnnxWire.h"
#include <cstring>

using namespace ridge::wire;
using llvm::StringRef;

namespace {

enum WireType : unsigned { Varint = 0, Fixed64 = 1, LengthDelim = 2, Fixed32 = 5 };

/// Reads the fields of one message.
class Fields {
public:
  explicit Fields(StringRef B)
      : P(reinterpret_cast<const uint8_t *>(B.data())), End(P + B.size()) {}

  bool done() const { return P >= End; }

  /// The next field's number and wire type; false on a malformed key, field
  /// number 0, or a wire type protobuf's ONNX messages never use (groups).
  bool next(uint64_t &Num, unsigned &Wire) {
    uint64_t Key;
    if (!varint(Key))
      return false;
    Num = Key >> 3;
    Wire = unsigned(Key & 7);
    return Num != 0 && Num <= 0x1fffffff &&
           (Wire == Varint || Wire == Fixed64 || Wire == LengthDelim || Wire == Fixed32);
  }
  bool varint(uint64_t &V) {
    V = 0;
    for (unsigned Shift = 0; Shift < 64; Shift += 7) {
      if (P >= End)
        return false;
      uint8_t B = *P++;
      V |= uint64_t(B & 0x7f) << Shift;
      if (!(B & 0x80))
        return true;
    }
    return false;
  }
  bool bytes(StringRef &Out) {
    uint64_t Len;
    if (!varint(Len) || Len > uint64_t(End - P))
      return false;
    Out = StringRef(reinterpret_cast<const char *>(P), Len);
    P += Len;
    return true;
  }
  template <typename T> bool fixed(T &Out) {
    if (uint64_t(End - P) < sizeof(T))
      return false;
    std::memcpy(&Out, P, sizeof(T));
    P += sizeof(T);
    return true;
  }
  /// Skips a value of the given wire type (its framing checked).
  bool skip(unsigned Wire) {
    uint64_t V;
    StringRef B;
    switch (Wire) {
    case Varint: return varint(V);
    case Fixed64: return advance(8);
    case Fixed32: return advance(4);
    case LengthDelim: return bytes(B);
    }
    return false;
  }
  /// Where the next value starts (for counting payload bytes).
  const uint8_t *pos() const { return P; }

private:
  const uint8_t *P, *End;
  bool advance(uint64_t N) {
    if (N > uint64_t(End - P))
      return false;
    P += N;
    return true;
  }
};

/// Appends a repeated scalar field's value(s): one value, or a packed run.
/// Integers are read as protobuf reads their declared type (int32 keeps the
/// low 32 bits of the varint).
template <typename T> bool readVarints(Fields &F, unsigned Wire, std::vector<T> &Out) {
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
  Fields Packed(B);
  while (!Packed.done()) {
    uint64_t V;
    if (!Packed.varint(V))
      return false;
    Out.push_back(T(V));
  }
  return true;
}
template <typename T, typename Raw>
bool readFixed(Fields &F, unsigned Wire, unsigned ScalarWire, std::vector<T> &Out) {
  if (Wire == ScalarWire) {
    Raw V;
    if (!F.fixed(V))
      return false;
    Out.push_back(T(V));
    return true;
  }
  StringRef B;
  if (!F.bytes(B) || B.size() % sizeof(Raw))
    return false;
  for (size_t I = 0; I < B.size(); I += sizeof(Raw)) {
    Raw V;
    std::memcpy(&V, B.data() + I, sizeof(Raw));
    Out.push_back(T(V));
  }
  return true;
}
template <typename T> bool readVarints(Fields &F, unsigned Wire, llvm::SmallVectorImpl<T> &Out) {
  std::vector<T> Tmp;
  if (!readVarints(F, Wire, Tmp))
    return false;
  Out.append(Tmp.begin(), Tmp.end());
  return true;
}

/// TensorProto fields that carry element data: float_data, int32_data,
/// string_data, int64_data, raw_data, double_data, uint64_data.
bool isTensorPayload(uint64_t Num) {
  return Num == 4 || Num == 5 || Num == 6 || Num == 7 || Num == 9 || Num == 10 || Num == 11;
}

class Decoder {
public:
  Decoder(const DecodeOptions &Opts, uint64_t &Skipped) : Opts(Opts), Skipped(Skipped) {}

  bool model(StringRef B, Model &M) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      switch (Num) {
      case 1: // ir_version
        if (W == Varint) {
          uint64_t V;
          if (!F.varint(V))
            return false;
          M.IrVersion = int64_t(V);
          continue;
        }
        break;
      case 2: // producer_name
      case 3: // producer_version
        if (W == LengthDelim) {
          if (!F.bytes(Sub))
            return false;
          (Num == 2 ? M.ProducerName : M.ProducerVersion) = Sub;
          continue;
        }
        break;
      case 7: // graph (merged when repeated)
        if (W == LengthDelim) {
          if (!F.bytes(Sub) || !graph(Sub, M.G, 1))
            return false;
          M.HasGraph = true;
          continue;
        }
        break;
      case 8: // opset_import
        if (W == LengthDelim) {
          M.Opsets.emplace_back();
          if (!F.bytes(Sub) || !opset(Sub, M.Opsets.back()))
            return false;
          continue;
        }
        break;
      case 25: // functions
        if (W == LengthDelim) {
          if (Opts.Strict)
            return false; // inlined by the protobuf path
          M.Functions.emplace_back();
          if (!F.bytes(Sub) || !function(Sub, M.Functions.back(), 1))
            return false;
          continue;
        }
        break;
      case 14: // metadata_props
      case 20: // training_info
        if (W == LengthDelim && Opts.Strict)
          return false;
        break;
      }
      if (!F.skip(W))
        return false;
    }
    return true;
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
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if (isTensorPayload(Num)) {
        const uint8_t *At = F.pos();
        if (!F.skip(W))
          return false;
        PayloadBytes += uint64_t(F.pos() - At);
        Payloads.push_back({Num, W, At});
        continue;
      }
      switch (Num) {
      case 1: // dims
        if (W == Varint || W == LengthDelim) {
          if (!readVarints(F, W, T.Dims))
            return false;
          continue;
        }
        break;
      case 2: // data_type
        if (W == Varint) {
          uint64_t V;
          if (!F.varint(V))
            return false;
          T.DataType = int32_t(V);
          continue;
        }
        break;
      case 3: // segment
        if (W == LengthDelim) {
          if (!F.bytes(Sub) || !segment(Sub))
            return false;
          continue;
        }
        break;
      case 8: // name
        if (W == LengthDelim) {
          if (!F.bytes(T.Name))
            return false;
          continue;
        }
        break;
      case 13: // external_data
        if (W == LengthDelim) {
          StringRef Key, Value;
          if (!F.bytes(Sub) || !entry(Sub, Key, Value))
            return false;
          if (Key == "location")
            T.Location = Value;
          continue;
        }
        break;
      case 14: // data_location (enum: DEFAULT, EXTERNAL)
        if (W == Varint) {
          uint64_t V;
          if (!F.varint(V))
            return false;
          if (int32_t(V) == 0 || int32_t(V) == 1)
            T.DataLocation = int32_t(V);
          continue;
        }
        break;
      }
      if (!F.skip(W))
        return false;
    }
    if (PayloadBytes > Opts.KeepPayloadBytes) {
      Skipped += PayloadBytes;
      return true;
    }
    for (const Payload &Pl : Payloads) {
      Fields V(StringRef(reinterpret_cast<const char *>(Pl.At), B.end() - reinterpret_cast<const char *>(Pl.At)));
      bool Ok = true;
      switch (Pl.Num) {
      case 4:
        if (Pl.Wire == Fixed32 || Pl.Wire == LengthDelim)
          Ok = readFixed<float, float>(V, Pl.Wire, Fixed32, T.FloatData);
        break;
      case 5:
        if (Pl.Wire == Varint || Pl.Wire == LengthDelim)
          Ok = readVarints(V, Pl.Wire, T.Int32Data);
        break;
      case 7:
        if (Pl.Wire == Varint || Pl.Wire == LengthDelim)
          Ok = readVarints(V, Pl.Wire, T.Int64Data);
        break;
      case 9:
        if (Pl.Wire == LengthDelim) {
          Ok = V.bytes(T.Raw);
          T.HasRaw = true;
        }
        break;
      case 10:
        if (Pl.Wire == Fixed64 || Pl.Wire == LengthDelim)
          Ok = readFixed<double, double>(V, Pl.Wire, Fixed64, T.DoubleData);
        break;
      case 11:
        if (Pl.Wire == Varint || Pl.Wire == LengthDelim)
          Ok = readVarints(V, Pl.Wire, T.Uint64Data);
        break;
      default: // string_data: framing checked above, contents unused
        break;
      }
      if (!Ok)
        return false;
    }
    return true;
  }

private:
  const DecodeOptions &Opts;
  uint64_t &Skipped;

  bool opset(StringRef B, OpsetId &O) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      if (Num == 1 && W == LengthDelim) {
        if (!F.bytes(O.Domain))
          return false;
      } else if (Num == 2 && W == Varint) {
        uint64_t V;
        if (!F.varint(V))
          return false;
        O.Version = int64_t(V);
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  /// StringStringEntryProto.
  static bool entry(StringRef B, StringRef &Key, StringRef &Value) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      if ((Num == 1 || Num == 2) && W == LengthDelim) {
        if (!F.bytes(Num == 1 ? Key : Value))
          return false;
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  /// TensorProto.Segment: checked, not kept.
  static bool segment(StringRef B) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W) || !F.skip(W))
        return false;
    }
    return true;
  }

  bool sparse(StringRef B, SparseTensor &S, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if ((Num == 1 || Num == 2) && W == LengthDelim) {
        if (!F.bytes(Sub) || !tensor(Sub, Num == 1 ? S.Values : S.Indices, Depth + 1))
          return false;
      } else if (Num == 3 && (W == Varint || W == LengthDelim)) {
        if (!readVarints(F, W, S.Dims))
          return false;
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  bool dimension(StringRef B, Dimension &D) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      if (Num == 1 && W == Varint) { // oneof: the last member wins
        uint64_t V;
        if (!F.varint(V))
          return false;
        D.K = Dimension::Kind::Value;
        D.Value = int64_t(V);
        D.Param = {};
      } else if (Num == 2 && W == LengthDelim) {
        if (!F.bytes(D.Param))
          return false;
        D.K = Dimension::Kind::Param;
        D.Value = 0;
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  bool shape(StringRef B, Type &T) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if (Num == 1 && W == LengthDelim) {
        T.Dims.emplace_back();
        if (!F.bytes(Sub) || !dimension(Sub, T.Dims.back()))
          return false;
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  bool tensorType(StringRef B, Type &T) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if (Num == 1 && W == Varint) {
        uint64_t V;
        if (!F.varint(V))
          return false;
        T.ElemType = int32_t(V);
      } else if (Num == 2 && W == LengthDelim) {
        if (!F.bytes(Sub) || !shape(Sub, T))
          return false;
        T.HasShape = true;
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  bool type(StringRef B, Type &T) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      Type::Kind K = Num == 1   ? Type::Kind::Tensor
                     : Num == 4 ? Type::Kind::Sequence
                     : Num == 5 ? Type::Kind::Map
                     : Num == 9 ? Type::Kind::Optional
                     : Num == 8 ? Type::Kind::SparseTensor
                                : Type::Kind::None;
      if (K == Type::Kind::None || W != LengthDelim) {
        if (!F.skip(W))
          return false;
        continue;
      }
      if (K != Type::Kind::Tensor && Opts.Strict)
        return false; // their contents are left to protobuf
      if (!F.bytes(Sub))
        return false;
      if (T.K != K) { // oneof: another member clears this one
        T = Type();
        T.K = K;
      }
      if (K == Type::Kind::Tensor && !tensorType(Sub, T))
        return false;
    }
    return true;
  }

  bool valueInfo(StringRef B, ValueInfo &V) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if (Num == 1 && W == LengthDelim) {
        if (!F.bytes(V.Name))
          return false;
      } else if (Num == 2 && W == LengthDelim) {
        if (!F.bytes(Sub) || !type(Sub, V.Ty))
          return false;
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  bool attribute(StringRef B, Attribute &A, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      uint64_t V;
      bool Known = true;
      switch (Num) {
      case 1:
        if ((Known = W == LengthDelim))
          if (!F.bytes(A.Name))
            return false;
        break;
      case 2: // f
        if ((Known = W == Fixed32)) {
          if (!F.fixed(A.F))
            return false;
          A.HasF = true;
        }
        break;
      case 3: // i
        if ((Known = W == Varint)) {
          if (!F.varint(V))
            return false;
          A.I = int64_t(V);
          A.HasI = true;
        }
        break;
      case 4: // s
        if ((Known = W == LengthDelim)) {
          if (!F.bytes(A.S))
            return false;
          A.HasS = true;
        }
        break;
      case 5: // t (merged when repeated)
        if ((Known = W == LengthDelim)) {
          if (!F.bytes(Sub) || !tensor(Sub, A.T, Depth + 1))
            return false;
          A.HasT = true;
        }
        break;
      case 6: // g (merged when repeated)
        if ((Known = W == LengthDelim)) {
          if (!A.G)
            A.G = std::make_unique<Graph>();
          if (!F.bytes(Sub) || !graph(Sub, *A.G, Depth + 1))
            return false;
          A.HasG = true;
        }
        break;
      case 7: // floats
        if ((Known = W == Fixed32 || W == LengthDelim))
          if (!readFixed<float, float>(F, W, Fixed32, A.Floats))
            return false;
        break;
      case 8: // ints
        if ((Known = W == Varint || W == LengthDelim))
          if (!readVarints(F, W, A.Ints))
            return false;
        break;
      case 9: // strings
        if ((Known = W == LengthDelim)) {
          if (!F.bytes(Sub))
            return false;
          A.Strings.push_back(Sub);
        }
        break;
      case 10: // tensors
        if ((Known = W == LengthDelim)) {
          A.Tensors.emplace_back();
          if (!F.bytes(Sub) || !tensor(Sub, A.Tensors.back(), Depth + 1))
            return false;
        }
        break;
      case 11: // graphs
        if ((Known = W == LengthDelim)) {
          A.Graphs.emplace_back();
          if (!F.bytes(Sub) || !graph(Sub, A.Graphs.back(), Depth + 1))
            return false;
        }
        break;
      case 20: // type (enum AttributeType: 0..14)
        if ((Known = W == Varint)) {
          if (!F.varint(V))
            return false;
          if (int32_t(V) >= 0 && int32_t(V) <= 14)
            A.Type = int32_t(V);
        }
        break;
      case 14: // tp
      case 15: // type_protos
      case 22: // sparse_tensor
      case 23: // sparse_tensors
        if (W == LengthDelim && Opts.Strict)
          return false; // their contents are left to protobuf
        Known = false;
        break;
      default:
        Known = false;
      }
      if (!Known && !F.skip(W))
        return false;
    }
    return true;
  }

  bool node(StringRef B, Node &N, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if (W == LengthDelim && Num >= 1 && Num <= 7 && Num != 6) {
        if (!F.bytes(Sub))
          return false;
        switch (Num) {
        case 1: N.Inputs.push_back(Sub); break;
        case 2: N.Outputs.push_back(Sub); break;
        case 3: N.Name = Sub; break;
        case 4: N.OpType = Sub; break;
        case 5:
          N.Attrs.emplace_back();
          if (!attribute(Sub, N.Attrs.back(), Depth + 1))
            return false;
          break;
        case 7: N.Domain = Sub; break;
        }
      } else if (!F.skip(W)) {
        return false;
      }
    }
    return true;
  }

  bool graph(StringRef B, Graph &G, unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return false;
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if (W != LengthDelim || !(Num == 1 || Num == 2 || Num == 5 || Num == 11 || Num == 12 ||
                                Num == 13 || Num == 14 || Num == 15)) {
        if (!F.skip(W))
          return false;
        continue;
      }
      if (!F.bytes(Sub))
        return false;
      bool Ok = true;
      switch (Num) {
      case 1:
        G.Nodes.emplace_back();
        Ok = node(Sub, G.Nodes.back(), Depth + 1);
        break;
      case 2: G.Name = Sub; break;
      case 5:
        G.Initializers.emplace_back();
        Ok = tensor(Sub, G.Initializers.back(), Depth + 1);
        break;
      case 11: case 12: case 13: {
        auto &List = Num == 11 ? G.Inputs : Num == 12 ? G.Outputs : G.ValueInfos;
        List.emplace_back();
        Ok = valueInfo(Sub, List.back());
        break;
      }
      case 14: // quantization_annotation: checked by protobuf only
        Ok = !Opts.Strict;
        break;
      case 15:
        if (Opts.Strict)
          return false; // sparse initializers: left to protobuf
        G.SparseInitializers.emplace_back();
        Ok = sparse(Sub, G.SparseInitializers.back(), Depth + 1);
        break;
      }
      if (!Ok)
        return false;
    }
    return true;
  }

  bool function(StringRef B, Function &Fn, unsigned Depth) {
    Fields F(B);
    while (!F.done()) {
      uint64_t Num;
      unsigned W;
      if (!F.next(Num, W))
        return false;
      StringRef Sub;
      if (W != LengthDelim || !(Num == 1 || Num == 4 || Num == 5 || Num == 6 || Num == 7 ||
                                Num == 9 || Num == 10)) {
        if (!F.skip(W))
          return false;
        continue;
      }
      if (!F.bytes(Sub))
        return false;
      switch (Num) {
      case 1: Fn.Name = Sub; break;
      case 4: Fn.Body.Inputs.push_back({Sub, {}}); break;
      case 5: Fn.Body.Outputs.push_back({Sub, {}}); break;
      case 6: Fn.AttributeNames.push_back(Sub); break;
      case 7:
        Fn.Body.Nodes.emplace_back();
        if (!node(Sub, Fn.Body.Nodes.back(), Depth + 1))
          return false;
        break;
      case 9:
        Fn.Opsets.emplace_back();
        if (!opset(Sub, Fn.Opsets.back()))
          return false;
        break;
      case 10: Fn.Domain = Sub; break;
      }
    }
    return true;
  }
};

} // namespace

bool ridge::wire::decodeModel(StringRef Bytes, Model &M, const DecodeOptions &Opts) {
  Decoder D(Opts, M.SkippedPayloadBytes);
  return D.model(Bytes, M);
}

bool ridge::wire::decodeTensor(StringRef Bytes, Tensor &T, const DecodeOptions &Opts) {
  uint64_t Skipped = 0;
  Decoder D(Opts, Skipped);
  return D.tensor(Bytes, T, 0);
}
