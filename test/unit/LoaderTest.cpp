//===- LoaderTest.cpp - One parsed file, many loads -----------------------===//
//
// ridge plan loads one parsed model at two batch sizes, on two threads: a
// load must not change what the next one sees.
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/Importer.h"
#include "analyzer/onnx/Loader.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <thread>

using namespace ridge;

namespace {

/// A two-node model with a symbolic batch dim N, written to a temporary file.
class LoaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("ridge-loader", "onnxtxt", Path));
    std::error_code EC;
    llvm::raw_fd_ostream OS(Path, EC);
    ASSERT_FALSE(EC);
    OS << "<ir_version: 8, opset_import: [\"\" : 17]>\n"
          "g (float[N, 8] x) => (float[N, 4] y)\n"
          "<float[8, 4] w = {0.0}>\n"
          "{\n  h = MatMul(x, w)\n  y = Relu(h)\n}\n";
  }
  void TearDown() override { llvm::sys::fs::remove(Path); }

  /// y's shape after a load with Opts.
  static std::string outputShape(const ModelSource &Src, const LoadOptions &Opts) {
    DiagnosticEngine Diags;
    auto M = Src.load(Opts, Diags);
    if (!M) {
      std::string Msg = llvm::toString(M.takeError());
      ADD_FAILURE() << Msg;
      return Msg;
    }
    const Value *Y = (*M)->Main->Outputs.front();
    return Y->Shp ? Y->Shp->str() : "unranked";
  }

  llvm::SmallString<128> Path;
};

TEST_F(LoaderTest, LoadsDoNotChangeTheParsedFile) {
  LoadOptions Opts;
  auto Src = ModelSource::open(Path, Opts);
  ASSERT_TRUE(bool(Src)) << llvm::toString(Src.takeError());
  LoadOptions Two = Opts, Three = Opts, Shaped = Opts;
  Two.DimBindings.emplace_back("N", 2);
  Three.DimBindings.emplace_back("N", 3);
  Shaped.InputShapes.push_back({"x", {5, 8}});
  EXPECT_EQ(outputShape(**Src, Two), "[2,4]");
  EXPECT_EQ(outputShape(**Src, Three), "[3,4]");
  EXPECT_EQ(outputShape(**Src, Shaped), "[5,4]");
  // Nothing bound: the file's own symbolic dim, as if never loaded before.
  EXPECT_EQ(outputShape(**Src, Opts), "[N,4]");
}

TEST_F(LoaderTest, TwoThreadsLoadOneSource) {
  LoadOptions Opts;
  auto Src = ModelSource::open(Path, Opts);
  ASSERT_TRUE(bool(Src)) << llvm::toString(Src.takeError());
  std::string A, B;
  LoadOptions One = Opts, Two = Opts;
  One.DimBindings.emplace_back("N", 1);
  Two.DimBindings.emplace_back("N", 2);
  std::thread T([&] {
    for (int I = 0; I < 20; ++I)
      B = outputShape(**Src, Two);
  });
  for (int I = 0; I < 20; ++I)
    A = outputShape(**Src, One);
  T.join();
  EXPECT_EQ(A, "[1,4]");
  EXPECT_EQ(B, "[2,4]");
}

TEST_F(LoaderTest, DeclaredInputsLeaveInitializersOut) {
  LoadOptions Opts;
  auto Src = ModelSource::open(Path, Opts);
  ASSERT_TRUE(bool(Src)) << llvm::toString(Src.takeError());
  ASSERT_EQ((*Src)->inputs().size(), 1u);
  const ModelSource::Input &X = (*Src)->inputs().front();
  EXPECT_EQ(X.Name, "x");
  ASSERT_EQ(X.Dims.size(), 2u);
  EXPECT_EQ(X.Dims[0].symbolName(), "N");
  EXPECT_EQ(X.Dims[1].extent(), 8);
}

