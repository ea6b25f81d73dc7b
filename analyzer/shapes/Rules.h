//===- Rules.h - What ridge's shape rules share -----------------*- C++ -*-===//
//
// Internal to analyzer/shapes/: the dim arithmetic (Support.cpp), the small
// integer values propagated beside shapes, the inferencer and a rule's view
// of one node (Ctx), and every rule, declared by the file of its op family.
// The op tables that map op types to rules are in RuleTable.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_SHAPES_RULES_H
#define RIDGE_ANALYZER_SHAPES_RULES_H

#include "analyzer/shapes/ShapeInference.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include <cstdint>
#include <limits>
#include <optional>

namespace ridge::shapes {

using llvm::ArrayRef;
using llvm::SmallVector;
using llvm::SmallVectorImpl;
using llvm::StringRef;

/// Values (integer tensors) followed element by element: IR.h's bound.
constexpr size_t MaxValueElems = MaxIntValueElems;
/// Vectors of unknown elements made up to join known ones (a shape with
/// some dims computed at run time): shape vectors are short.
constexpr size_t MaxPartialElems = 16;

constexpr int64_t I64Min = std::numeric_limits<int64_t>::min();
using i128 = __int128;
constexpr int64_t MaxExtent = int64_t(1) << 62;

//===----------------------------------------------------------------------===//
// Dims and shapes (Support.cpp)
//===----------------------------------------------------------------------===//
bool isIntType(DType T);
int64_t ceilDiv(int64_t A, int64_t B);
bool extentOk(i128 V);
bool mulOk(int64_t A, int64_t B, int64_t &R);
bool addOk(int64_t A, int64_t B, int64_t &R);
/// Set (on this thread) when dim arithmetic overflowed int64: the
/// inferencer reports the node (a binding too large for the graph).
extern thread_local bool DimOverflow;
/// Set (on this thread) by broadcastDim when it paired a symbolic dim with a
/// fixed extent above 1: the inferencer records them with the node.
extern thread_local SmallVector<std::pair<sym::ExprRef, int64_t>, 2> AssumedBroadcasts;
Dim productDim(ArrayRef<Dim> Ds);
Dim addDims(const Dim &A, const Dim &B);
Dim divDim(const Dim &A, int64_t F);
Dim mulDim(const Dim &A, int64_t F);
const Dim &mergeDim(const Dim &A, const Dim &B);
Dim unionDim(const Dim &A, const Dim &B);
bool broadcastDim(const Dim &A, const Dim &B, Dim &Out);
bool broadcastInto(Shape &Out, const Shape &S);
bool normAxis(int64_t &A, int64_t Rank);
/// S's dims when every one is known.
bool knownDims(const Shape *S, SmallVectorImpl<int64_t> &Out);
/// The flat (row-major) index into an input of dims In, broadcast to dims
/// Out (ONNX's multidirectional rule, In's rank at most Out's), of output
/// element K.
size_t broadcastSource(ArrayRef<int64_t> Out, ArrayRef<int64_t> In, size_t K);
void refineShape(Value &V, const Shape &S);

//===----------------------------------------------------------------------===//
// Small integer values
//===----------------------------------------------------------------------===//
/// One element of a propagated integer value: known, a symbolic expression
/// (the value of Shape of a [batch, 2*seq] input is [batch, 2*seq]), or
/// unknown.
struct IV {
  int64_t V = 0;
  bool Known = false;
  sym::ExprRef E = nullptr; ///< when not known: the expression, if any

