//===- WireFormat.h - Protobuf's wire format, read and written ---*- C++ -*-===//
//
// The few primitives of protobuf's encoding (varints, keys, length-delimited
// values) that ridge's in-place decoder (OnnxWire.cpp) and the annotated-model
// writer (AnnotatedModel.cpp) share. No message knowledge lives here.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_ONNX_WIREFORMAT_H
#define RIDGE_ANALYZER_ONNX_WIREFORMAT_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <cstring>
#include <string>

namespace ridge::wire::format {

using llvm::StringRef;

enum WireType : unsigned { Varint = 0, Fixed64 = 1, LengthDelim = 2, Fixed32 = 5 };

/// Reads the fields of one message.
class FieldReader {
public:
  explicit FieldReader(StringRef B)
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
  /// The next field whole: Raw its bytes as they lie (key included),
  /// Contents a length-delimited field's contents (else empty); false on
  /// malformed framing.
  bool nextField(uint64_t &Num, unsigned &Wire, StringRef &Raw, StringRef &Contents) {
    const uint8_t *Start = P;
    Contents = StringRef();
    if (!next(Num, Wire) || (Wire == LengthDelim ? !bytes(Contents) : !skip(Wire)))
      return false;
    Raw = StringRef(reinterpret_cast<const char *>(Start), P - Start);
    return true;
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

/// Appends V as a varint.
inline void appendVarint(std::string &Out, uint64_t V) {
  while (V >= 0x80) {
    Out += char(uint8_t(V) | 0x80);
    V >>= 7;
  }
  Out += char(uint8_t(V));
}

/// Appends a field's key.
inline void appendKey(std::string &Out, uint64_t Field, unsigned Wire) {
  appendVarint(Out, Field << 3 | Wire);
}

/// Appends a length-delimited field: key, length, bytes.
inline void appendBytes(std::string &Out, uint64_t Field, StringRef Bytes) {
  appendKey(Out, Field, LengthDelim);
  appendVarint(Out, Bytes.size());
  Out.append(Bytes.data(), Bytes.size());
}

/// Appends a varint field.
inline void appendVarintField(std::string &Out, uint64_t Field, uint64_t V) {
  appendKey(Out, Field, Varint);
  appendVarint(Out, V);
}

/// The bytes a varint of V takes.
inline unsigned varintSize(uint64_t V) {
  unsigned N = 1;
  while (V >= 0x80) {
    V >>= 7;
    ++N;
  }
  return N;
}

} // namespace ridge::wire::format

#endif
