//===- CostTest.cpp - Formula helpers, the op table, roofline placement ---===//
#include "passes/cost/CostModel.h"
#include "passes/roofline/Roofline.h"
#include "passes/cost/TrainingStep.h"
#include "llvm/ADT/StringSet.h"
#include <gtest/gtest.h>

using namespace ridge;

TEST(Formulas, MatmulMacsIsBatchTimesMNK) {
  EXPECT_EQ(formulas::matmulMacs(1, 64, 128, 256).number(), 64.0 * 128 * 256);
  EXPECT_EQ(formulas::matmulMacs(8, 2, 3, 4).number(), 8.0 * 2 * 3 * 4);
}

TEST(Formulas, ConvMacsCountsEveryTap) {
  // ResNet's first layer: 1x3x224x224, 64 filters 7x7 stride 2 -> 112x112.
  EXPECT_EQ(formulas::convMacs(1, 64, 112 * 112, 3, 7 * 7).number(), 118013952.0);
}

TEST(OpTable, EveryRowIsUniqueAndFindable) {
  llvm::StringSet<> Seen;
  for (const OpRule &R : allOpRules()) {
    std::string Key = std::string(R.Domain) + ":" + R.Name;
    EXPECT_TRUE(Seen.insert(Key).second) << "duplicate rule " << Key;
    EXPECT_EQ(findOpRule(R.Domain, R.Name), &R);
  }
  EXPECT_EQ(findOpRule("", "NoSuchOp"), nullptr);
  EXPECT_EQ(findOpRule("com.microsoft", "MatMul"), nullptr);
  EXPECT_NE(findOpRule("com.microsoft", "Attention"), nullptr);
  // Statistics and shapes never carry gradients.
  EXPECT_EQ(findOpRule("", "BatchNormalization")->NonDiffInputs, 0x18u);
  EXPECT_EQ(findOpRule("", "Reshape")->NonDiffInputs, 0x2u);
}

// findOpRule caches rules by the op type's address: a string reused at the
// same address with other contents (or another domain) is looked up again.
TEST(OpTable, LookupCacheChecksWhatTheAddressHolds) {
  std::string Op = "Relu";
  const OpRule *Relu = findOpRule("", Op);
  ASSERT_NE(Relu, nullptr);
  EXPECT_EQ(findOpRule("", Op), Relu); // a hit
  Op.replace(0, 4, "Tanh");
  const OpRule *Tanh = findOpRule("", Op);
  ASSERT_NE(Tanh, nullptr);
  EXPECT_STREQ(Tanh->Name, "Tanh");
  EXPECT_EQ(findOpRule("com.microsoft", Op), nullptr);
  Op.replace(0, 4, "Nope");
  EXPECT_EQ(findOpRule("", Op), nullptr);
  // Classes are the table's rows' (tabled once).
  EXPECT_EQ(opClass(*Tanh), OpClass::ElementWise);
  EXPECT_EQ(opClass(*findOpRule("", "MatMul")), OpClass::Matrix);
  EXPECT_EQ(opClass(*findOpRule("", "LayerNormalization")), OpClass::Normalization);
}

TEST(OpTable, ClipBoundsAreNotDifferentiable) {
  // Clip(x, min, max): only x carries a gradient; Clip stays element-wise
  // (fusable) though it has its own handler.
  const OpRule *Clip = findOpRule("", "Clip");
  ASSERT_NE(Clip, nullptr);
  EXPECT_EQ(Clip->NonDiffInputs, 0x6u);
  EXPECT_EQ(opClass(*Clip), OpClass::ElementWise);
  // Binary rows stay element-wise after the per-input split.
  EXPECT_EQ(opClass(*findOpRule("", "Div")), OpClass::ElementWise);
  EXPECT_EQ(opClass(*findOpRule("com.microsoft", "BiasGelu")), OpClass::ElementWise);
}