  static IV known(int64_t X) {
    IV R;
    R.V = X;
    R.Known = true;
    return R;
  }
  /// E as a value: known when constant, unknown when nullptr.
  static IV of(sym::ExprRef E) {
    if (!E)
      return IV{};
    if (std::optional<int64_t> C = E->constant())
      return known(*C);
    IV R;
    R.E = E;
    return R;
  }
  static IV fromDim(const Dim &D) {
    if (D.isKnown())
      return known(D.extent());
    return of(D.expr());
  }
  /// The value as an expression (nullptr: unknown).
  sym::ExprRef expr() const { return Known ? sym::constant(V) : E; }
  bool isSymbolic() const { return !Known && E; }
  bool is(int64_t X) const { return Known && V == X; }
  /// Certainly equal: the same known number or the same expression.
  bool sameAs(const IV &O) const {
    if (Known)
      return O.Known && V == O.V;
    return !O.Known && E && E == O.E;
  }
  /// As a dim; false when known and negative.
  bool toDim(Dim &D) const {
    if (Known) {
      if (V < 0)
        return false;
      D = Dim::known(V);
    } else {
      D = Dim::of(E);
    }
    return true;
  }
};

using IVec = SmallVector<IV, 4>;

using FVec = SmallVector<double, 4>;

enum class BinOp {
  None, Add, Sub, Mul, Div, Mod, Max, Min, Pow, Equal, Less, Greater,
  LessEq, GreaterEq, And, Or, Xor
};

BinOp binOpOf(StringRef Op);
IV evalInt(BinOp Op, const IV &A, const IV &B, bool FMod);
IV evalSymbolic(BinOp Op, const IV &A, const IV &B, bool FMod);
bool evalFloat(BinOp Op, double X, double Y, double &R);

//===----------------------------------------------------------------------===//
// The inferencer and a rule's view of one node
//===----------------------------------------------------------------------===//
class Ctx;

using RuleFn = void (*)(Ctx &);

/// The elements of a sequence (or the content of an optional): their type
/// and the union of their shapes.
struct ElemInfo {
  DType Elem = DType::Undefined;
  std::optional<Shape> Shp;
  bool Empty = false; ///< no element yet (SequenceEmpty)
  /// Each element's shape, in order, while the sequence's composition is
  /// known (built from SequenceEmpty/Construct/Insert/Erase at known
  /// positions, or SplitToSequence); none once a loop or a branch makes it.
  std::optional<std::vector<std::optional<Shape>>> Items;
};

void addElement(ElemInfo &E, DType T, const std::optional<Shape> &S);

class Inferencer {
public:
  explicit Inferencer(const Model &M) : M(M) {
    auto It = M.Opsets.find("");
    DefaultOpset = It == M.Opsets.end() ? 0 : It->second;
  }
  void inferGraph(Graph &G);
  void inferNode(Node &N);
  /// Infers Body with its inputs typed as Inputs (null: keep the declared
  /// type). Where a loop-carried output disagrees with its input (the state
  /// changes shape between iterations), the body is inferred again with the
  /// input generalized: a dim that differs becomes what Generalize gives
  /// for (state K, dim I, the input's dim, the output's), unknown when it
  /// gives nothing. Carried: pairs (body input, body output).
  using GeneralizeFn =
      llvm::function_ref<Dim(size_t K, size_t I, const Dim &In, const Dim &Out)>;
  void inferBody(Graph &Body, ArrayRef<std::pair<Value *, Value *>> Carried,
                 GeneralizeFn Generalize = nullptr);
  void inferCall(Node &N, const Function &F);

  const Model &M;
  int64_t DefaultOpset = 0;
  llvm::DenseMap<const Value *, IVec> Vals;
  llvm::DenseMap<const Value *, FVec> FVals;
  /// Element type of sequence and optional values (the IR types them not).
  llvm::DenseMap<const Value *, ElemInfo> Elems;
  llvm::StringSet<> UnknownOps;
  std::map<std::string, DataSymbol> DataSymbols;
  std::vector<ShapeConflict> Conflicts;
  std::vector<BroadcastAssumption> Assumptions;
  llvm::DenseMap<const Node *, sym::ExprRef> LoopTrips;
  /// Nodes whose inputs break their op's rules (ONNX Runtime refuses them):
  /// why, in words.
  llvm::DenseMap<const Node *, std::string> Invalid;
  /// Values known to come (or not) from a Shape of a tensor whose shape is
  /// lost (runtimeExtent's check), cleared when a body's shapes are
  /// inferred again.
  llvm::DenseMap<const Value *, bool> LostShapes;
  unsigned CallDepth = 0;
};

class Ctx {
public:
  Ctx(Inferencer &Inf, Node &N, int64_t Opset) : Inf(Inf), N(N), Opset(Opset) {}
  Inferencer &Inf;
  Node &N;
  int64_t Opset;