// Initializers alike share one InitializerInfo (a generated graph's half
// million weights in one external file are one record); unlike ones do not.
TEST(Importer, InitializerInfoSharedByThoseAlike) {
  onnx::ModelProto P;
  P.set_ir_version(8);
  P.add_opset_import()->set_version(17);
  onnx::GraphProto &G = *P.mutable_graph();
  G.set_name("g");
  auto AddInit = [&](const char *Name, const char *File) {
    onnx::TensorProto &T = *G.add_initializer();
    T.set_name(Name);
    T.set_data_type(onnx::TensorProto::FLOAT);
    T.add_dims(4);
    if (File) {
      T.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
      auto *E = T.add_external_data();
      E->set_key("location");
      E->set_value(File);
    } else {
      for (int I = 0; I < 4; ++I)
        T.add_float_data(0);
    }
  };
  AddInit("a1", "absent-a.bin");
  AddInit("a2", "absent-a.bin");
  AddInit("b", "absent-b.bin");
  AddInit("in", nullptr);
  onnx::NodeProto &N = *G.add_node();
  N.set_op_type("Sum");
  for (const char *In : {"a1", "a2", "b", "in"})
    N.add_input(In);
  N.add_output("y");
  onnx::ValueInfoProto &Y = *G.add_output();
  Y.set_name("y");
  DiagnosticEngine Diags;
  auto M = importModel(P, "shared-info.onnx", ".", Diags);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  const Graph &Main = *(*M)->Main;
  const Value *A1 = Main.lookup("a1"), *A2 = Main.lookup("a2"), *B = Main.lookup("b"),
              *In = Main.lookup("in");
  ASSERT_TRUE(A1 && A2 && B && In && A1->init() && A2->init() && B->init() && In->init());
  EXPECT_EQ(A1->init(), A2->init());
  EXPECT_NE(A1->init(), B->init());
  EXPECT_NE(A1->init(), In->init());
  EXPECT_TRUE(A1->init()->External && A1->init()->LocationMissing);
  EXPECT_EQ(A1->init()->Location, "absent-a.bin");
  EXPECT_EQ(B->init()->Location, "absent-b.bin");
  EXPECT_FALSE(In->init()->External);
}

/// A tensor of type Type and dims {N}, its raw_data Raw.
onnx::TensorProto rawTensor(int Type, int64_t N, std::string Raw) {
  onnx::TensorProto T;
  T.set_data_type(Type);
  T.add_dims(N);
  T.set_raw_data(std::move(Raw));
  return T;
}