TEST(Optimizer, PerParameterCosts) {
  EXPECT_EQ(optimizerCost(Config::Optimizer::SGD).FlopsPerParam, 2);
  EXPECT_EQ(optimizerCost(Config::Optimizer::Momentum).StateBytesPerParam, 4);
  EXPECT_EQ(optimizerCost(Config::Optimizer::Adam).FlopsPerParam, 13);
  EXPECT_EQ(optimizerCost(Config::Optimizer::AdamW).FlopsPerParam, 15);
  EXPECT_EQ(optimizerCost(Config::Optimizer::AdamW).StateBytesPerParam, 8);
}

TEST(Roofline, BoundFlipsAtTheRidgePoint) {
  // pi = 100 FLOP/s, beta = 10 B/s: ridge point 10 FLOP/B.
  PhaseCost Below{90, 45, 0, 10}; // I = 9
  PhaseCost Above{110, 55, 0, 10}; // I = 11
  PhaseTime B = placePhase(Below, 100, 100, 10, 0, 0, false);
  PhaseTime A = placePhase(Above, 100, 100, 10, 0, 0, false);
  EXPECT_EQ(B.B, Bound::Memory);
  EXPECT_DOUBLE_EQ(B.Seconds, 1.0);       // 10 B / 10 B/s
  EXPECT_DOUBLE_EQ(attainable(Below, B), 90.0); // beta * I
  EXPECT_EQ(A.B, Bound::Compute);
  EXPECT_DOUBLE_EQ(A.Seconds, 1.1);       // 110 FLOP / 100 FLOP/s
  EXPECT_DOUBLE_EQ(attainable(Above, A), 100.0); // pi
}

TEST(Roofline, SumTermsAndLaunchFloor) {
  PhaseCost P{100, 0, 0, 10};
  EXPECT_DOUBLE_EQ(placePhase(P, 100, 100, 10, 0, 0, true).Seconds, 2.0);
  PhaseTime L = placePhase(P, 100, 100, 10, 0, 5, false);
  EXPECT_DOUBLE_EQ(L.Seconds, 6.0);
  EXPECT_EQ(L.B, Bound::Launch);
  // A view moves nothing and launches nothing.
  EXPECT_DOUBLE_EQ(placePhase(PhaseCost{}, 100, 100, 10, 0, 5, false).Seconds, 0.0);
}

TEST(Roofline, MatrixAndVectorFlopsUseTheirOwnPeaks) {
  // 2*MACs = 100 at 100 FLOP/s, 10 more FLOPs at 10 FLOP/s: 2 s compute.
  PhaseCost P{110, 50, 0, 1};
  EXPECT_DOUBLE_EQ(placePhase(P, 100, 10, 1000, 0, 0, false).ComputeS, 2.0);
}

