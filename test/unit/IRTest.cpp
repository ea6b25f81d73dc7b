//===- IRTest.cpp - Shapes, dims and element types ------------------------===//
#include "analyzer/ir/DType.h"
#include "analyzer/ir/IR.h"
#include "llvm/Support/xxhash.h"
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

TEST(ValueShape, EqualShapesShareOneCopy) {
  Shape A{{Dim::known(2), Dim::symbolic("batch")}};
  Shape B{{Dim::known(2), Dim::symbolic("batch")}};
  Shape C{{Dim::known(2), Dim::symbolic("seq")}};
  Shape D{{Dim::known(2)}};
  EXPECT_EQ(internShape(A), internShape(B));
  EXPECT_NE(internShape(A), internShape(C));
  EXPECT_NE(internShape(A), internShape(D));
  EXPECT_NE(internShape(Shape{}), internShape(D)); // a scalar is rank 0, not unknown
  Value V, W;
  EXPECT_FALSE(V.Shp); // unknown rank
  V.Shp = A;
  W.Shp = std::optional<Shape>(B);
  EXPECT_TRUE(V.Shp == W.Shp);
  EXPECT_EQ(V.Shp->str(), "[2,batch]");
  // A change builds a new shape: W's stays.
  Shape E = *V.Shp;
  E.Dims[0] = Dim::known(3);
  V.Shp = E;
  EXPECT_EQ(V.Shp->str(), "[3,batch]");
  EXPECT_EQ(W.Shp->str(), "[2,batch]");
  V.Shp.reset();
  EXPECT_FALSE(V.Shp.has_value());
  EXPECT_EQ(std::optional<Shape>(V.Shp), std::nullopt);
}

// An interned shape keeps its element count: a value reads it without
// scanning the dims, and a shape with a symbolic or unknown dim has none.
TEST(ValueShape, InternedShapeKeepsItsElementCount) {
  Value V;
  EXPECT_EQ(V.numElements(), std::nullopt); // unknown rank
  V.Shp = Shape{{Dim::known(6), Dim::known(7)}};
  EXPECT_EQ(internShape(*V.Shp)->Elements, 42.0);
  EXPECT_EQ(V.numElements(), 42.0);
  EXPECT_TRUE(V.hasKnownShape());
  V.Shp = Shape{};
  EXPECT_EQ(V.numElements(), 1.0); // a scalar
  V.Shp = Shape{{Dim::known(6), Dim::symbolic("batch")}};
  EXPECT_EQ(V.numElements(), std::nullopt);
  EXPECT_FALSE(V.hasKnownShape());
  V.Shp = Shape{{Dim::known(6), Dim()}};
  EXPECT_EQ(V.numElements(), std::nullopt);
}

// An interned string against a literal compares the literal's own length
// (a prefix or an extension of it is not equal); a C string that is not a
// literal goes through StringRef.
TEST(InternedString, ComparesWithLiteralsAndCStrings) {
  InternedString S = InternedString::of("Constant");
  EXPECT_TRUE(S == "Constant");
  EXPECT_FALSE(S == "Const");
  EXPECT_FALSE(S == "ConstantOfShape");
  EXPECT_TRUE(S != "ConstantOfShape");
  const char *C = "Constant";
  EXPECT_TRUE(S == C);
  EXPECT_TRUE(InternedString() == "");
}

