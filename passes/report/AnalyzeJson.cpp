//===- AnalyzeJson.cpp - Analyze's JSON document: shared pieces -----------===//
#include "passes/report/AnalyzeJson.h"
#include "passes/cost/CostModel.h"
#include "passes/report/JsonWriter.h"
#include "llvm/ADT/STLExtras.h"

llvm::json::Array ridge::graphValuesJson(const Model &M, bool Outputs) {
  llvm::json::Array Out;
  for (const Value *V : Outputs ? M.Main->Outputs : M.Main->Inputs)
    if (Outputs || !V->isInitializer())
      Out.push_back(llvm::json::Object{{"name", V->Name.ref()}, {"type", V->typeStr()}});
  return Out;
}

llvm::json::Array ridge::unmodeledJson(const CostResult &C) {
  llvm::json::Array Out;
  for (const auto &[What, Count] : C.UnmodeledOps)
    Out.push_back(llvm::json::Object{{"op", What}, {"count", int64_t(Count)}});
  return Out;
}

double ridge::jsonNumber(const llvm::json::Object &O, llvm::StringRef Key) {
  const llvm::json::Value *V = O.get(Key);
  return V ? V->getAsNumber().value_or(0) : 0;
}

double ridge::jsonNodeSeconds(const llvm::json::Object &Node) {
  double S = 0;
  for (const char *Phase : {"fwd_time", "bwd_time"})
    if (const llvm::json::Object *T = Node.getObject(Phase))
      S += jsonNumber(*T, "seconds");
  return S * Node.getNumber("multiplier").value_or(1);
}

void ridge::writeJsonWithStreamedArray(llvm::raw_ostream &OS, const llvm::json::Object &Doc,
                                       llvm::StringRef Key,
                                       llvm::function_ref<void(llvm::json::OStream &)> Items) {
  // The keys in the order llvm::json prints an object's: sorted.
  std::vector<llvm::StringRef> Keys{Key};
  for (const auto &E : Doc)
    Keys.push_back(E.first);
  llvm::sort(Keys);
  llvm::json::OStream J(OS, 2);
  J.object([&] {
    for (llvm::StringRef K : Keys) {
      if (K == Key) {
        J.attributeArray(K, [&] { Items(J); });
      } else {
        J.attributeBegin(K);
        writeJson(J, *Doc.get(K));
        J.attributeEnd();
      }
    }
  });
  OS << "\n";
}
