//===- Budget.cpp - --fail-if budgets on the report's totals --------------===//
#include "passes/report/Budget.h"
#include "analyzer/Diagnostics.h"
#include "analyzer/Format.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>
#include <cstdlib>

using namespace ridge;
using llvm::formatv;

namespace {

struct Budget {
  std::string Text, Key, Op;
  double Value = 0;
  bool Relative = false; ///< VALUE was a signed percentage
};

llvm::Expected<Budget> parseBudget(llvm::StringRef Text) {
  Budget B;
  B.Text = Text.str();
  size_t At = Text.find_first_of("<>");
  if (At == llvm::StringRef::npos || At == 0)
    return usageError(formatv("--fail-if '{0}': expected KEY>VALUE, KEY>=VALUE, KEY<VALUE "
                              "or KEY<=VALUE (e.g. step_seconds>0.5, memory.total>+5%)",
                              Text));
  B.Key = Text.take_front(At).trim().str();
  llvm::StringRef Rest = Text.drop_front(At);
  B.Op = Rest.starts_with(">=") || Rest.starts_with("<=") ? Rest.take_front(2).str()
                                                            : Rest.take_front(1).str();
  llvm::StringRef V = Rest.drop_front(B.Op.size()).trim();
  if (V.consume_back("%")) {
    B.Relative = true;
    if (!V.starts_with("+") && !V.starts_with("-"))
      return usageError(formatv("--fail-if '{0}': a percentage is a change and has a sign "
                                "(+5%, -10%)",
                                Text));
  }
  std::string Num = V.str();
  char *End = nullptr;
  B.Value = std::strtod(Num.c_str(), &End);
  if (Num.empty() || End != Num.c_str() + Num.size() || !std::isfinite(B.Value))
    return usageError(formatv("--fail-if '{0}': '{1}' is not a number", Text, V));
  return B;
}

bool holds(double X, llvm::StringRef Op, double Limit) {
  if (Op == ">")
    return X > Limit;
  if (Op == ">=")
    return X >= Limit;
  if (Op == "<")
    return X < Limit;
  return X <= Limit;
}

} // namespace

const llvm::json::Value *ridge::jsonAt(const llvm::json::Value &Doc, llvm::StringRef Path) {
  const llvm::json::Value *V = &Doc;
  llvm::SmallVector<llvm::StringRef, 4> Parts;
  Path.split(Parts, '.');
  for (llvm::StringRef P : Parts) {
    const llvm::json::Object *O = V->getAsObject();
    if (!O || !(V = O->get(P)))
      return nullptr;
  }
  return V;
}

std::optional<double> ridge::budgetValue(const llvm::json::Value &Doc, llvm::StringRef Key,
                                         std::string *Resolved) {
  std::vector<std::string> Paths{Key.str()};
  if (!Key.contains('.'))
    for (const char *Where : {"time", "totals", "memory", "inference"})
      Paths.push_back(std::string(Where) + "." + Key.str());
  for (const std::string &P : Paths)
    if (const llvm::json::Value *V = jsonAt(Doc, P))
      if (std::optional<double> X = V->getAsNumber()) {
        if (Resolved)
          *Resolved = P;
        return X;
      }
  return std::nullopt;
}

llvm::Error ridge::checkBudgets(llvm::ArrayRef<std::string> Budgets,
                                const llvm::json::Value &Doc, const llvm::json::Value *Old,
                                llvm::StringRef Path) {
  std::vector<std::string> Broken;
  for (const std::string &Text : Budgets) {
    auto B = parseBudget(Text);
    if (!B)
      return B.takeError();
    std::string Where;
    std::optional<double> New = budgetValue(Doc, B->Key, &Where);
    if (!New)
      return usageError(formatv("--fail-if '{0}': '{1}' names no number of the report "
                                "(a total such as step_seconds, step_flops, params, "
                                "memory.total, or a dotted path into the JSON output)",
                                Text, B->Key));
    if (!B->Relative) {
      if (holds(*New, B->Op, B->Value))
        Broken.push_back(formatv("{0} = {1} {2} {3} ('{4}')", Where, exactNumber(*New), B->Op,
                                 exactNumber(B->Value), Text)
                             .str());
      continue;
    }
    if (!Old)
      return usageError(formatv("--fail-if '{0}': a change in percent needs two models "
                                "(ridge diff OLD NEW); give analyze an absolute limit",
                                Text));
    std::optional<double> Before = budgetValue(*Old, B->Key);
    if (!Before)
      return usageError(formatv("--fail-if '{0}': the old model's report has no '{1}'",
                                Text, B->Key));
    double Change = *Before != 0 ? (*New - *Before) / std::fabs(*Before) * 100
                    : *New == 0  ? 0
                                 : (*New > 0 ? HUGE_VAL : -HUGE_VAL);
    if (holds(Change, B->Op, B->Value))
      Broken.push_back(formatv("{0} {1} ({2} -> {3}) {4} {5} ('{6}')", Where,
                               signedPercent(Change), exactNumber(*Before), exactNumber(*New), B->Op,
                               signedPercent(B->Value), Text)
                           .str());
  }
  if (Broken.empty())
    return llvm::Error::success();
  return fileError(Path, formatv("{0} budget(s) broken: {1}", Broken.size(),
                                 llvm::join(Broken, "; ")));
}
