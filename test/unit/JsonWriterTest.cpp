//===- JsonWriterTest.cpp - JSON doubles print short and read back exact --===//
#include "passes/report/JsonWriter.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace ridge;
namespace json = llvm::json;

namespace {
std::string print(const json::Value &V) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  printJson(OS, V);
  return S;
}
} // namespace

// Doubles print as their shortest round-trip text; integers, strings and
// the sorted keys as llvm::json prints them.
TEST(JsonWriterTest, ShortestDoublesSortedKeys) {
  json::Value V = json::Object{{"b", 0.85},
                               {"a", 5e-6},
                               {"c", int64_t(3)},
                               {"d", 3.0},
                               {"e", json::Array{0.1, 2.5, 1e20}},
                               {"f", "x\"y"},
                               {"g", nullptr},
                               {"h", true}};
  EXPECT_EQ(print(V), "{\n"
                      "  \"a\": 5e-06,\n"
                      "  \"b\": 0.85,\n"
                      "  \"c\": 3,\n"
                      "  \"d\": 3,\n"
                      "  \"e\": [\n"
                      "    0.1,\n"
                      "    2.5,\n"
                      "    1e+20\n"
                      "  ],\n"
                      "  \"f\": \"x\\\"y\",\n"
                      "  \"g\": null,\n"
                      "  \"h\": true\n"
                      "}\n");
  // llvm::json's own text of 0.85 is "0.84999999999999998": the writer's
  // differs, and both read back as the same double.
  std::string Llvm;
  llvm::raw_string_ostream OS(Llvm);
  OS << json::Value(0.85);
  EXPECT_EQ(Llvm, "0.84999999999999998");
}

// Every finite double reads back bit for bit: random bit patterns over the
// whole range, and the values where shortest forms are hardest (subnormals,
// the largest double, powers of ten's neighbours).
TEST(JsonWriterTest, DoublesReadBackExactly) {
  std::mt19937_64 Rng(42);
  std::vector<double> Xs = {5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                            0.1 + 0.2, 1.0 / 3, -0.0, 1e-7, 9007199254740993.0, -2.5e-5};
  while (Xs.size() < 20000) {
    uint64_t Bits = Rng();
    double D;
    std::memcpy(&D, &Bits, sizeof(D));
    if (std::isfinite(D))
      Xs.push_back(D);
  }
  json::Array A;
  for (double D : Xs)
    A.push_back(D);
  llvm::Expected<json::Value> Back = json::parse(print(json::Value(std::move(A))));
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  const json::Array *B = Back->getAsArray();
  ASSERT_EQ(B->size(), Xs.size());
  for (size_t I = 0; I < Xs.size(); ++I) {
    std::optional<double> D = (*B)[I].getAsNumber();
    ASSERT_TRUE(D.has_value()) << I;
    EXPECT_EQ(*D, Xs[I]) << "element " << I;
  }
}

// Integral doubles print as llvm::json prints them ("%.17g": their digits
// below 1e17, an exponent from there, "-0"), though through std::to_chars;
// 2^63 and up (no int64) in the shortest form that reads back.
TEST(JsonWriterTest, IntegralDoublesPrintAsLlvmDoes) {
  std::mt19937_64 Rng(7);
  std::vector<double> Xs = {0.0, -0.0, 1.0, -1.0, 9007199254740993.0, 99999999999999984.0,
                            1e17, -1e17, 123456789012345678.0, 4611686018427387904.0};
  while (Xs.size() < 5000) {
    double D = std::ldexp(double(Rng() >> 11), -int(Rng() % 64)); // up to 2^53
    Xs.push_back(std::floor(D) * ((Rng() & 1) ? -1 : 1));
  }
  for (double D : Xs) {
    std::string Llvm;
    llvm::raw_string_ostream OS(Llvm);
    OS << json::Value(D);
    EXPECT_EQ(print(json::Value(D)), Llvm + "\n") << D;
  }
  // 2^63 and 2^66: past int64, printed short, and read back exactly.
  for (double D : {0x1p63, 0x1p66}) {
    std::string Text = print(json::Value(D));
    llvm::Expected<json::Value> Back = json::parse(Text);
    ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
    EXPECT_EQ(Back->getAsNumber(), D) << Text;
  }
  EXPECT_EQ(print(json::Value(0x1p63)), "9223372036854775808\n");
}

// One body, both sinks: the object a body builds (ObjectSink) prints as the
// text the same body streams (StreamSink), nested objects and arrays too.
TEST(JsonWriterTest, ObjectAndStreamSinksPrintTheSame) {
  auto Body = [](auto &S) {
    S.member("a", 0.85);
    S.array("b", [](auto &E) {
      E.value(int64_t(3));
      E.object([](auto &O) {
        O.member("x", "y\"z");
        O.member("y", nullptr);
      });
    });
    S.object("c", [](auto &O) { O.member("d", 1e20); });
    S.member("e", true);
  };
  json::Object Built;
  ObjectSink OS(Built);
  Body(OS);
  std::string Streamed;
  {
    llvm::raw_string_ostream Out(Streamed);
    {
      json::OStream J(Out, 2);
      J.object([&] {
        StreamSink SS(J);
        Body(SS);
      });
    }
    Out << "\n";
  }
  EXPECT_EQ(print(json::Value(std::move(Built))), Streamed);
  EXPECT_NE(Streamed.find("\"d\": 1e+20"), std::string::npos);
}

// JSON has no infinity or NaN: such a number prints as null (llvm::json's
// own "inf" would not parse), in an object and in an array.
TEST(JsonWriterTest, NonFiniteNumbersPrintAsNull) {
  double Inf = std::numeric_limits<double>::infinity();
  json::Value V = json::Object{{"a", Inf}, {"b", -Inf}, {"c", std::nan("")},
                               {"d", json::Array{1.5, Inf}}};
  EXPECT_EQ(print(V), "{\n"
                      "  \"a\": null,\n"
                      "  \"b\": null,\n"
                      "  \"c\": null,\n"
                      "  \"d\": [\n"
                      "    1.5,\n"
                      "    null\n"
                      "  ]\n"
                      "}\n");
}