// SymbolicCost keeps numbers and one symbol's fast form packed and any other
// count whole: every kind reads back as it was set, in text and value.
TEST(SymbolicCostTest, PackedCountsReadBackAsSet) {
  using sym::Count;
  auto Sym = [](const char *S) { return Count::of(sym::symbol(S)); };
  Count General = Sym("n") * Sym("b") + 3; // two symbols: kept whole
  sym::UnivariateScope InB(sym::symbol("b"));
  Count B = Sym("b");
  Count Fast = B * B * 2 + B * 0.5 + 7; // the fast form
  ASSERT_TRUE(Fast.univariate().has_value());
  Count Unknown = Count::undecided("a test");
  PhaseCount Fwd{Fast, 0, General, 12.5}, Bwd{Unknown, B, 1, Fast * 3};
  SymbolicCost S(Fwd, Bwd, General + Fast);
  auto Same = [](const Count &A, const Count &X) {
    EXPECT_EQ(A.isNumber(), X.isNumber());
    EXPECT_EQ(A.isUnknown(), X.isUnknown());
    EXPECT_EQ(A.str(), X.str());
    EXPECT_EQ(A.univariate().has_value(), X.univariate().has_value());
  };
  PhaseCount F = S.fwd(), W = S.bwd();
  Same(F.Flops, Fast);
  Same(F.Macs, 0);
  Same(F.Transcendentals, General);
  Same(F.Bytes, 12.5);
  Same(W.Flops, Unknown);
  Same(W.Macs, B);
  Same(W.Transcendentals, 1);
  Same(W.Bytes, Fast * 3);
  Same(S.savedBytes(), General + Fast);
  // Overwriting a cell drops what it held (a general count replaced by a
  // number, a number by a general one).
  S.setFwd({General, Fast, 4, 0});
  F = S.fwd();
  Same(F.Flops, General);
  Same(F.Macs, Fast);
  Same(F.Transcendentals, 4);
  EXPECT_EQ(*S.fwd().Macs.evaluate([](llvm::StringRef) { return std::optional<int64_t>(2); }),
            2 * 4 + 1 + 7);
  // Only nonzero coefficients are kept, in cell order: rewriting a cell in
  // the middle leaves the cells after it as they were, and a copy reads the
  // same.
  S.setFwdBytes(B * B * B);
  SymbolicCost Copy = S;
  for (const SymbolicCost *X : {&S, &Copy}) {
    Same(X->fwdBytes(), B * B * B);
    Same(X->fwd().Transcendentals, 4);
    W = X->bwd();
    Same(W.Macs, B);
    Same(W.Transcendentals, 1);
    Same(W.Bytes, Fast * 3);
    Same(X->savedBytes(), General + Fast);
  }
  // With no general cell, a phase is read from the packed coefficients
  // alone: cells of one, none and four coefficients side by side.
  Count Cubic = B * B * B + B * B * 2 + B * 3 + 4;
  SymbolicCost P({B * 2, 0, Cubic, 9}, {Fast, Cubic, 0, B}, 0);
  Same(P.fwd().Flops, B * 2);
  Same(P.fwd().Macs, 0);
  Same(P.fwd().Transcendentals, Cubic);
  Same(P.fwd().Bytes, 9);
  Same(P.bwd().Flops, Fast);
  Same(P.bwd().Macs, Cubic);
  Same(P.bwd().Transcendentals, 0);
  Same(P.bwd().Bytes, B);
  Same(P.savedBytes(), 0);
  // A fast form in another symbol than the cells' is kept whole.
  sym::UnivariateScope InC(sym::symbol("c"));
  Count C = Sym("c") * 5;
  ASSERT_TRUE(C.univariate().has_value());
  S.setSavedBytes(C);
  Same(S.savedBytes(), C);
  Same(S.bwd().Macs, B);
}

// valuesAt, bindCosts' path for packed costs, gives every cell what
// evaluating its Count gives, bit for bit: numbers, cubic, quadratic and
// linear cells at b = 1, 3 and 1e6 (where Horner's rule rounds).
TEST(SymbolicCostTest, ValuesAtEqualEvaluatingEachCell) {
  using sym::Count;
  sym::UnivariateScope InB(sym::symbol("b"));
  Count B = Count::of(sym::symbol("b"));
  Count Cubic = B * B * B * 0.1 + B * B * 2 + B * 3 + 4;
  Count Fast = B * B * 2 + B * 0.5 + 7;
  SymbolicCost P({B * 2, 0, Cubic, 9.25}, {Fast, Cubic, 0, B}, Fast * 3);
  ASSERT_FALSE(P.hasGeneralCells());
  for (int64_t X : {int64_t(1), int64_t(3), int64_t(1000000)}) {
    sym::Binding Bind = [X](llvm::StringRef S) {
      return S == "b" ? std::optional<int64_t>(X) : std::nullopt;
    };
    std::array<double, 9> V = P.valuesAt(double(X));
    PhaseCount F = P.fwd(), W = P.bwd();
    const Count *Cells[9] = {&F.Flops, &F.Macs, &F.Transcendentals, &F.Bytes, &W.Flops,
                             &W.Macs,  &W.Transcendentals, &W.Bytes, nullptr};
    Count Saved = P.savedBytes();
    Cells[8] = &Saved;
    for (unsigned K = 0; K < 9; ++K)
      EXPECT_EQ(V[K], *Cells[K]->evaluate(Bind)) << "cell " << K << " at b = " << X;
  }
  // Every cell a number: no symbol, the numbers themselves.
  SymbolicCost N({1, 2, 3, 4}, {5, 6, 7, 8}, 9);
  EXPECT_EQ(N.symbol(), nullptr);
  std::array<double, 9> V = N.valuesAt(0);
  for (unsigned K = 0; K < 9; ++K)
    EXPECT_EQ(V[K], double(K + 1));
}