TEST(SmallTensors, RawDataOfEachIntegerWidth) {
  using TP = onnx::TensorProto;
  llvm::SmallVector<int64_t, 4> Is;
  auto Ints = [&](const TP &T) {
    EXPECT_TRUE(smallTensorInts(T, Is));
    return std::vector<int64_t>(Is.begin(), Is.end());
  };
  EXPECT_EQ(Ints(rawTensor(TP::INT8, 2, std::string("\xff\x02", 2))),
            (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(Ints(rawTensor(TP::UINT8, 1, "\xff")), (std::vector<int64_t>{255}));
  EXPECT_EQ(Ints(rawTensor(TP::BOOL, 2, std::string("\x01\x00", 2))),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Ints(rawTensor(TP::INT16, 1, "\xfe\xff")), (std::vector<int64_t>{-2}));
  EXPECT_EQ(Ints(rawTensor(TP::UINT16, 1, "\xfe\xff")), (std::vector<int64_t>{65534}));
  EXPECT_EQ(Ints(rawTensor(TP::INT32, 1, "\xfd\xff\xff\xff")), (std::vector<int64_t>{-3}));
  EXPECT_EQ(Ints(rawTensor(TP::UINT32, 1, "\xff\xff\xff\xff")),
            (std::vector<int64_t>{4294967295}));
  EXPECT_EQ(Ints(rawTensor(TP::INT64, 1, std::string("\x05\0\0\0\0\0\0\0", 8))),
            (std::vector<int64_t>{5}));
  EXPECT_EQ(Ints(rawTensor(TP::UINT64, 1, std::string("\x07\0\0\0\0\0\0\0", 8))),
            (std::vector<int64_t>{7}));
  // raw_data of the wrong size: the typed field is read instead.
  TP Typed = rawTensor(TP::INT64, 2, "xyz");
  Typed.add_int64_data(8);
  Typed.add_int64_data(-9);
  EXPECT_EQ(Ints(Typed), (std::vector<int64_t>{8, -9}));
  // Neither: not read.
  EXPECT_FALSE(smallTensorInts(rawTensor(TP::INT64, 2, "xyz"), Is));
}

TEST(SmallTensors, RawDataOfFloats) {
  using TP = onnx::TensorProto;
  llvm::SmallVector<double, 4> Fs;
  ASSERT_TRUE(smallTensorFloats(rawTensor(TP::FLOAT16, 2, std::string("\x00\x3c\x00\xc0", 4)), Fs));
  EXPECT_EQ(std::vector<double>(Fs.begin(), Fs.end()), (std::vector<double>{1.0, -2.0}));
  ASSERT_TRUE(smallTensorFloats(rawTensor(TP::FLOAT, 1, std::string("\x00\x00\x40\x3f", 4)), Fs));
  EXPECT_EQ(Fs[0], 0.75);
  TP Typed = rawTensor(TP::DOUBLE, 1, "");
  Typed.clear_raw_data();
  Typed.add_double_data(2.5);
  ASSERT_TRUE(smallTensorFloats(Typed, Fs));
  EXPECT_EQ(Fs[0], 2.5);
}

TEST(InternSymbol, OneCopyPerName) {
  std::string A = "batch", B = "batch";
  llvm::StringRef SA = internString(A), SB = internString(B);
  EXPECT_EQ(SA.data(), SB.data());
  A = "changed"; // the interned copy does not follow its source
  EXPECT_EQ(SA, "batch");
  EXPECT_TRUE(internString("").empty());
}

// An op type held as one pointer reads as the string it was made from,
// shares internString's copy, and compares with strings and its kind.
TEST(InternSymbol, InternedStringIsOnePointer) {
  static_assert(sizeof(InternedString) == sizeof(void *), "one pointer");
  std::string Op = "MatMulNBits";
  InternedString A = InternedString::of(Op), B = InternedString::of("MatMulNBits");
  Op = "Relu";
  EXPECT_EQ(A.ref(), "MatMulNBits");
  EXPECT_EQ(A.size(), 11u);
  EXPECT_EQ(A.data(), internString("MatMulNBits").data());
  EXPECT_TRUE(A == B);
  EXPECT_TRUE(A == "MatMulNBits");
  EXPECT_TRUE(A != InternedString::of("MatMul"));
  EXPECT_TRUE(A.starts_with("MatMul"));
  EXPECT_TRUE(InternedString::of("").empty());
  EXPECT_TRUE(InternedString().ref().empty());
  EXPECT_TRUE(InternedString() == InternedString::of(""));
}

TEST(ValueList, AddressesStayAsItGrows) {
  ValueList L;
  NameArena Names;
  std::vector<Value *> Seen;
  for (int I = 0; I < 10000; ++I) {
    Value &V = L.add();
    V.Name = Names.save(std::to_string(I));
    Seen.push_back(&V);
  }
  ASSERT_EQ(L.size(), 10000u);
  int I = 0;
  for (Value &V : L) {
    EXPECT_EQ(&V, Seen[I]);
    EXPECT_EQ(V.Name, std::to_string(I));
    ++I;
  }
}

// A value is found by arithmetic on its id: the growing chunks (4, 8, ...
// 4096: 8188 values) and the fixed ones after, at every boundary.
TEST(ValueList, IdFindsTheValueAcrossChunkBoundaries) {
  ValueList L;
  std::vector<Value *> Seen;
  for (int I = 0; I < 8188 + 3 * 4096 + 5; ++I)
    Seen.push_back(&L.add());
  for (size_t I = 0; I < Seen.size(); ++I) {
    ASSERT_EQ(L[I], Seen[I]) << "value " << I;
    ASSERT_EQ(L[I]->Id, I);
  }
  size_t N = 0;
  for (Value &V : L)
    ASSERT_EQ(&V, Seen[N++]);
  EXPECT_EQ(N, Seen.size());
  ValueList Empty;
  EXPECT_TRUE(Empty.begin() == Empty.end());
}

} // namespace
