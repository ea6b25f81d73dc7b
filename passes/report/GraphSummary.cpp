//===- GraphSummary.cpp - Nodes by op type, parameters, interface ---------===//
#include "passes/report/GraphSummary.h"
#include "passes/report/JsonWriter.h"
#include "analyzer/Format.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include <algorithm>

using namespace ridge;

llvm::Expected<GraphSummaryResult> GraphSummaryAnalysis::run(Model &M,
                                                             AnalysisManager &AM) {
  GraphSummaryResult R;
  llvm::StringMap<size_t> Counts;
  M.Main->walk([&](const Node &N) {
    ++R.Nodes;
    if (N.Parent != M.Main.get())
      ++R.SubgraphNodes;
    ++Counts[N.qualifiedOpType()];
  });
  for (const auto &E : Counts)
    R.OpCounts.emplace_back(E.first().str(), E.second);
  std::sort(R.OpCounts.begin(), R.OpCounts.end(), [](auto &A, auto &B) {
    return A.second != B.second ? A.second > B.second : A.first < B.first;
  });
  auto CountInits = [&](const Graph &G) {
    for (const Value *V : G.Initializers) {
      ++R.Initializers;
      double Bytes = V->numBytes().value_or(0);
      if (isFloatingPoint(V->Elem)) {
        R.Params += V->numElements().value_or(0);
        R.ParamBytes += Bytes;
      } else {
        R.OtherInitBytes += Bytes;
      }
    }
  };
  CountInits(*M.Main);
  M.Main->walk([&](const Node &N) {
    for (const Graph *G : N.subgraphs())
      CountInits(*G);
  });
  return R;
}

namespace {

llvm::json::Array valuesJson(llvm::ArrayRef<Value *> Vs, bool SkipInits) {
  llvm::json::Array A;
  for (const Value *V : Vs)
    if (!SkipInits || !V->isInitializer())
      A.push_back(llvm::json::Object{{"name", V->Name.ref()}, {"type", V->typeStr()}});
  return A;
}

} // namespace

llvm::Error PrintSummaryPass::run(Model &M, AnalysisManager &AM) {
  auto R = AM.getResult<GraphSummaryAnalysis>();
  if (!R)
    return R.takeError();
  llvm::raw_ostream &OS = *AM.config().Out;
  const Graph &G = *M.Main;
  if (AM.config().Format == OutputFormat::Json) {
    llvm::json::Array Ops;
    for (const auto &[Op, N] : R->OpCounts)
      Ops.push_back(llvm::json::Object{{"op", Op}, {"count", int64_t(N)}});
    llvm::json::Object Opsets;
    for (const auto &[D, V] : M.Opsets)
      Opsets[D.empty() ? "ai.onnx" : D] = V;
    llvm::json::Object Doc{
        {"schema", "ridge.summary/1"},
        {"model", M.Path},
        {"ir_version", M.IrVersion},
        {"opsets", std::move(Opsets)},
        {"inputs", valuesJson(G.Inputs, true)},
        {"outputs", valuesJson(G.Outputs, false)},
        {"nodes", int64_t(R->Nodes)},
        {"subgraph_nodes", int64_t(R->SubgraphNodes)},
        {"ops", std::move(Ops)},
        {"initializers", int64_t(R->Initializers)},
        {"params", R->Params},
        {"param_bytes", R->ParamBytes},
        {"warnings", llvm::json::Array(AM.diags().warnings())}};
    ridge::printJson(OS, llvm::json::Value(std::move(Doc)));
    return llvm::Error::success();
  }
  OS << "model: " << M.Path << " (ir " << M.IrVersion;
  for (const auto &[D, V] : M.Opsets)
    OS << ", " << (D.empty() ? "ai.onnx" : D) << ' ' << V;
  OS << ")\n";
  for (const Value *V : G.Inputs)
    if (!V->isInitializer())
      OS << "input:  " << V->Name << ' ' << V->typeStr() << '\n';
  for (const Value *V : G.Outputs)
    OS << "output: " << V->Name << ' ' << V->typeStr() << '\n';
  OS << llvm::formatv("nodes: {0}", R->Nodes);
  if (R->SubgraphNodes)
    OS << llvm::formatv(" ({0} in subgraphs)", R->SubgraphNodes);
  OS << '\n';
  for (const auto &[Op, N] : R->OpCounts)
    OS << llvm::formatv("  {0,-28} {1,6}\n", Op, N);
  OS << "parameters: " << withCommas(R->Params) << " ("
     << withCommas(R->ParamBytes) << " bytes) in " << R->Initializers
     << " initializers\n";
  return llvm::Error::success();
}