// SymbolicSum adds costs by their coefficients and gives what adding their
// Counts gives: numbers and one symbol's fast form in coefficients, with
// multipliers; a general formula and a fast form in another symbol beside
// them, as Counts; two sums merged either way.
TEST(SymbolicSumTest, EqualsTheCountsSum) {
  using sym::Count;
  auto Sym = [](const char *S) { return Count::of(sym::symbol(S)); };
  Count General = Sym("n") * Sym("b") + 3;
  sym::UnivariateScope InB(sym::symbol("b"));
  Count B = Sym("b");
  Count Fast = B * B * 2 + B * 0.5 + 7;
  SymbolicCost X({Fast, B, 0, 12.5}, {B * 3, 0, 1, Fast}, B * 4);
  SymbolicCost Y({B * -2, 0, 0, 1}, {0, 0, 0, 0}, 2); // cancels X's b in Flops x1
  SymbolicCost G({General, 0, 0, B}, {0, General, 0, 0}, 0);
  PhaseCost NumF{5, 1, 0, 8}, NumB{2, 0, 0, 4};
  SymbolicSum S, T;
  S.add(X, 1);
  S.add(NumF, NumB, 3);
  S.add(G, 2);
  T.add(Y, 1);
  T.add(X, 0.5);
  SymbolicSum All = std::move(S);
  All.add(T);
  PhaseCount Fwd = X.fwd(), Bwd = X.bwd();
  Fwd += countsOf(NumF) * 3;
  Bwd += countsOf(NumB) * 3;
  for (auto [C, K] : {std::pair{&G, 2.0}, {&Y, 1.0}, {&X, 0.5}}) {
    Fwd += C->fwd() * K;
    Bwd += C->bwd() * K;
  }
  // Fast + 15 + 2n*b + 6 - 2b + Fast/2 = 3b^2 + 2nb - 1.25b + 31.5 (as FLOPs)
  EXPECT_EQ(All.fwd().Flops.str(), "3*b^2 + 2*b*n - 5/4*b + 63/2")
      << "the printed form is canonical";
  for (auto [A, E] : {std::pair{All.fwd(), Fwd}, {All.bwd(), Bwd}})
    for (auto [Got, Want] : {std::pair{A.Flops, E.Flops}, {A.Macs, E.Macs},
                             {A.Transcendentals, E.Transcendentals}, {A.Bytes, E.Bytes}})
      EXPECT_EQ(Got, Want) << Got.str() << " vs " << Want.str();
  EXPECT_EQ(All.savedBytes(), X.savedBytes() * 1.5 + Y.savedBytes());
  // A cost in another symbol's fast form joins as a Count.
  sym::UnivariateScope InC(sym::symbol("c"));
  SymbolicCost Z({Sym("c") * 5, 0, 0, 0}, {0, 0, 0, 0}, 0);
  ASSERT_EQ(Z.symbol(), sym::symbol("c"));
  All.add(Z, 1);
  EXPECT_EQ(All.fwd().Flops, Fwd.Flops + Sym("c") * 5);
  EXPECT_EQ(All.fwd().Macs, Fwd.Macs);
}

// A cost's saved activations are kept as operand positions: a bit each for
// the first 32 (inputs, then outputs), a list past them. A variadic node
// (Max of 40 inputs) keeps one past the 32nd as well as one below.
TEST(NodeCost, SavedPositionsPastThe32ndAreKept) {
  Graph G;
  Node N;
  llvm::SmallVector<Value *, 41> Ins;
  for (int I = 0; I < 40; ++I)
    Ins.push_back(G.addValue("x" + std::to_string(I), ValueKind::GraphInput));
  Ins.push_back(Ins[3]); // read twice: kept once, at its first position
  N.Inputs = G.operands(Ins);
  N.Outputs = G.operands({G.addValue("y", ValueKind::Intermediate)});
  NodeCost NC;
  NC.N = &N;
  EXPECT_TRUE(NC.saved().empty());
  NC.keepSaved(N.Inputs[35]);
  NC.keepSaved(N.Outputs[0]);
  NC.keepSaved(N.Inputs[40]);
  NC.keepSaved(N.Inputs[3]);
  NC.keepSaved(N.Inputs[35]);
  NC.keepSaved(G.addValue("elsewhere", ValueKind::GraphInput)); // not an operand
  NC.keepSaved(nullptr);
  llvm::SmallVector<const Value *, 4> Kept = NC.saved();
  ASSERT_EQ(Kept.size(), 3u);
  EXPECT_EQ(Kept[0], N.Inputs[3]); // bit 3
  EXPECT_EQ(Kept[1], N.Inputs[35]); // past 32: in the order kept
  EXPECT_EQ(Kept[2], N.Outputs[0]); // position 41
  NC.clearSaved();
  EXPECT_TRUE(NC.saved().empty());
}

