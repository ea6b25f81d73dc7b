//===- IRTest.cpp - Shapes, dims and element types ------------------------===//
#include "analyzer/DType.h"
#include "analyzer/IR.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace ridge;

TEST(Shape, KnownDimsMultiply) {
  Shape S;
  S.Dims = {Dim::known(2), Dim::known(3), Dim::known(4)};
  ASSERT_TRUE(S.isFullyKnown());
  EXPECT_EQ(*S.numElements(), 24.0);
  EXPECT_EQ(S.str(), "[2,3,4]");
}

TEST(Shape, SymbolicDimIsNotKnown) {
  Shape S;
  S.Dims = {Dim::symbolic("batch"), Dim::known(128), Dim{}};
  EXPECT_FALSE(S.isFullyKnown());
  EXPECT_FALSE(S.numElements().has_value());
  EXPECT_EQ(S.str(), "[batch,128,?]");
}

TEST(Shape, ScalarHasOneElement) {
  Shape S;
  EXPECT_EQ(*S.numElements(), 1.0);
  EXPECT_EQ(S.str(), "[]");
}

TEST(Shape, HugeDimsDoNotWrapAround) {
  // 2^62 * 2^62 * 16 overflows any 64-bit integer; as a double it is 2^128.
  Shape S;
  S.Dims = {Dim::known(int64_t(1) << 62), Dim::known(int64_t(1) << 62), Dim::known(16)};
  EXPECT_DOUBLE_EQ(*S.numElements(), std::ldexp(1.0, 128));
}

TEST(Value, BytesFollowElementType) {
  Value V;
  V.Elem = DType::BFloat16;
  V.Shp.emplace();
  V.Shp->Dims = {Dim::known(10), Dim::known(3)};
  EXPECT_EQ(*V.numBytes(), 60.0);
  EXPECT_EQ(V.typeStr(), "bf16[10,3]");
  V.Elem = DType::Int4; // 4-bit types are half a byte
  EXPECT_EQ(*V.numBytes(), 15.0);
}

TEST(DType, OnnxCodesRoundTrip) {
  EXPECT_EQ(dtypeFromOnnx(1), DType::Float);
  EXPECT_EQ(dtypeFromOnnx(16), DType::BFloat16);
  EXPECT_FALSE(dtypeFromOnnx(99).has_value());
  EXPECT_EQ(dtypeName(DType::Float16), "f16");
  EXPECT_EQ(parseDType("bfloat16"), DType::BFloat16);
  EXPECT_EQ(parseDType("fp32"), DType::Float);
  EXPECT_FALSE(parseDType("fp7").has_value());
  EXPECT_TRUE(isFloatingPoint(DType::Float8E4M3FN));
  EXPECT_FALSE(isFloatingPoint(DType::Int64));
}

TEST(Graph, LookupSeesEnclosingGraphs) {
  Graph Outer, Inner;
  Inner.Parent = &Outer;
  Value *X = Outer.addValue("x", ValueKind::GraphInput);
  Value *Y = Inner.addValue("y", ValueKind::Intermediate);
  EXPECT_EQ(Inner.lookup("x"), X);
  EXPECT_EQ(Inner.lookup("y"), Y);
  EXPECT_EQ(Inner.lookupLocal("x"), nullptr);
  EXPECT_EQ(Outer.lookup("y"), nullptr);
}
