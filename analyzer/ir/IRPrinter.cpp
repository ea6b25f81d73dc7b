//===- IRPrinter.cpp - ridge's stable text form of the IR -----------------===//
//
//   model 'FILE' ir=8 producer='pytorch 1.13' opsets=ai.onnx:17
//   graph @main {
//     input %X : f32[N,784]
//     init %W : f32[784,256]
//     %h : f32[N,256] = Gemm "fc1" (%X, %W, %b) {transB=1}
//     output %h
//   }
//
// One line per value or node, in topological order, attributes sorted by
// name: what lit tests CHECK.
//
//===----------------------------------------------------------------------===//
#include "analyzer/ir/IRPrinter.h"
#include "llvm/Support/FormatVariadic.h"
#include <algorithm>

using namespace ridge;

namespace {

void printAttrValue(const Attribute &A, llvm::raw_ostream &OS) {
  using K = Attribute::Kind;
  auto List = [&](const auto &Items, auto Fn) {
    OS << '[';
    for (size_t I = 0; I < Items.size(); ++I) {
      if (I)
        OS << ',';
      if (I == 16) {
        OS << "...(" << Items.size() << ")";
        break;
      }
      Fn(Items[I]);
    }
    OS << ']';
  };
  switch (A.K) {
  case K::Float: OS << llvm::formatv("{0}", A.F); break;
  case K::Int: OS << A.I; break;
  case K::String: OS << '"'; OS.write_escaped(A.str().size() > 64 ? (A.str().substr(0, 64) + "...").str() : A.str().str()); OS << '"'; break;
  case K::Ints: List(A.Ints, [&](int64_t X) { OS << X; }); break;
  case K::Floats: List(A.floats(), [&](double X) { OS << llvm::formatv("{0}", X); }); break;
  case K::Strings: List(A.strings(), [&](const std::string &X) { OS << '"'; OS.write_escaped(X); OS << '"'; }); break;
  case K::Tensor: {
    OS << "tensor<" << dtypeName(A.TensorElem) << '[';
    for (size_t I = 0; I < A.tensorDims().size(); ++I)
      OS << (I ? "," : "") << A.tensorDims()[I];
    OS << "]>";
    break;
  }
  case K::Graph:
  case K::Graphs:
    List(A.graphs(), [&](const std::unique_ptr<Graph> &G) { OS << '@' << G->Name; });
    break;
  default: OS << "<" << static_cast<int>(A.K) << ">"; break;
  }
}

void printGraph(const Graph &G, llvm::raw_ostream &OS, unsigned Indent) {
  std::string Pad(Indent, ' ');
  OS << Pad << "graph @" << G.Name << " {\n";
  for (const Value *V : G.Inputs)
    if (!V->isInitializer())
      OS << Pad << "  input %" << V->Name << " : " << V->typeStr() << "\n";
  for (const Value *V : G.Initializers) {
    OS << Pad << "  init %" << V->Name << " : " << V->typeStr();
    if (V->init() && V->init()->External)
      OS << " external='" << V->init()->Location << "'"
         << (V->init()->LocationMissing ? " (missing)" : "");
    OS << "\n";
  }
  for (const Value *V : G.Captures)
    OS << Pad << "  capture %" << V->Name << "\n";
  for (const auto &N : G.Nodes) {
    OS << Pad << "  ";
    bool First = true;
    for (const Value *V : N->Outputs) {
      if (!First)
        OS << ", ";
      First = false;
      if (V)
        OS << '%' << V->Name << " : " << V->typeStr();
      else
        OS << "_";
    }
    OS << (N->Outputs.empty() ? "" : " = ");
    if (!N->Domain.empty())
      OS << N->Domain << '.';
    OS << N->OpType << " \"" << N->Name << "\" (";
    for (size_t I = 0; I < N->Inputs.size(); ++I) {
      OS << (I ? ", " : "");
      if (N->Inputs[I])
        OS << '%' << N->Inputs[I]->Name;
      else
        OS << '_';
    }
    OS << ')';
    if (!N->Attrs.empty()) {
      std::vector<const Attribute *> Sorted;
      for (const Attribute &A : N->Attrs)
        Sorted.push_back(&A);
      std::sort(Sorted.begin(), Sorted.end(),
                [](auto *A, auto *B) { return A->Name < B->Name; });
      OS << " {";
      for (size_t I = 0; I < Sorted.size(); ++I) {
        OS << (I ? ", " : "") << Sorted[I]->Name << '=';
        printAttrValue(*Sorted[I], OS);
      }
      OS << '}';
    }
    OS << '\n';
    for (const Graph *Sub : N->subgraphs())
      printGraph(*Sub, OS, Indent + 4);
  }
  for (const Value *V : G.Outputs)
    OS << Pad << "  output %" << V->Name << " : " << V->typeStr() << "\n";
  OS << Pad << "}\n";
}

} // namespace

void ridge::printModel(const Model &M, llvm::raw_ostream &OS) {
  OS << "model '" << M.Path << "' ir=" << M.IrVersion;
  if (!M.Producer.empty())
    OS << " producer='" << M.Producer << "'";
  OS << " opsets=";
  bool First = true;
  for (const auto &[D, V] : M.Opsets) {
    OS << (First ? "" : ",") << (D.empty() ? "ai.onnx" : D) << ':' << V;
    First = false;
  }
  OS << '\n';
  for (const Function &F : M.Functions) {
    OS << "function " << F.Domain << '.' << F.Name << '\n';
    printGraph(*F.Body, OS, 2);
  }
  printGraph(*M.Main, OS, 0);
}