// What few nodes have lives in one box: the defaults read without one, a
// value set reads back, and setting a default allocates nothing to hold it.
TEST(NodeCost, RareMembersDefaultAndReadBack) {
  NodeCost NC;
  EXPECT_EQ(NC.multiplier(), 1.0);
  EXPECT_EQ(NC.savedBytes(), 0.0);
  EXPECT_TRUE(NC.unmodeled().empty());
  NC.setMultiplier(1);
  NC.setSavedBytes(0);
  NC.setUnmodeled("");
  NodeCost Copy = NC;
  EXPECT_EQ(Copy.multiplier(), 1.0);
  NC.setMultiplier(12);
  NC.setSavedBytes(4096);
  NC.setUnmodeled("no cost rule");
  NodeCost Kept = NC; // a deep copy
  NC.setUnmodeled("");
  EXPECT_EQ(Kept.multiplier(), 12.0);
  EXPECT_EQ(Kept.savedBytes(), 4096.0);
  EXPECT_EQ(Kept.unmodeled(), "no cost rule");
  EXPECT_TRUE(NC.unmodeled().empty());
  EXPECT_EQ(NC.multiplier(), 12.0);
  // One per node at a million nodes: the layout the header promises.
  EXPECT_LE(sizeof(NodeCost), 96u);
}

// elementCount makes a symbolic shape's formula once per shape and symbol
// scope: values of one shape read the same formula, a scope in the shape's
// symbol gives the fast form and leaving it the general one again, and an
// unknown dim is never served from what another value of a shape met.
TEST(ElementCount, OneFormulaPerShapeAndScope) {
  using sym::Count;
  Shape BS{{Dim::known(4), Dim::symbolic("memo_b"), Dim::known(3)}};
  Value V, W;
  V.Shp = BS;
  W.Shp = BS;
  Count Outside = elementCount(&V);
  ASSERT_TRUE(Outside.isFormula());
  EXPECT_EQ(Outside.str(), "12*memo_b");
  EXPECT_FALSE(Outside.univariate().has_value());
  EXPECT_TRUE(elementCount(&W) == Outside);
  {
    sym::UnivariateScope InB(sym::symbol("memo_b"));
    Count Inside = elementCount(&W);
    ASSERT_TRUE(Inside.univariate().has_value());
    EXPECT_EQ((*Inside.univariate())[1], 12);
    EXPECT_EQ(Inside.str(), "12*memo_b");
    EXPECT_TRUE(elementCount(&V) == Inside);
  }
  EXPECT_FALSE(elementCount(&V).univariate().has_value());
  // Bound: the numbers, from the interned shape.
  Value K;
  K.Shp = Shape{{Dim::known(4), Dim::known(5)}};
  EXPECT_EQ(elementCount(&K).number(), 20);
  K.Elem = DType::Float;
  EXPECT_EQ(valueCount(&K, std::nullopt).number(), 80);
  EXPECT_EQ(valueCount(&K, 2.0).number(), 40); // --dtype fp16
  // A dim nobody knows: undecided each time, with the value's name.
  Graph G;
  Value *U = G.addValue("u_memo", ValueKind::GraphInput);
  U->Shp = Shape{{Dim::symbolic("memo_b"), Dim()}};
  for (int I = 0; I < 2; ++I) {
    sym::CountScope Scope;
    EXPECT_TRUE(elementCount(U).isUnknown());
    EXPECT_NE(Scope.reason().find("u_memo"), std::string::npos) << Scope.reason();
  }
}
