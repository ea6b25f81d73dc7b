//===- AnalyzeJson.cpp - Reading analyze's JSON document ------------------===//
#include "passes/report/AnalyzeJson.h"

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
