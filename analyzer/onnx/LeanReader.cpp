//===- LeanReader.cpp - Read an ONNX model's structure, skipping weights --===//
//
// Field numbers are onnx.proto's (ONNX 1.12 and later are compatible).
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/LeanReader.h"
#include <algorithm>
#include "llvm/Support/FormatVariadic.h"

using namespace ridge;
using llvm::Error;

namespace {

enum class Msg { Model, Graph, Node, Attribute, Tensor, Sparse, Function, TrainingInfo };

enum WireType : unsigned { Varint = 0, Fixed64 = 1, LengthDelim = 2, Fixed32 = 5 };

/// Which message a length-delimited field of message M holds, if ridge must
/// look inside it; std::nullopt means copy the bytes unchanged.
std::optional<Msg> childKind(Msg M, uint64_t Field) {
  switch (M) {
  case Msg::Model:
    if (Field == 7) return Msg::Graph;
    if (Field == 20) return Msg::TrainingInfo;
    if (Field == 25) return Msg::Function;
    return std::nullopt;
  case Msg::Graph:
    if (Field == 1) return Msg::Node;
    if (Field == 5) return Msg::Tensor;
    if (Field == 15) return Msg::Sparse;
    return std::nullopt;
  case Msg::Node:
    if (Field == 5) return Msg::Attribute;
    return std::nullopt;
  case Msg::Attribute:
    if (Field == 5 || Field == 10) return Msg::Tensor;
    if (Field == 6 || Field == 11) return Msg::Graph;
    if (Field == 22 || Field == 23) return Msg::Sparse;
    return std::nullopt;
  case Msg::Sparse:
    if (Field == 1 || Field == 2) return Msg::Tensor;
    return std::nullopt;
  case Msg::Function:
    if (Field == 7) return Msg::Node;
    return std::nullopt;
  case Msg::TrainingInfo:
    if (Field == 1 || Field == 2) return Msg::Graph;
    return std::nullopt;
  case Msg::Tensor:
    return std::nullopt;
  }
  return std::nullopt;
}

bool isDocString(Msg M, uint64_t Field) {
  switch (M) {
  case Msg::Model: return Field == 6;
  case Msg::Graph: return Field == 10;
  case Msg::Node: return Field == 6;
  case Msg::Attribute: return Field == 13;
  case Msg::Tensor: return Field == 12;
  case Msg::Function: return Field == 8;
  default: return false;
  }
}

class Filter {
public:
  Filter(llvm::StringRef Bytes, LeanReadStats &Stats, const LeanReadOptions &Opts)
      : Base(reinterpret_cast<const uint8_t *>(Bytes.data())), Stats(Stats),
        Opts(Opts) {}

  Error run(Msg M, const uint8_t *P, const uint8_t *End, std::string &Out,
            unsigned Depth) {
    if (Depth > Opts.MaxDepth)
      return fail(P, llvm::formatv("protobuf messages nested deeper than {0} "
                                   "levels",
                                   Opts.MaxDepth));
    bool DropPayload = false;
    if (M == Msg::Tensor) {
      uint64_t Payload = 0;
      if (Error E = payloadBytes(P, End, Payload))
        return E;
      DropPayload = Payload > Opts.KeepPayloadBytes;
      if (DropPayload) {
        Stats.SkippedPayloadBytes += Payload;
        ++Stats.SkippedTensors;
      }
    }
    while (P < End) {
      const uint8_t *FieldStart = P;
      uint64_t Key;
      if (Error E = readVarint(P, End, Key))
        return E;
      uint64_t Field = Key >> 3;
      unsigned Wire = Key & 7;
      if (Field == 0)
        return fail(FieldStart, "field number 0 is invalid");
      const uint8_t *ValueStart = P;
      if (Error E = skipValue(P, End, Wire, Field))
        return E;
      if (isDocString(M, Field) || (DropPayload && isTensorPayloadField(Field)))
        continue;
      // external_data (13): keep only where the bytes are, not which.
      if (M == Msg::Tensor && Field == 13 && Wire == LengthDelim) {
        const uint8_t *Q = ValueStart;
        uint64_t Len;
        (void)readVarint(Q, End, Len); // already validated by skipValue
        if (!isLocationEntry(Q, Q + Len))
          continue;
      }
      if (Wire == LengthDelim) {
        if (auto Child = childKind(M, Field)) {
          uint64_t Len;
          const uint8_t *Q = ValueStart;
          (void)readVarint(Q, End, Len); // already validated by skipValue
          std::string Sub;
          if (Error E = run(*Child, Q, Q + Len, Sub, Depth + 1))
            return E;
          writeVarint(Out, Key);
          writeVarint(Out, Sub.size());
          Out += Sub;
          continue;
        }
      }
      Out.append(reinterpret_cast<const char *>(FieldStart), P - FieldStart);
    }
    return Error::success();
  }

private:
  const uint8_t *Base;
  LeanReadStats &Stats;
  const LeanReadOptions &Opts;

