//===- OnnxWireTest.cpp - The in-place decoder against protobuf -----------===//
//
// ridge decodes binary models itself (analyzer/onnx/OnnxWire.h) and falls back to
// protobuf only for what strict decoding leaves to it. Protobuf is the
// oracle here: for the same bytes, every field the decoder reads must be what
// protobuf's own accessors give (match), and both must import to the same IR
// (printed; ridge imports a protobuf model by serializing it for the
// decoder, so this half alone would not catch a decoding slip), including
// where protobuf's parsing rules are subtle (merged messages, packed fields,
// wrong wire types, out-of-range enums, oneofs).
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/Importer.h"
#include "analyzer/onnx/LeanReader.h"
#include "analyzer/onnx/OnnxWire.h"
#include "analyzer/PassManager.h"
#include "test/WireOracle.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <algorithm>
#include <string>

using namespace ridge;

namespace {

// A minimal protobuf wire encoder, to write what protobuf's API cannot
// (fields repeated, packed differently, of the wrong wire type).
std::string varint(uint64_t V) {
  std::string S;
  while (V >= 0x80) {
    S.push_back(char(V | 0x80));
    V >>= 7;
  }
  S.push_back(char(V));
  return S;
}
std::string fieldVarint(unsigned Num, uint64_t V) { return varint(uint64_t(Num) << 3) + varint(V); }
std::string fieldBytes(unsigned Num, const std::string &B) {
  return varint((uint64_t(Num) << 3) | 2) + varint(B.size()) + B;
}
std::string fieldFixed32(unsigned Num, float F) {
  std::string S = varint((uint64_t(Num) << 3) | 5);
  S.append(reinterpret_cast<const char *>(&F), 4);
  return S;
}

std::string valueInfo(const std::string &Name, const std::string &Dims) {
  // TypeProto{tensor_type{elem_type FLOAT, shape{Dims}}}
  return fieldBytes(1, Name) +
         fieldBytes(2, fieldBytes(1, fieldVarint(1, 1) + fieldBytes(2, Dims)));
}
std::string dimValue(int64_t V) { return fieldBytes(1, fieldVarint(1, uint64_t(V))); }
std::string dimParam(const std::string &P) { return fieldBytes(1, fieldBytes(2, P)); }

/// ir_version 8, ai.onnx opset 17, graph G.
std::string model(const std::string &G) {
  return fieldVarint(1, 8) + fieldBytes(8, fieldBytes(1, "") + fieldVarint(2, 17)) +
         fieldBytes(7, G);
}

/// A graph: x[N,4] -> Relu -> y, plus the extra fields given.
std::string graph(const std::string &Extra = "", const std::string &NodeExtra = "") {
  std::string Node = fieldBytes(1, "x") + fieldBytes(2, "y") + fieldBytes(4, "Relu") + NodeExtra;
  return fieldBytes(1, Node) + fieldBytes(2, "g") +
         fieldBytes(11, valueInfo("x", dimParam("N") + dimValue(4))) +
         fieldBytes(12, valueInfo("y", dimParam("N") + dimValue(4))) + Extra;
}

/// The first field where the decoder and protobuf differ (test/WireOracle.h).
void match(const wire::Model &M, const onnx::ModelProto &P, const std::string &Where) {
  std::string Diff = wireoracle::firstDifference(M, P);
  EXPECT_EQ(Diff, "") << Where;
}

std::string printed(llvm::Expected<std::unique_ptr<Model>> M) {
  if (!M)
    return "error: " + llvm::toString(M.takeError());
  std::string S;
  llvm::raw_string_ostream OS(S);
  printModel(**M, OS);
  OS << "skipped " << (*M)->SkippedPayloadBytes << "\n";
  return S;
}

/// The IR from Bytes decoded in place (Strict or trusted), or "undecoded".
std::string viaWire(const std::string &Bytes, bool Strict) {
  wire::Model W;
  wire::DecodeOptions Opts = Strict ? wire::DecodeOptions() : wire::trustedDecode();
  if (!wire::decodeModel(Bytes, W, Opts))
    return "undecoded";
  DiagnosticEngine Diags;
  return printed(importModel(W, "m.onnx", ".", Diags));
}

/// The IR from Bytes parsed by protobuf, or "unparsed".
std::string viaProtobuf(const std::string &Bytes) {
  onnx::ModelProto P;
  if (!P.ParseFromString(Bytes))
    return "unparsed";
  DiagnosticEngine Diags;
  return printed(importModel(P, "m.onnx", ".", Diags));
}

/// Both decoders agree on Bytes, and strict decoding accepts them: field by
/// field against protobuf's parse, and in the IR imported.
void expectSame(const std::string &Bytes, llvm::StringRef Expect = "") {
  onnx::ModelProto P;
  ASSERT_TRUE(P.ParseFromString(Bytes));
  for (bool Strict : {true, false}) {
    wire::Model W;
    ASSERT_TRUE(wire::decodeModel(Bytes, W, Strict ? wire::DecodeOptions() : wire::trustedDecode()));
    match(W, P, Strict ? "strict" : "trusted");
  }
  std::string Oracle = viaProtobuf(Bytes);
  ASSERT_NE(Oracle, "unparsed");
  EXPECT_EQ(viaWire(Bytes, /*Strict=*/true), Oracle);
  EXPECT_EQ(viaWire(Bytes, /*Strict=*/false), Oracle);
  if (!Expect.empty()) {
    EXPECT_NE(Oracle.find(Expect.str()), std::string::npos) << Oracle;
  }
}

TEST(OnnxWire, PlainModel) { expectSame(model(graph()), "Relu"); }

TEST(OnnxWire, SingularMessageTwiceIsMerged) {
  // A second graph field: its name wins, its node and output are appended.
  std::string Second = fieldBytes(1, fieldBytes(1, "y") + fieldBytes(2, "z") +
                                         fieldBytes(4, "Sigmoid")) +
                       fieldBytes(2, "g2") +
                       fieldBytes(12, valueInfo("z", dimParam("N") + dimValue(4)));
  std::string Bytes = model(graph()) + fieldBytes(7, Second);
  expectSame(Bytes, "Sigmoid");
  // The same merge inside a value's type: the second tensor_type adds a
  // shape to the element type the first gave.
  std::string Ty = fieldBytes(1, fieldVarint(1, 1)) + fieldBytes(1, fieldBytes(2, dimValue(3)));
  expectSame(model(graph(fieldBytes(13, fieldBytes(1, "y") + fieldBytes(2, Ty)))));
}

TEST(OnnxWire, LastScalarWins) {
  // op_type twice: Sigmoid; ir_version twice.
  expectSame(model(graph("", fieldBytes(4, "Sigmoid"))) + fieldVarint(1, 7), "Sigmoid");
}

TEST(OnnxWire, PackedAndUnpackedRepeatedScalars) {
  // Transpose's perm as packed ints (wire type 2) and as one varint each.
  std::string Packed = fieldBytes(1, "perm") + fieldVarint(20, 7) +
                       fieldBytes(8, varint(1) + varint(0));
  std::string Unpacked = fieldBytes(1, "perm") + fieldVarint(20, 7) + fieldVarint(8, 1) +
                         fieldVarint(8, 0);
  for (const std::string &A : {Packed, Unpacked}) {
    std::string Node = fieldBytes(1, "x") + fieldBytes(2, "y") + fieldBytes(4, "Transpose") +
                       fieldBytes(5, A);
    std::string G = fieldBytes(1, Node) + fieldBytes(11, valueInfo("x", dimValue(2) + dimValue(4))) +
                    fieldBytes(12, fieldBytes(1, "y"));
    expectSame(model(G), "perm=[1,0]");
  }
  // int64_data of a shape initializer unpacked (protobuf writes it packed).
  std::string Shape = fieldVarint(1, 2) + fieldVarint(2, 7) + fieldVarint(7, 4) +
                      fieldVarint(7, 2) + fieldBytes(8, "s");
  std::string Node = fieldBytes(1, "x") + fieldBytes(1, "s") + fieldBytes(2, "y") +
                     fieldBytes(4, "Reshape");
  std::string G = fieldBytes(1, Node) + fieldBytes(5, Shape) +
                  fieldBytes(11, valueInfo("x", dimValue(8))) + fieldBytes(12, fieldBytes(1, "y"));
  expectSame(model(G));
}

TEST(OnnxWire, NaNsReadAsTheirBits) {
  // Packed floats holding NaNs (found by the fuzzer): the oracle compares
  // bits, as a NaN never equals itself.
  std::string Nans("\x00\x00\xff\xff\xff\xff\xff\xff", 8);
  std::string A = fieldBytes(1, "scales") + fieldVarint(20, 6) + fieldBytes(7, Nans);
  expectSame(model(graph("", fieldBytes(5, A))));
}

TEST(OnnxWire, WrongWireTypeIsAnUnknownField) {
  // name (a string) given as a varint: protobuf keeps it as an unknown
  // field and the node stays unnamed (the importer names it).
  expectSame(model(graph("", fieldVarint(3, 5))), "Relu_0");
  // f (a float) as a varint, with type FLOAT: f stays 0.
  std::string A = fieldBytes(1, "alpha") + fieldVarint(20, 1) + fieldVarint(2, 3);
  expectSame(model(graph("", fieldBytes(5, A))));
}

TEST(OnnxWire, EnumOutOfRangeLeavesTheField) {
  // AttributeProto.type 99: unset for protobuf; the kind comes from f.
  std::string A = fieldBytes(1, "alpha") + fieldVarint(20, 99) + fieldFixed32(2, 0.5f);
  expectSame(model(graph("", fieldBytes(5, A))), "alpha=0.50");
  // data_location 7 on an initializer: left DEFAULT, not EXTERNAL.
  std::string T = fieldVarint(1, 4) + fieldVarint(2, 1) + fieldBytes(8, "w") + fieldVarint(14, 7);
  expectSame(model(graph(fieldBytes(5, T))));
}

TEST(OnnxWire, OneofKeepsItsLastMember) {
  // A dim given a value, then a param: the param.
  std::string D = fieldBytes(1, fieldVarint(1, 3) + fieldBytes(2, "B"));
  std::string Vi = fieldBytes(1, "x") +
                   fieldBytes(2, fieldBytes(1, fieldVarint(1, 1) + fieldBytes(2, D + dimValue(4))));
  std::string Node = fieldBytes(1, "x") + fieldBytes(2, "y") + fieldBytes(4, "Relu");
  expectSame(model(fieldBytes(1, Node) + fieldBytes(11, Vi) + fieldBytes(12, fieldBytes(1, "y"))),
             "[B,4]");
}

TEST(OnnxWire, OpaqueTypeIsAOneofMember) {
  // onnx-ml.proto's TypeProto.opaque_type (7), after a tensor_type: the
  // type is opaque (found by the fuzzer). Strict decoding leaves it to
  // protobuf; trusted decoding reads the kind.
  std::string Ty = fieldBytes(1, fieldVarint(1, 1)) + fieldBytes(7, fieldBytes(1, "d"));
  std::string Vi = fieldBytes(1, "x") + fieldBytes(2, Ty);
  std::string Node = fieldBytes(1, "x") + fieldBytes(2, "y") + fieldBytes(4, "Relu");
  std::string Bytes =
      model(fieldBytes(1, Node) + fieldBytes(11, Vi) + fieldBytes(12, fieldBytes(1, "y")));
  wire::Model S, T;
  EXPECT_FALSE(wire::decodeModel(Bytes, S));
  ASSERT_TRUE(wire::decodeModel(Bytes, T, wire::trustedDecode()));
  onnx::ModelProto P;
  ASSERT_TRUE(P.ParseFromString(Bytes));
  EXPECT_EQ(wireoracle::firstDifference(T, P), "");
  EXPECT_EQ(T.G.Inputs[0].Ty.K, wire::Type::Kind::Opaque);
}

TEST(OnnxWire, LargePayloadsAreSkippedAndCounted) {
  // A 5000-byte raw_data (over the 4096 kept): skipped, its field counted
  // as the lean reader counts it (length prefix included).
  std::string Raw(5000, '\0');
  std::string T = fieldVarint(1, 1250) + fieldVarint(2, 1) + fieldBytes(8, "w") + fieldBytes(9, Raw);
  std::string Bytes = model(graph(fieldBytes(5, T)));
  wire::Model W;
  ASSERT_TRUE(wire::decodeModel(Bytes, W));
  EXPECT_EQ(W.SkippedPayloadBytes, 5000u + varint(5000).size());
  std::string Filtered;
  LeanReadStats Stats;
  ASSERT_FALSE(leanFilterModel(Bytes, Filtered, Stats));
  EXPECT_EQ(W.SkippedPayloadBytes, Stats.SkippedPayloadBytes);
  ASSERT_EQ(W.G.Initializers.size(), 1u);
  wire::Tensor Init;
  ASSERT_TRUE(wire::decodeInitializer(W.G.Initializers[0], Init, W.Opts));
  EXPECT_FALSE(Init.HasRaw);
  EXPECT_EQ(Init.Name, "w");
  EXPECT_EQ(wire::initializerName(W.G.Initializers[0]), "w");
}

TEST(OnnxWire, NodesAreCheckedByTheModelsDecodeAndDecodedAgainWhereRead) {
  // Node 1 lists an empty second output; node 2 is a Constant whose value
  // tensor's payload (5000 bytes) is over the limit.
  std::string Raw(5000, '\0');
  std::string T = fieldVarint(1, 1250) + fieldVarint(2, 1) + fieldBytes(9, Raw);
  std::string Attr = fieldBytes(1, "value") + fieldVarint(20, 4) + fieldBytes(5, T);
  std::string Split = fieldBytes(1, "y") + fieldBytes(2, "s") + fieldBytes(2, "") +
                      fieldBytes(4, "Identity");
  std::string Constant = fieldBytes(2, "c") + fieldBytes(4, "Constant") + fieldBytes(5, Attr);
  std::string Bytes = model(graph(fieldBytes(1, Split) + fieldBytes(1, Constant)));
  wire::Model W;
  ASSERT_TRUE(wire::decodeModel(Bytes, W));
  ASSERT_EQ(W.G.Nodes.size(), 3u);
  EXPECT_EQ(W.G.NumNodeOutputs, 4u); // y; s and ""; c
  wire::Node N;
  ASSERT_TRUE(wire::decodeNode(W.G.Nodes[2], N, W.Opts));
  EXPECT_EQ(N.OpType, "Constant");
  ASSERT_EQ(N.Attrs.size(), 1u);
  EXPECT_TRUE(N.Attrs[0].HasT);
  // The node it decodes into is cleared first.
  ASSERT_TRUE(wire::decodeNode(W.G.Nodes[1], N, W.Opts));
  EXPECT_EQ(N.OpType, "Identity");
  EXPECT_TRUE(N.Attrs.empty());
  ASSERT_EQ(N.Outputs.size(), 2u);
  EXPECT_EQ(N.Outputs[1], "");
  // The payload skipped is counted once, by the model's decode, as the
  // lean reader counts it.
  std::string Filtered;
  LeanReadStats Stats;
  ASSERT_FALSE(leanFilterModel(Bytes, Filtered, Stats));
  EXPECT_EQ(W.SkippedPayloadBytes, 5000u + varint(5000).size());
  EXPECT_EQ(W.SkippedPayloadBytes, Stats.SkippedPayloadBytes);
  std::string IR = viaWire(Bytes, /*Strict=*/true);
  EXPECT_EQ(IR, viaProtobuf(Bytes));
  EXPECT_NE(IR.find("Constant"), std::string::npos) << IR;
  // A node's malformed attribute fails the model's decode, not a later read.
  std::string Bad = fieldBytes(4, "Relu") + fieldBytes(5, fieldBytes(1, "a") + varint((9u << 3) | 3));
  EXPECT_FALSE(wire::decodeModel(model(graph(fieldBytes(1, Bad))), W));
  EXPECT_FALSE(wire::decodeNode(fieldBytes(5, fieldBytes(1, "a") + varint((9u << 3) | 3)), N, W.Opts));
}

TEST(OnnxWire, StrictModeLeavesTheRestToProtobuf) {
  std::string Base = model(graph());
  wire::Model W;
  // Malformed: truncated, a group wire type, field number 0.
  EXPECT_FALSE(wire::decodeModel(Base.substr(0, Base.size() - 3), W));
  EXPECT_FALSE(wire::decodeModel(Base + varint((9u << 3) | 3), W));
  EXPECT_FALSE(wire::decodeModel(Base + fieldVarint(0, 1), W));
  // Well formed, but for protobuf: functions, metadata, sparse initializers.
  std::string Fn = fieldBytes(1, "f") + fieldBytes(10, "local");
  for (const std::string &Extra :
       {fieldBytes(25, Fn), fieldBytes(14, fieldBytes(1, "k") + fieldBytes(2, "v")),
        fieldBytes(7, fieldBytes(15, fieldBytes(3, varint(2))))}) {
    wire::Model S, T;
    EXPECT_FALSE(wire::decodeModel(Base + Extra, S));
    EXPECT_TRUE(wire::decodeModel(Base + Extra, T, wire::trustedDecode()));
  }
  // Unknown fields are skipped in both modes, as protobuf skips them.
  expectSame(Base + fieldBytes(99, "whatever") + fieldVarint(98, 1), "Relu");
}

TEST(OnnxWire, DeepNestingIsRefused) {
  // Graphs nested in If branches past MaxDepth.
  std::string G = graph();
  for (int I = 0; I < 40; ++I) {
    std::string A = fieldBytes(1, "then_branch") + fieldVarint(20, 5) + fieldBytes(6, G);
    G = fieldBytes(1, fieldBytes(2, "o") + fieldBytes(4, "If") + fieldBytes(5, A));
  }
  wire::Model W;
  EXPECT_FALSE(wire::decodeModel(model(G), W));
}

/// Every binary model at hand (ONNX's backend test data, ridge's binary
/// fixtures): where strict decoding accepts the file, every field read is
/// what protobuf parses from the lean reader's output, and the IR is the
/// same; where it does not, protobuf's path decides. Most files must take
/// the fast path.
TEST(OnnxWire, AgreesWithProtobufOnEveryModelAtHand) {
  std::vector<std::string> Paths;
  std::error_code EC;
  for (const char *Root : {"/usr/include/onnx/backend/test/data", RIDGE_TEST_INPUTS_DIR})
    for (llvm::sys::fs::recursive_directory_iterator It(Root, EC), E; It != E && !EC;
         It.increment(EC))
      if (llvm::sys::path::extension(It->path()) == ".onnx")
        Paths.push_back(It->path());
  std::sort(Paths.begin(), Paths.end());
  if (Paths.size() < 10)
    GTEST_SKIP() << "no ONNX backend test data";
  size_t Fast = 0, Total = 0;
  for (const std::string &Path : Paths) {
    auto Buf = llvm::MemoryBuffer::getFile(Path, false, false);
    if (!Buf || (*Buf)->getBufferSize() > (64u << 20))
      continue;
    llvm::StringRef Bytes = (*Buf)->getBuffer();
    ++Total;
    std::string Filtered;
    LeanReadStats Stats;
    onnx::ModelProto P;
    bool Parsed = !leanFilterModel(Bytes, Filtered, Stats) && P.ParseFromString(Filtered);
    wire::Model W;
    if (!wire::decodeModel(Bytes, W) || !W.HasGraph)
      continue;
    ++Fast;
    ASSERT_TRUE(Parsed) << Path << ": decoded in place, but protobuf refuses it";
    EXPECT_EQ(W.SkippedPayloadBytes, Stats.SkippedPayloadBytes) << Path;
    match(W, P, Path); // what protobuf parsed, field by field
    DiagnosticEngine D1, D2;
    std::string Mine = printed(importModel(W, Path, ".", D1));
    std::string Theirs = printed(importModel(P, Path, ".", D2));
    // importModel(P) reports no skipped bytes of its own: compare the IR.
    Mine = Mine.substr(0, Mine.rfind("skipped "));
    Theirs = Theirs.substr(0, Theirs.rfind("skipped "));
    EXPECT_EQ(Mine, Theirs) << Path;
  }
  EXPECT_GT(Fast * 10, Total * 9) << Fast << " of " << Total << " decoded in place";
}

} // namespace
