//===- ModelAnnotations.cpp - ridge's findings written into the model -----===//
#include "passes/report/ModelAnnotations.h"
#include "passes/report/Budget.h"
#include "analyzer/Diagnostics.h"
#include "analyzer/Format.h"
#include "analyzer/onnx/AnnotatedModel.h"
#include "passes/cost/CostModel.h"
#include "passes/roofline/Roofline.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include <cmath>

using namespace ridge;

namespace {

AnnotatedType typeOf(const Value &V) {
  AnnotatedType T;
  T.ElemType = int32_t(V.Elem);
  for (const Dim &D : V.Shp->Dims) {
    AnnotatedType::Dim Out;
    if (D.isKnown())
      Out.Value = D.extent();
    else if (D.isSymbolic())
      Out.Param = D.str();
    T.Dims.push_back(std::move(Out));
  }
  return T;
}

bool annotatable(const Value &V) {
  return V.Shp && !V.NonTensor && V.Elem != DType::Undefined;
}

/// The main-graph node N's costs belong to: N, or the node holding the
/// subgraph N is in.
const Node &topNode(const Node &N) {
  const Node *Top = &N;
  while (Top->Parent && Top->Parent->ParentNode)
    Top = Top->Parent->ParentNode;
  return *Top;
}

std::string nodeKey(const Node &N) {
  for (const Value *V : N.Outputs)
    if (V)
      return V->Name.str();
  return "name:" + N.Name.str();
}

/// What the props of one file node sum (counts: numbers, or formulas when
/// the dims hold free symbols).
struct Totals {
  sym::Count FwdFlops = 0, BwdFlops = 0, Macs = 0, Bytes = 0, FwdBytes = 0;
  double Seconds = 0;
  const NodeRoofline *First = nullptr; ///< the top node's own (its bound)
  std::string Unmodeled;               ///< the top node's reason, when not modeled
  bool AnyModeled = false;
};

void add(Totals &T, const NodeCost &NC, const NodeRoofline *R, bool IsTop) {
  double K = NC.multiplier();
  if (IsTop)
    T.First = R;
  if (!NC.Modeled) {
    if (IsTop)
      T.Unmodeled = NC.unmodeled().str();
    return;
  }
  T.AnyModeled = true;
  PhaseCount Fwd = NC.fwdCounts(), Bwd = NC.bwdCounts();
  T.FwdFlops += Fwd.Flops * K;
  T.BwdFlops += Bwd.Flops * K;
  T.Macs += Fwd.Macs * K;
  T.Bytes += (Fwd.Bytes + Bwd.Bytes) * K;
  T.FwdBytes += Fwd.Bytes * K;
  if (R)
    T.Seconds += (R->Fwd.Seconds + R->Bwd.Seconds) * K;
}

/// A count as a prop: the number exactly, or the formula.
std::string countProp(const sym::Count &C) {
  return C.isNumber() ? exactNumber(C.number()) : C.str();
}

/// A node's props; with formulas (no roofline: times need numbers) the four
/// counts only.
Props propsOf(const Totals &T, const RooflineResult *RL) {
  if (!T.AnyModeled)
    return {{"ridge.unmodeled", T.Unmodeled.empty() ? "not costed" : T.Unmodeled}};
  Props P{{"ridge.fwd_flops", countProp(T.FwdFlops)},
          {"ridge.bwd_flops", countProp(T.BwdFlops)},
          {"ridge.macs", countProp(T.Macs)},
          {"ridge.bytes", countProp(T.Bytes)}};
  if (!RL)
    return P;
  double Step = RL->stepSeconds(), Flops = T.FwdFlops.number(), Bytes = T.FwdBytes.number();
  P.emplace_back("ridge.intensity", Bytes > 0 ? exactNumber(Flops / Bytes) : std::string("inf"));
  P.emplace_back("ridge.seconds", exactNumber(T.Seconds));
  P.emplace_back("ridge.bound", T.First ? boundName(T.First->Fwd.B) : "none");
  P.emplace_back("ridge.share", exactNumber(Step > 0 ? T.Seconds / Step : 0.0));
  return P;
}

/// The model's props: analyze's totals, read from its JSON document (a
/// count there is a number, or its formula when the dims are free).
Props modelProps(const llvm::json::Value &Doc) {
  Props P;
  auto Count = [&](const char *Key, llvm::StringRef Path) {
    const llvm::json::Value *V = jsonAt(Doc, Path);
    if (!V)
      return;
    if (std::optional<double> X = V->getAsNumber())
      P.emplace_back(Key, exactNumber(*X));
    else if (std::optional<llvm::StringRef> S = V->getAsString())
      P.emplace_back(Key, S->str());
  };
  auto Str = [&](const char *Key, llvm::StringRef Path) {
    if (const llvm::json::Value *V = jsonAt(Doc, Path))
      if (std::optional<llvm::StringRef> S = V->getAsString())
        P.emplace_back(Key, S->str());
  };
  Str("ridge.mode", "options.mode");
  Str("ridge.device", "device.name");
  Str("ridge.dtype", "device.step_dtype");
  Count("ridge.step_flops", "totals.step_flops");
  Count("ridge.fwd_flops", "totals.fwd.flops");
  Count("ridge.bwd_flops", "totals.bwd.flops");
  Count("ridge.step_seconds", "time.step_seconds");
  Count("ridge.fwd_seconds", "time.fwd_seconds");
  Count("ridge.mfu", "time.mfu");
  Count("ridge.params", "params");
  Count("ridge.memory_total", "memory.total");
  Count("ridge.nodes_modeled", "coverage.modeled");
  Count("ridge.nodes", "coverage.nodes");
  return P;
}

/// External data locations are relative to the model's folder: the copy
/// keeps them, so it must be written in the same folder.
llvm::Error checkExternalData(const Model &M, llvm::StringRef Out) {
  const InitializerInfo *External = nullptr;
  for (const InitializerInfo &I : M.initializerInfos())
    if (I.External && !External)
      External = &I;
  if (!External)
    return llvm::Error::success();
  auto Folder = [](llvm::StringRef P) {
    llvm::SmallString<256> Dir(P), Real;
    llvm::sys::path::remove_filename(Dir);
    if (Dir.empty())
      Dir = ".";
    if (llvm::sys::fs::real_path(Dir, Real))
      return std::string();
    return std::string(Real);
  };
  std::string In = Folder(M.Path), Target = Folder(Out);
  if (!In.empty() && In == Target)
    return llvm::Error::success();
  return fileError(Out, llvm::formatv("--annotate: the model keeps weights in external data "
                                      "('{0}', relative to its folder); write the annotated "
                                      "copy into that folder ({1}) so that the references "
                                      "stay valid",
                                      External->Location, In.empty() ? "?" : In));
}

} // namespace