  Error fail(const uint8_t *At, const llvm::Twine &Why) {
    return llvm::createStringError(
        std::errc::invalid_argument, "%s at byte offset %llu",
        Why.str().c_str(), static_cast<unsigned long long>(At - Base));
  }

  /// Whether a TensorProto external_data entry (StringStringEntryProto at
  /// [P, End)) is the "location" one: the only entry ridge reads (offset,
  /// length and checksum locate bytes it never loads). A malformed entry is
  /// kept, for protobuf to report.
  bool isLocationEntry(const uint8_t *P, const uint8_t *End) {
    while (P < End) {
      uint64_t Key, Len;
      if (!succeeded(readVarint(P, End, Key)) || (Key & 7) != LengthDelim ||
          !succeeded(readVarint(P, End, Len)) || Len > uint64_t(End - P))
        return true;
      if ((Key >> 3) == 1)
        return llvm::StringRef(reinterpret_cast<const char *>(P), Len) == "location";
      P += Len;
    }
    return true;
  }
  static bool succeeded(Error E) {
    bool Ok = !E;
    llvm::consumeError(std::move(E));
    return Ok;
  }

  Error readVarint(const uint8_t *&P, const uint8_t *End, uint64_t &V) {
    const uint8_t *Start = P;
    V = 0;
    for (unsigned Shift = 0; Shift < 64; Shift += 7) {
      if (P >= End)
        return fail(Start, "truncated varint");
      uint8_t B = *P++;
      V |= uint64_t(B & 0x7f) << Shift;
      if (!(B & 0x80))
        return Error::success();
    }
    return fail(Start, "malformed varint (more than 10 bytes)");
  }

  Error skipValue(const uint8_t *&P, const uint8_t *End, unsigned Wire,
                  uint64_t Field) {
    const uint8_t *Start = P;
    uint64_t Len;
    switch (Wire) {
    case Varint:
      return readVarint(P, End, Len);
    case Fixed64:
      Len = 8;
      break;
    case Fixed32:
      Len = 4;
      break;
    case LengthDelim:
      if (Error E = readVarint(P, End, Len))
        return E;
      break;
    default:
      return fail(Start, llvm::formatv("field {0} has unsupported wire type "
                                       "{1} (not an ONNX protobuf)",
                                       Field, Wire));
    }
    // A length prefix is checked against the bytes that exist before anything
    // is allocated, so a tiny file cannot make ridge reserve gigabytes.
    if (Len > uint64_t(End - P))
      return fail(Start, llvm::formatv("field {0} declares {1} bytes but only "
                                       "{2} remain (truncated or corrupt file)",
                                       Field, Len, uint64_t(End - P)));
    P += Len;
    return Error::success();
  }

  Error payloadBytes(const uint8_t *P, const uint8_t *End, uint64_t &Total) {
    Total = 0;
    while (P < End) {
      uint64_t Key;
      if (Error E = readVarint(P, End, Key))
        return E;
      const uint8_t *ValueStart = P;
      if (Error E = skipValue(P, End, Key & 7, Key >> 3))
        return E;
      if (isTensorPayloadField(Key >> 3))
        Total += P - ValueStart;
    }
    return Error::success();
  }

  static void writeVarint(std::string &Out, uint64_t V) {
    while (V >= 0x80) {
      Out.push_back(char(V | 0x80));
      V >>= 7;
    }
    Out.push_back(char(V));
  }
};

} // namespace

Error ridge::leanFilterModel(llvm::StringRef Bytes, std::string &Out,
                             LeanReadStats &Stats, const LeanReadOptions &Opts) {
  Out.clear();
  // The structure is at most the file: reserving it (pages are only touched
  // as they are written) saves the copies of a doubling string. Capped at
  // protobuf's 2 GiB limit, past which the caller refuses the model anyway.
  Out.reserve(std::min<size_t>(Bytes.size(), (size_t(1) << 31)));
  Filter F(Bytes, Stats, Opts);
  const auto *P = reinterpret_cast<const uint8_t *>(Bytes.data());
  return F.run(Msg::Model, P, P + Bytes.size(), Out, 0);
}