TEST(Value, BytesFollowElementType) {
  Value V;
  V.Elem = DType::BFloat16;
  V.Shp = Shape{{Dim::known(10), Dim::known(3)}};
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

// The name index grows from empty (16 slots, rehashed at 70%) and from a
// reserved size; every name added is found as the value added, a name
// differing by one character is not, and adding a name twice returns the
// first value.
TEST(Graph, NameIndexThroughGrowth) {
  for (size_t Reserve : {size_t(0), size_t(50000)}) {
    Graph G;
    G.reserveValues(Reserve);
    std::vector<Value *> Added;
    for (int I = 0; I < 20000; ++I)
      Added.push_back(G.addValue("v" + std::to_string(I), ValueKind::Intermediate));
    Value *Empty = G.addValue("", ValueKind::GraphInput);
    ASSERT_EQ(G.Values.size(), 20001u);
    for (int I = 0; I < 20000; ++I) {
      ASSERT_EQ(G.lookupLocal("v" + std::to_string(I)), Added[I]) << I;
      ASSERT_EQ(Added[I]->Id, unsigned(I));
      ASSERT_EQ(G.lookupLocal("w" + std::to_string(I)), nullptr) << I;
    }
    EXPECT_EQ(G.lookupLocal(""), Empty);
    auto [Again, New] = G.tryAddValue("v123", ValueKind::GraphInput);
    EXPECT_FALSE(New);
    EXPECT_EQ(Again, Added[123]);
    EXPECT_EQ(Again->Kind, ValueKind::Intermediate);
    EXPECT_EQ(G.Values.size(), 20001u);
  }
}

// Dim symbols are interned: equal names give equal dims (one word each).
TEST(Graph, DimSymbolsInterned) {
  Dim A = Dim::symbolic("batch"), B = Dim::symbolic(std::string("bat") + "ch");
  EXPECT_TRUE(A == B);
  EXPECT_EQ(A.symbolName(), "batch");
  EXPECT_FALSE(A == Dim::symbolic("batch2"));
  EXPECT_EQ(Dim::symbolic("batch2").symbolName(), "batch2");
  EXPECT_FALSE(Dim::symbolic("").isDetermined());
}

// A dim_param with spaced operators is the expression of its symbols (as
// optimum writes "past_sequence_length + sequence_length"); other names,
// even with a dash or dots, are one symbol.
TEST(Graph, DimFromParam) {
  Dim Sum = Dim::fromParam("past_sequence_length + sequence_length");
  EXPECT_EQ(Sum.expr(), sym::add(sym::symbol("past_sequence_length"),
                                 sym::symbol("sequence_length")));
  EXPECT_TRUE(Sum.symbolName().empty());
  EXPECT_EQ(Dim::fromParam("batch_size * num_heads").expr(),
            sym::mul(sym::symbol("batch_size"), sym::symbol("num_heads")));
  EXPECT_EQ(Dim::fromParam("batch-size").symbolName(), "batch-size");
  EXPECT_EQ(Dim::fromParam("p2o.DynamicDimension.0").symbolName(), "p2o.DynamicDimension.0");
  EXPECT_EQ(Dim::fromParam("seq").symbolName(), "seq");
  // Not an expression after all: kept as the name.
  EXPECT_EQ(Dim::fromParam("a + ").symbolName(), "a + ");
}

// A Dim is one word holding an extent, an expression or neither: each reads
// back as what was stored, and no two kinds compare equal.
TEST(Graph, DimOneWord) {
  static_assert(sizeof(Dim) == 8, "a Dim is one word");
  Dim K = Dim::known(0), Big = Dim::known(int64_t(1) << 62), S = Dim::symbolic("seq"), U;
  EXPECT_TRUE(K.isKnown());
  EXPECT_EQ(K.extent(), 0);
  EXPECT_FALSE(K.isSymbolic());
  EXPECT_EQ(K.expr(), sym::constant(0));
  EXPECT_EQ(Big.extent(), int64_t(1) << 62);
  EXPECT_FALSE(S.isKnown());
  EXPECT_EQ(S.extent(), -1);
  EXPECT_EQ(S.symbolName(), "seq");
  EXPECT_FALSE(U.isKnown());
  EXPECT_EQ(U.extent(), -1);
  EXPECT_FALSE(U.isDetermined());
  EXPECT_EQ(U.expr(), nullptr);
  EXPECT_FALSE(S == U);
  EXPECT_FALSE(K == U);
  // A negative extent is unknown, never read as an expression.
  Dim Neg = Dim::known(-5);
  EXPECT_TRUE(Neg == U);
  EXPECT_FALSE(Neg.isSymbolic());
  // An expression: a constant one is known, a compound one is no symbol.
  Dim Two = Dim::of(sym::mul(sym::constant(2), sym::symbol("seq")));
  EXPECT_TRUE(Two.isSymbolic());
  EXPECT_TRUE(Two.symbolName().empty());
  EXPECT_EQ(Two.str(), "2*seq");
  EXPECT_TRUE(Dim::of(sym::constant(7)) == Dim::known(7));
  EXPECT_TRUE(Dim::of(sym::constant(-1)) == U);
  EXPECT_TRUE(Dim::of(nullptr) == U);
  EXPECT_TRUE(Dim::of(sym::add(sym::symbol("seq"), sym::symbol("seq"))) == Two);
}

// "c42025" and "c101558" share the low 32 bits of their xxh3 hash (found by
// search): the index must tell them apart by name.
TEST(Graph, NameIndexHashCollision) {
  ASSERT_EQ(uint32_t(llvm::xxh3_64bits(llvm::StringRef("c42025"))),
            uint32_t(llvm::xxh3_64bits(llvm::StringRef("c101558"))));
  Graph G;
  Value *A = G.addValue("c42025", ValueKind::Intermediate);
  EXPECT_EQ(G.lookupLocal("c101558"), nullptr);
  Value *B = G.addValue("c101558", ValueKind::Intermediate);
  EXPECT_NE(A, B);
  EXPECT_EQ(G.lookupLocal("c42025"), A);
  EXPECT_EQ(G.lookupLocal("c101558"), B);
}

/// Inner nested in Outer; X (Outer's) and Y (Inner's) share id 0.
struct NestedGraphs {
  Graph Outer, Inner;
  Value *X, *Y, *Z;
  NestedGraphs() {
    Inner.Parent = &Outer;
    X = Outer.addValue("x", ValueKind::GraphInput);
    Y = Inner.addValue("y", ValueKind::Intermediate);
    Z = Inner.addValue("z", ValueKind::Intermediate);
  }
};

// ValueMap: the graph's own values and another graph's are kept apart
// (their ids may coincide), absent values read as the default.
// A name is a varint length and its bytes: lengths at the varint's and the
// chunk's edges, and bytes a C string would cut (a model's names are
// untrusted), read back whole.
TEST(NameArena, NamesOfEveryLengthReadBack) {
  NameArena Names;
  std::vector<std::pair<std::string, PackedName>> Kept;
  for (size_t Len : {size_t(1), size_t(127), size_t(128), size_t(16383), size_t(16384),
                     size_t(65535), size_t(70000), size_t(3)}) {
    std::string S(Len, 'a');
    S[Len / 2] = '\0';
    S.back() = char(0xff);
    Kept.push_back({S, Names.save(S)});
  }
  for (const auto &[S, P] : Kept) {
    EXPECT_EQ(P.size(), S.size());
    EXPECT_EQ(P.ref(), S);
  }
  EXPECT_TRUE(Names.save("").empty());
  EXPECT_EQ(Names.save("").ref(), "");
  EXPECT_EQ(sizeof(PackedName), sizeof(void *));
}

// After import the name index is freed; the next lookup rebuilds it, and a
// value added then still cannot take a name already used.
TEST(Graph, NameIndexRebuiltAfterRelease) {
  Graph G;
  for (int I = 0; I < 1000; ++I)
    G.addValue("v" + std::to_string(I), ValueKind::Intermediate);
  G.releaseNameIndex();
  ASSERT_NE(G.lookupLocal("v517"), nullptr);
  EXPECT_EQ(G.lookupLocal("v517")->Id, 517u);
  EXPECT_EQ(G.lookupLocal("v1000"), nullptr);
  G.releaseNameIndex();
  auto [V, Added] = G.tryAddValue("v3", ValueKind::GraphInput);
  EXPECT_FALSE(Added);
  EXPECT_EQ(V->Id, 3u);
  auto [W, New] = G.tryAddValue("w", ValueKind::GraphInput);
  EXPECT_TRUE(New);
  EXPECT_EQ(G.lookup("w"), W);
}

// A node's operand list: none, one in place, several in the graph's arena
// (at a chunk's end too), each slot null until set.
TEST(Graph, OperandListsHoldWhatTheyWereGiven) {
  Graph G;
  Value *A = G.addValue("a", ValueKind::GraphInput);
  Value *B = G.addValue("b", ValueKind::GraphInput);
  OperandList None = G.operands(0), One = G.operands({A}), Two = G.operands({A, B});
  EXPECT_TRUE(None.empty());
  EXPECT_EQ(None.begin(), None.end());
  ASSERT_EQ(One.size(), 1u);
  EXPECT_EQ(One[0], A);
  ASSERT_EQ(Two.size(), 2u);
  EXPECT_EQ(Two.front(), A);
  EXPECT_EQ(Two.back(), B);
  std::vector<OperandList> Many;
  for (int I = 0; I < 5000; ++I) // past a chunk of the arena
    Many.push_back(G.operands(3));
  OperandList Long = G.operands(10000); // longer than a chunk
  for (OperandList &L : Many) {
    for (Value *V : L)
      EXPECT_EQ(V, nullptr);
    L[2] = B;
  }
  for (Value *V : Long)
    ASSERT_EQ(V, nullptr);
  for (const OperandList &L : Many)
    EXPECT_EQ(L[2], B);
  EXPECT_EQ(Two[1], B); // untouched by the lists made after it
  llvm::ArrayRef<Value *> AsArray = Two;
  EXPECT_EQ(AsArray.size(), 2u);
}

// A value's readers: none, one in place, then a block in the arena that
// doubles (1 -> 2 -> 4 -> 8), in the order they were added, repeats kept.
TEST(Graph, UsersInOrderThroughGrowth) {
  Graph G;
  Value *V = G.addValue("v", ValueKind::GraphInput);
  EXPECT_TRUE(V->Users.empty());
  EXPECT_EQ(V->Users.size(), 0u);
  EXPECT_EQ(V->Users.begin(), V->Users.end());
  std::vector<Node *> Readers;
  for (int I = 0; I < 7; ++I)
    Readers.push_back(G.newNode());
  Readers.push_back(Readers[2]); // one node reading it at two positions
  for (size_t K = 0; K < Readers.size(); ++K) {
    G.addUser(V, Readers[K]);
    ASSERT_EQ(V->Users.size(), K + 1);
    for (size_t J = 0; J <= K; ++J)
      ASSERT_EQ(V->Users[J], Readers[J]) << J << " of " << K + 1;
  }
  std::vector<Node *> Seen(V->Users.begin(), V->Users.end());
  EXPECT_EQ(Seen, Readers);
  EXPECT_EQ(sizeof(UserList), sizeof(void *));
}

TEST(Node, AttributesKeepOrderThroughGrowth) {
  AttributeList L;
  for (int I = 0; I < 9; ++I) {
    Attribute A;
    A.Name = "a" + std::to_string(I);
    A.I = I;
    L.push_back(std::move(A));
  }
  ASSERT_EQ(L.size(), 9u);
  for (int I = 0; I < 9; ++I)
    EXPECT_EQ(L[I].Name, "a" + std::to_string(I));
  AttributeList Moved = std::move(L);
  EXPECT_EQ(Moved.size(), 9u);
  EXPECT_TRUE(L.empty());
  EXPECT_EQ(Moved.begin()[8].I, 8);
}

TEST(Graph, ValueMapOwnAndOtherValues) {
  NestedGraphs NG;
  Value *X = NG.X, *Y = NG.Y, *Z = NG.Z;
  ASSERT_EQ(X->Id, Y->Id); // both first in their graph
  ValueMap<int> M(NG.Inner, -1);
  EXPECT_EQ(M.lookup(Y), -1);
  M[Y] = 7;
  M[X] = 3;
  EXPECT_EQ(M.lookup(Y), 7);
  EXPECT_EQ(M.lookup(X), 3);
  EXPECT_EQ(M.lookup(Z), -1);
  ++M[Z];
  EXPECT_EQ(M.lookup(Z), 0);
}

// ValueSet: the same split; an unbound set keeps every value in its hash set.
TEST(Graph, ValueSetOwnAndOtherValues) {
  NestedGraphs NG;
  Value *X = NG.X, *Y = NG.Y, *Z = NG.Z;
  ASSERT_EQ(X->Id, Y->Id);
  for (bool Bound : {true, false}) {
    ValueSet S = Bound ? ValueSet(NG.Inner) : ValueSet();
    EXPECT_TRUE(S.insert(Z));
    EXPECT_FALSE(S.insert(Z));
    EXPECT_TRUE(S.insert(X));
    EXPECT_EQ(S.count(X), 1u);
    EXPECT_EQ(S.count(Y), 0u); // X's id, another graph
    EXPECT_EQ(S.count(Z), 1u);
    EXPECT_EQ(S.size(), 2u);
    std::vector<const Value *> Seen;
    S.forEach([&](const Value *V) { Seen.push_back(V); });
    std::sort(Seen.begin(), Seen.end());
    std::vector<const Value *> Expect = {X, Z};
    std::sort(Expect.begin(), Expect.end());
    EXPECT_EQ(Seen, Expect);
    ValueSet Copy = S;
    EXPECT_TRUE(Copy.insert(Y));
    EXPECT_EQ(S.count(Y), 0u);
  }
}