llvm::Error ridge::writeModelAnnotations(llvm::StringRef Path, const Model &M,
                                         const CostResult &C, const RooflineResult *RL,
                                         const llvm::json::Value &Doc,
                                         DiagnosticEngine &Diags) {
  if (llvm::Error E = checkExternalData(M, Path))
    return E;
  ModelAnnotations A;
  A.ModelProps = modelProps(Doc);
  for (const Function &F : M.Functions)
    A.FunctionOps.insert(F.Domain + "\x1f" + F.Name);

  // Each node's costs summed onto its main-graph node; with model-local
  // functions, also onto every "prefix/" of its name (a call's inlined body).
  llvm::StringMap<Totals> ByKey;
  for (const NodeCost &NC : C.Nodes) {
    const Node &Top = topNode(*NC.N);
    const NodeRoofline *R = RL ? &RL->Nodes[&NC - C.Nodes.data()] : nullptr;
    add(ByKey[nodeKey(Top)], NC, R, &Top == NC.N);
    if (A.FunctionOps.empty())
      continue;
    llvm::StringRef Name = Top.Name;
    for (size_t Slash = Name.find('/'); Slash != llvm::StringRef::npos;
         Slash = Name.find('/', Slash + 1))
      if (Slash > 0)
        add(ByKey["call:" + Name.take_front(Slash + 1).str()], NC, R, false);
  }
  for (const auto &E : ByKey)
    A.NodeProps[E.getKey()] = propsOf(E.getValue(), RL);

  for (const Value &V : M.Main->Values) {
    if (!annotatable(V) || V.Kind != ValueKind::Intermediate)
      continue;
    if (V.IsGraphOutput)
      A.OutputTypes[V.Name] = typeOf(V);
    else
      A.ValueInfos.emplace_back(V.Name.str(), typeOf(V));
  }
  auto Stats = writeAnnotatedModel(M.Path, Path, A);
  if (!Stats)
    return Stats.takeError();
  if (Stats->NodesNotFound)
    Diags.warn(Path, llvm::formatv("--annotate: {0} of {1} node(s) of the main graph carry "
                                   "no ridge.* props (ridge found no node of theirs)",
                                   Stats->NodesNotFound,
                                   Stats->NodesNotFound + Stats->NodesAnnotated));
  return llvm::Error::success();
}