  /// The node's inputs break its op's rules: its output keeps no inferred
  /// shape, and the cost pass reports it unmodeled with Why.
  void invalid(const llvm::Twine &Why) { Inf.Invalid.try_emplace(&N, Why.str()); }

  Value *in(unsigned I) const { return N.input(I); }
  bool has(unsigned I) const { return N.input(I) != nullptr; }
  const Shape *shape(unsigned I) const {
    Value *V = in(I);
    return V && V->Shp ? &*V->Shp : nullptr;
  }
  int64_t rank(unsigned I) const {
    const Shape *S = shape(I);
    return S ? int64_t(S->rank()) : -1;
  }
  DType elem(unsigned I) const {
    Value *V = in(I);
    return V ? V->Elem : DType::Undefined;
  }
  unsigned numOuts() const { return N.Outputs.size(); }
  Value *out(unsigned O) const { return N.output(O); }

  void setType(unsigned O, DType T) const {
    Value *V = out(O);
    if (V && V->Elem == DType::Undefined && T != DType::Undefined)
      V->Elem = T;
  }
  void set(unsigned O, DType T, const Shape &S) const {
    setType(O, T);
    if (Value *V = out(O)) {
      noteConflict(*V, S);
      refineShape(*V, S);
    }
  }
  void set(unsigned O, DType T, Shape &&S) const {
    setType(O, T);
    Value *V = out(O);
    if (V && !V->Shp) {
      V->Shp = std::move(S);
    } else if (V) {
      noteConflict(*V, S);
      refineShape(*V, S);
    }
  }
  void setDims(unsigned O, DType T, ArrayRef<Dim> D) const {
    Shape S;
    S.Dims.assign(D.begin(), D.end());
    set(O, T, std::move(S));
  }
  /// Output O gets input I's shape; T (Undefined: input I's type).
  void copy(unsigned O, unsigned I, DType T = DType::Undefined) const {
    if (T == DType::Undefined)
      T = elem(I);
    if (const Shape *S = shape(I))
      set(O, T, *S);
    else
      setType(O, T);
  }
  /// Rank known, every dim unknown.
  void setRank(unsigned O, DType T, size_t R) const {
    Shape S;
    S.Dims.resize(R);
    set(O, T, std::move(S));
  }

  /// The elements of input I's value, when its length is known.
  bool vals(unsigned I, IVec &Out) const {
    Value *V = in(I);
    if (!V)
      return false;
    auto It = Inf.Vals.find(V);
    if (It != Inf.Vals.end()) {
      Out = It->second;
      return true;
    }
    if (V->IntData && V->IntData->size() <= MaxValueElems &&
        fitsShape(*V, V->IntData->size())) {
      Out.clear();
      for (int64_t X : *V->IntData)
        Out.push_back(IV::known(X));
      return true;
    }
    return false;
  }
  /// Input I's elements as vals() gives them, or, for an integer vector of
  /// known length up to MaxPartialElems with no value, that many unknown
  /// elements: a Concat of [1, 3] and an unknown pair is [1, 3, ?, ?].
  bool valsOrUnknown(unsigned I, IVec &Out) const {
    if (vals(I, Out))
      return true;
    const Shape *S = shape(I);
    if (!S || S->rank() > 1 || !(isIntType(elem(I)) || elem(I) == DType::Bool))
      return false;
    int64_t Len = S->rank() == 0 ? 1 : S->Dims[0].isKnown() ? S->Dims[0].extent() : -1;
    if (Len < 0 || Len > int64_t(MaxPartialElems))
      return false;
    Out.assign(size_t(Len), IV{});
    return true;
  }
  /// Input I's value when every element is known.
  bool ints(unsigned I, SmallVectorImpl<int64_t> &Out) const {
    Value *V = in(I);
    if (!V)
      return false;
    if (V->IntData && V->IntData->size() <= MaxValueElems) {
      Out.assign(V->IntData->begin(), V->IntData->end());
      return true;
    }
    auto It = Inf.Vals.find(V);
    if (It == Inf.Vals.end())
      return false;
    Out.clear();
    for (const IV &X : It->second) {
      if (!X.Known)
        return false;
      Out.push_back(X.V);
    }
    return true;
  }
  bool scalarInt(unsigned I, int64_t &X) const {
    SmallVector<int64_t, 4> V;
    if (!ints(I, V) || V.size() != 1)
      return false;
    X = V[0];
    return true;
  }
  /// Input I's value as numbers (floats, or ints converted).
  bool floats(unsigned I, FVec &Out) const {
    Value *V = in(I);
    if (!V)
      return false;
    auto It = Inf.FVals.find(V);
    if (It != Inf.FVals.end()) {
      Out = It->second;
      return true;
    }
    SmallVector<int64_t, 4> Is;
    if (!ints(I, Is))
      return false;
    Out.assign(Is.begin(), Is.end());
    return true;
  }

