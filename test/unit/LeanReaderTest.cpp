//===- LeanReaderTest.cpp - Weight payloads are skipped, lies are caught --===//
#include "analyzer/onnx/LeanReader.h"
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

using namespace ridge;

namespace {

onnx::ModelProto modelWithWeight(size_t Floats) {
  onnx::ModelProto M;
  M.set_ir_version(8);
  M.set_doc_string(std::string(1000, 'd'));
  auto *G = M.mutable_graph();
  G->set_name("g");
  auto *T = G->add_initializer();
  T->set_name("W");
  T->set_data_type(onnx::TensorProto_DataType_FLOAT);
  T->add_dims(Floats);
  T->set_raw_data(std::string(Floats * 4, '\x01'));
  auto *S = G->add_initializer();
  S->set_name("shape");
  S->set_data_type(onnx::TensorProto_DataType_INT64);
  S->add_dims(2);
  S->add_int64_data(1);
  S->add_int64_data(-1);
  return M;
}

} // namespace

TEST(LeanReader, DropsLargePayloadKeepsSmallOnes) {
  std::string Bytes = modelWithWeight(100000).SerializeAsString();
  std::string Out;
  LeanReadStats Stats;
  ASSERT_FALSE(bool(leanFilterModel(Bytes, Out, Stats)));
  EXPECT_LT(Out.size(), 200u);
  EXPECT_EQ(Stats.SkippedTensors, 1u);
  EXPECT_GE(Stats.SkippedPayloadBytes, 400000u);
  onnx::ModelProto M;
  ASSERT_TRUE(M.ParseFromString(Out));
  EXPECT_TRUE(M.doc_string().empty());
  EXPECT_EQ(M.graph().initializer(0).dims(0), 100000);
  EXPECT_TRUE(M.graph().initializer(0).raw_data().empty());
  ASSERT_EQ(M.graph().initializer(1).int64_data_size(), 2);
  EXPECT_EQ(M.graph().initializer(1).int64_data(1), -1);
}

TEST(LeanReader, TruncationIsAnErrorWithOffset) {
  std::string Bytes = modelWithWeight(1000).SerializeAsString();
  Bytes.resize(Bytes.size() / 2);
  std::string Out;
  LeanReadStats Stats;
  llvm::Error E = leanFilterModel(Bytes, Out, Stats);
  ASSERT_TRUE(bool(E));
  std::string Msg = llvm::toString(std::move(E));
  EXPECT_NE(Msg.find("remain"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("byte offset"), std::string::npos) << Msg;
}

TEST(LeanReader, HugeLengthPrefixIsRejectedWithoutAllocating) {
  // Field 6 (doc_string), length-delimited, declaring 2^30 bytes.
  std::string Bytes = "\x32\x80\x80\x80\x80\x04";
  std::string Out;
  LeanReadStats Stats;
  llvm::Error E = leanFilterModel(Bytes, Out, Stats);
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("declares 1073741824 bytes"),
            std::string::npos);
}

TEST(LeanReader, DeepNestingIsRejected) {
  // graph -> node -> attribute(g) -> graph -> ... deeper than the limit.
  onnx::GraphProto G;
  G.set_name("leaf");
  for (int I = 0; I < 40; ++I) {
    onnx::GraphProto Outer;
    auto *A = Outer.add_node()->add_attribute();
    A->set_name("body");
    *A->mutable_g() = G;
    G = Outer;
  }
  onnx::ModelProto M;
  *M.mutable_graph() = G;
  std::string Out;
  LeanReadStats Stats;
  llvm::Error E = leanFilterModel(M.SerializeAsString(), Out, Stats);
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("nested deeper than 64"),
            std::string::npos);
}

TEST(LeanReader, GroupWireTypeIsNotOnnx) {
  std::string Bytes = "<ir_version: 8>"; // text syntax fed as binary
  std::string Out;
  LeanReadStats Stats;
  llvm::Error E = leanFilterModel(Bytes, Out, Stats);
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("wire type"), std::string::npos);
}

TEST(LeanReader, ExternalDataKeepsOnlyTheLocation) {
  onnx::ModelProto M;
  M.set_ir_version(8);
  auto *T = M.mutable_graph()->add_initializer();
  T->set_name("W");
  T->set_data_type(onnx::TensorProto_DataType_FLOAT);
  T->add_dims(4);
  T->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  for (auto [K, V] : {std::pair<const char *, const char *>{"offset", "4096"},
                      {"location", "weights.bin"},
                      {"length", "16"},
                      {"checksum", "abc"}}) {
    auto *E = T->add_external_data();
    E->set_key(K);
    E->set_value(V);
  }
  std::string Out;
  LeanReadStats Stats;
  ASSERT_FALSE(bool(leanFilterModel(M.SerializeAsString(), Out, Stats)));
  onnx::ModelProto Lean;
  ASSERT_TRUE(Lean.ParseFromString(Out));
  const onnx::TensorProto &W = Lean.graph().initializer(0);
  ASSERT_EQ(W.external_data_size(), 1);
  EXPECT_EQ(W.external_data(0).key(), "location");
  EXPECT_EQ(W.external_data(0).value(), "weights.bin");
  EXPECT_EQ(W.data_location(), onnx::TensorProto_DataLocation_EXTERNAL);
  EXPECT_EQ(W.dims(0), 4);
}