  /// Records output O's value; stores it in IntData when fully known and O
  /// is int32/int64. Ignored when it does not fit O's shape.
  void setVals(unsigned O, ArrayRef<IV> Xs) const {
    Value *V = out(O);
    if (!V || Xs.size() > MaxValueElems || !fitsShape(*V, Xs.size()))
      return;
    Inf.Vals[V] = IVec(Xs.begin(), Xs.end());
    if (V->IntData ||
        (V->Elem != DType::Int64 && V->Elem != DType::Int32 && V->Elem != DType::Bool))
      return;
    for (const IV &X : Xs)
      if (!X.Known)
        return;
    V->IntData.emplace();
    for (const IV &X : Xs)
      V->IntData->push_back(X.V);
  }
  void setInts(unsigned O, ArrayRef<int64_t> Xs) const {
    IVec V;
    for (int64_t X : Xs)
      V.push_back(IV::known(X));
    setVals(O, V);
  }
  void setFloats(unsigned O, ArrayRef<double> Xs) const {
    Value *V = out(O);
    if (!V || Xs.size() > MaxFloatValueElems || !fitsShape(*V, Xs.size()))
      return;
    Inf.FVals[V] = FVec(Xs.begin(), Xs.end());
  }

  enum Src { Absent, Known, Unknown };
  /// Ints given by input Input when present, else by attribute Attr (the
  /// attribute form of older opsets).
  Src intsArg(StringRef Attr, unsigned Input, SmallVectorImpl<int64_t> &Out) const {
    if (has(Input))
      return ints(Input, Out) ? Known : Unknown;
    if (auto A = N.attrInts(Attr)) {
      Out.assign(A->begin(), A->end());
      return Known;
    }
    return Absent;
  }

private:
  /// A known dim the file declares for graph output V that S, inferred,
  /// contradicts (the model's interface; a value_info's dims are a cache an
  /// exporter may have left stale, refined as before).
  void noteConflict(const Value &V, const Shape &S) const {
    if (!V.IsGraphOutput || !V.Shp || V.Shp->rank() != S.rank())
      return;
    for (size_t I = 0; I < S.rank(); ++I)
      if (V.Shp->Dims[I].isKnown() && S.Dims[I].isKnown() &&
          V.Shp->Dims[I].extent() != S.Dims[I].extent()) {
        Inf.Conflicts.push_back({N.Name.str(), V.Name.str(), V.Shp->str(), S.str()});
        return;
      }
  }
  /// N elements, row-major, fit V's shape: a 1-D value of unknown length,
  /// or a shape of any rank whose dims are known and hold N elements.
  static bool fitsShape(const Value &V, size_t N) {
    if (!V.Shp)
      return true;
    if (V.Shp->rank() == 1 && !V.Shp->Dims[0].isKnown())
      return true;
    std::optional<double> E = V.Shp->numElements();
    return E && *E == double(N);
  }
};

const ElemInfo *elemsOf(Ctx &C, unsigned I);
void setElems(Ctx &C, unsigned O, ElemInfo E);
/// The extent of output data that only running the node decides: the
/// symbol "<node>.<What>" (recorded, with its Bound when known), or its
/// --dim binding.
Dim dataSymbol(Ctx &C, StringRef What, StringRef Desc, sym::ExprRef Bound);
/// Output O's extent along Axis when element Elem of input From, whose value
/// sets it (a Resize's sizes, a Slice's bounds, a ConstantOfShape's shape),
/// is a value only the run knows: the data symbol "<node>.out<O>_dim<Axis>",
/// at most Bound when one is known. Unknown (no symbol) when the element is
/// unknown because a shape upstream is: a lost shape stays visible.
Dim runtimeExtent(Ctx &C, unsigned O, size_t Axis, unsigned From, size_t Elem, StringRef Op,
                  sym::ExprRef Bound);
/// Input I's values and dims, when every dim is known and the values fill
/// them (row-major).
bool shapedVals(Ctx &C, unsigned I, IVec &V, SmallVectorImpl<int64_t> &Dims);
/// Input I's integers and dims, when every dim and every element is known.
bool shapedInts(Ctx &C, unsigned I, SmallVectorImpl<int64_t> &V, SmallVectorImpl<int64_t> &Dims);
/// Output O's dims and element count N, when the dims are known and N is
/// within MaxValueElems.
bool valueDims(Ctx &C, unsigned O, SmallVectorImpl<int64_t> &Dims, size_t &N);
/// Row-major index K of Dims as coordinates, and back.
void unravel(size_t K, ArrayRef<int64_t> Dims, SmallVectorImpl<int64_t> &Idx);
size_t ravel(ArrayRef<int64_t> Idx, ArrayRef<int64_t> Dims);
DType attrDType(const Node &N, StringRef Name, DType Default);
Graph *attrGraph(const Node &N, StringRef Name);

//===----------------------------------------------------------------------===//
// The rules and their helpers, by op family
//===----------------------------------------------------------------------===//

// Constants.cpp: Shape, Size, constants, ranges, generators
void ruleShape(Ctx &C);
void ruleSize(Ctx &C);
void ruleConstant(Ctx &C);
void ruleConstantOfShape(Ctx &C);
void ruleRange(Ctx &C);
void ruleOneHot(Ctx &C);
void ruleEyeLike(Ctx &C);
void ruleRandom(Ctx &C);
void ruleRandomLike(Ctx &C);
void ruleMultinomial(Ctx &C);

// ControlFlow.cpp: If, Loop, Scan, sequences and optionals
void ruleIf(Ctx &C);
void typeLike(Value &Dst, const Value &Src);
void ruleLoop(Ctx &C);
void ruleScan(Ctx &C);
void ruleSequenceLength(Ctx &C);
void ruleOptionalHasElement(Ctx &C);
void ruleSequenceEmpty(Ctx &C);
void ruleSequenceConstruct(Ctx &C);
void ruleSequenceInsert(Ctx &C);
void ruleSequenceErase(Ctx &C);
void ruleSequenceAt(Ctx &C);
void ruleSplitToSequence(Ctx &C);
void ruleConcatFromSequence(Ctx &C);
void ruleOptional(Ctx &C);
void ruleOptionalGetElement(Ctx &C);
void ruleSequenceMap(Ctx &C);

// Convolution.cpp: convolution, pooling, Col2Im
void ruleConv(Ctx &C);
void ruleConvInteger(Ctx &C);
void ruleQLinearConv(Ctx &C);
void ruleConvTranspose(Ctx &C);
void rulePool(Ctx &C);
void ruleGlobalPool(Ctx &C);
void ruleMaxUnpool(Ctx &C);
void ruleRoiPool(Ctx &C);
void ruleCol2Im(Ctx &C);

// DataDependent.cpp: ops whose output extent depends on data
void ruleTopK(Ctx &C);
void ruleNonZero(Ctx &C);
void ruleCompress(Ctx &C);
void ruleUnique(Ctx &C);
void ruleNonMaxSuppression(Ctx &C);

// Elementwise.cpp: element-wise ops, casts, broadcasting, quantization
void ruleUnary(Ctx &C);
void passValues(Ctx &C);
void ruleIdentity(Ctx &C);
void ruleToBool(Ctx &C);
void ruleNot(Ctx &C);
void ruleUnaryMath(Ctx &C);
void ruleCast(Ctx &C);
void ruleCastLike(Ctx &C);
void broadcastRule(Ctx &C, unsigned First, DType T);
void ruleBroadcast(Ctx &C);
void ruleMean(Ctx &C);
void ruleWhere(Ctx &C);
void ruleDropout(Ctx &C);
void ruleClip(Ctx &C);
void ruleQuantize(Ctx &C);
void ruleDequantize(Ctx &C);
void ruleDynamicQuantize(Ctx &C);

// Image.cpp: Resize, GridSample, AffineGrid
void ruleResize(Ctx &C);
void ruleGridSample(Ctx &C);
void ruleAffineGrid(Ctx &C);

// Linear.cpp: matrix products, Einsum, Det, Attention
bool matmulShape(const Shape &A, const Shape &B, Shape &Out);
void ruleMatMul(Ctx &C);
void ruleMatMulInteger(Ctx &C);
void ruleQLinearMatMul(Ctx &C);
void ruleGemm(Ctx &C);
void ruleEinsum(Ctx &C);
void ruleDet(Ctx &C);
void ruleAttention(Ctx &C);

// Microsoft.cpp: com.microsoft contrib ops
void ruleMsBiasGelu(Ctx &C);
void ruleMsFusedMatMul(Ctx &C);
void ruleMsMatMulNBits(Ctx &C);
void ruleMsGatherBlockQuantized(Ctx &C);
void ruleMsSkipLayerNorm(Ctx &C);
void ruleMsAttention(Ctx &C);
void ruleMsMultiHeadAttention(Ctx &C);

// Movement.cpp: reshapes, transposes, concatenation, slicing, gathers, padding
void ruleReshape(Ctx &C);
void ruleFlatten(Ctx &C);
void ruleTranspose(Ctx &C);
void ruleSqueeze(Ctx &C);
void ruleUnsqueeze(Ctx &C);
void ruleConcat(Ctx &C);
void ruleSplit(Ctx &C);
void ruleSlice(Ctx &C);
void ruleGather(Ctx &C);
void ruleGatherElements(Ctx &C);
void ruleScatterElements(Ctx &C);
void ruleScatterND(Ctx &C);
void ruleGatherND(Ctx &C);
bool valsToShape(ArrayRef<IV> V, Shape &S);
void ruleExpand(Ctx &C);
void ruleTile(Ctx &C);
void rulePad(Ctx &C);
void ruleDepthToSpace(Ctx &C);
void ruleCenterCropPad(Ctx &C);

// Recurrent.cpp: RNN, GRU, LSTM
void ruleRNN(Ctx &C);

// Reduction.cpp: reductions and normalizations
void ruleBatchNorm(Ctx &C);
void ruleLayerNorm(Ctx &C);
void ruleReduce(Ctx &C);
void ruleArgMinMax(Ctx &C);
void ruleCumSum(Ctx &C);

// Signal.cpp: windows, DFT, STFT
void ruleWindow(Ctx &C);
void ruleMelWeightMatrix(Ctx &C);
void ruleDFT(Ctx &C);
void ruleSTFT(Ctx &C);

// Text.cpp: strings and image decoding
void ruleStringNormalizer(Ctx &C);
void ruleTfIdfVectorizer(Ctx &C);
void ruleImageDecoder(Ctx &C);
void ruleStringSplit(Ctx &C);
void ruleStringConcat(Ctx &C);

// Training.cpp: losses, the training-preview optimizers, Gradient
void ruleLoss(Ctx &C);
void ruleOptimizer(Ctx &C);
void ruleGradient(Ctx &C);

// RuleTable.cpp
RuleFn findRule(StringRef Domain, StringRef Op);

} // namespace ridge::shapes

#endif
