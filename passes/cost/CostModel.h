//===- CostModel.h - Per-node FLOPs, bytes, backward, saved activations -*- C++ -*-===//
//
// Conventions (README "Counting conventions" says the same to users):
//  - FLOP: one floating-point add or multiply; a multiply-accumulate is 2.
//    MACs are reported too for matrix products and convolutions.
//  - Transcendentals (exp, log, tanh, erf, sqrt, reciprocal, pow, sin, cos,
//    sigmoid's exp) are counted apart from FLOPs, as XLA's HloCostAnalysis
//    does.
//  - Bytes: the minimum an unfused kernel moves: each input read once, each
//    output written once, at its element size; view ops move nothing.
//  - Backward: for each input that needs a gradient (on a path from a
//    trainable initializer or trainable graph input; never integer tensors,
//    shapes, indices), its gradient; plus what the op saves for it.
//  - Summing n values takes n - 1 adds (reductions, broadcast gradients,
//    bias gradients, softmax denominators); a max of n values n - 1 compares.
//  - Single-element initializers (1/sqrt(d), eps, clip bounds) are constants,
//    not trainable parameters; integer initializers are not parameters.
//  - Values computed from constants only (Constant, ConstantOfShape of a
//    constant or of a Shape, ...) are not activations, as parameters are
//    not: saved-activation totals leave them out.
//  - Training step semantics: BatchNormalization and Dropout are costed in
//    training mode whatever the exported graph says; with --inference in
//    inference mode (running statistics; Dropout the identity).
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_COST_COSTMODEL_H
#define RIDGE_PASSES_COST_COSTMODEL_H

#include "analyzer/PassManager.h"
#include "analyzer/symbolic/Count.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/bit.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ridge {

/// Amounts for one phase (forward or backward) of one node: numbers
/// (PhaseCost), or counts that may be formulas in the model's symbols
/// (PhaseCount, what a cost rule fills).
template <typename T> struct PhaseAmounts {
  T Flops = 0;
  T Macs = 0; ///< multiply-accumulates of matrix products/convolutions
  T Transcendentals = 0;
  T Bytes = 0; ///< memory traffic of an unfused kernel

  PhaseAmounts &operator+=(const PhaseAmounts &O) {
    Flops += O.Flops;
    Macs += O.Macs;
    Transcendentals += O.Transcendentals;
    Bytes += O.Bytes;
    return *this;
  }
  PhaseAmounts operator*(double K) const {
    if (K == 1) // nearly every node (its multiplier): formulas are not remade
      return *this;
    return {Flops * K, Macs * K, Transcendentals * K, Bytes * K};
  }
};
using PhaseCost = PhaseAmounts<double>;
using PhaseCount = PhaseAmounts<sym::Count>;
/// P's numbers as counts.
inline PhaseCount countsOf(const PhaseCost &P) {
  return {P.Flops, P.Macs, P.Transcendentals, P.Bytes};
}

/// A node's counts when they are formulas in free symbols (Config::
/// SymbolicCosts and a shape that holds a symbol): the whole cost, in place
/// of NodeCost's numbers (which stay 0): the forward's and backward's four
/// counts and the saved extras (masks, statistics, as NodeCost's).
/// Packed: a number, or a formula in the fast univariate form (the graph's
/// leading symbol: what nearly every node of `analyze` and `plan` costs),
/// is up to four coefficients of b^0 .. b^3 in the one symbol b every cell
/// shares, and only the nonzero ones are kept (a bit each in Mask): two to
/// eight doubles a node. Any other formula is kept whole beside them. (Nine
/// Counts held as such took 648 bytes a node; nine four-coefficient cells
/// with their symbol, 384; this, 104.)
class SymbolicCost {
public:
  SymbolicCost(const PhaseCount &Fwd, const PhaseCount &Bwd, const sym::Count &SavedBytes);
  SymbolicCost(const SymbolicCost &O)
      : Symbol(O.Symbol), Mask(O.Mask), Coefs(O.Coefs),
        General(O.General ? std::make_unique<GeneralCells>(*O.General) : nullptr) {}
  SymbolicCost &operator=(const SymbolicCost &O) {
    if (this != &O)
      *this = SymbolicCost(O);
    return *this;
  }
  SymbolicCost(SymbolicCost &&) noexcept = default;
  SymbolicCost &operator=(SymbolicCost &&) noexcept = default;

  PhaseCount fwd() const { return phase(0); }
  PhaseCount bwd() const { return phase(4); }
  sym::Count savedBytes() const { return get(8); }
  sym::Count fwdBytes() const { return get(3); }
  void setFwd(const PhaseCount &P) { setPhase(0, P); }
  void setFwdBytes(const sym::Count &C) { set(3, C); }
  void setBwd(const PhaseCount &P) { setPhase(4, P); }
  void setSavedBytes(const sym::Count &C) { set(8, C); }
  /// Some cell is a general formula (not a number nor in the one symbol's
  /// fast form).
  bool hasGeneralCells() const { return General != nullptr; }
  /// The fast form's symbol b (null while every cell is a number).
  sym::ExprRef symbol() const { return Symbol; }
  /// Cell K's coefficients of b^0 .. b^3 in symbol() (a number's in b^0
  /// alone); only when !hasGeneralCells(). Cells 0-3 are the forward's
  /// FLOPs, MACs, transcendentals and bytes, 4-7 the backward's, 8 the
  /// saved extras.
  std::array<double, 4> coefficientsOf(unsigned K) const;
  /// Every cell's value with symbol() bound to X, as Count::evaluate gives
  /// it (b^0 + X*(b^1 + X*(b^2 + X*b^3)), a number cell its number), in
  /// cell order; only when !hasGeneralCells(). (bindCosts made a Count of
  /// each cell to evaluate it: 5% of a plan's instructions.)
  std::array<double, 9> valuesAt(double X) const;

private:
  friend class SymbolicSum;
  static constexpr unsigned Cells = 9, Degrees = 4;
  using GeneralCells = std::vector<std::pair<uint8_t, sym::Count>>;
  /// The univariate cells' symbol b (null while every cell is a number).
  sym::ExprRef Symbol = nullptr;
  /// Bit Degrees*K + d: cell K's coefficient of b^d is nonzero and in Coefs.
  uint64_t Mask = 0;
  /// The nonzero coefficients, in bit order (a matrix product's cost has
  /// eight: none spills in the synthetic or GPT benchmark graphs).
  llvm::SmallVector<double, 8> Coefs;
  /// The counts neither form holds, by cell (rare: a formula in several
  /// symbols, or outside a univariate scope); null when there are none.
  std::unique_ptr<GeneralCells> General;

  sym::Count get(unsigned K) const;
  void set(unsigned K, const sym::Count &C);
  /// C's nonzero coefficients (C a number or in Symbol's fast form, which
  /// it may set), or false: C is a general formula.
  bool coefficients(const sym::Count &C, std::array<double, Degrees> &Out);
  /// Cells K .. K+3 (a phase: each node's totals read two).
  PhaseCount phase(unsigned K) const;
  /// Whether coefficients of b^0 .. b^3 are a formula (not a number).
  static bool isPoly(const std::array<double, Degrees> &C) {
    return C[1] != 0 || C[2] != 0 || C[3] != 0;
  }
  /// A cell's count from its coefficients of b^0 .. b^3.
  sym::Count cellOf(const std::array<double, Degrees> &C) const {
    return isPoly(C) ? sym::Count::univariateOf(Symbol, C) : sym::Count(C[0]);
  }
  /// Cells First .. First+N-1's coefficients of b^0 .. b^3 from Coefs, in
  /// order, to F(cell, coefficients): where the first starts is counted
  /// once, not once a cell.
  template <typename Fn> void unpackCells(unsigned First, unsigned N, Fn F) const {
    size_t At = llvm::popcount(Mask & ((uint64_t(1) << (Degrees * First)) - 1));
    for (unsigned K = First; K < First + N; ++K) {
      std::array<double, Degrees> C{};
      for (unsigned D = 0; D < Degrees; ++D)
        if (Mask >> (Degrees * K + D) & 1)
          C[D] = Coefs[At++];
      F(K, C);
    }
  }
  void setPhase(unsigned K, const PhaseCount &P) {
    set(K, P.Flops);
    set(K + 1, P.Macs);
    set(K + 2, P.Transcendentals);
    set(K + 3, P.Bytes);
  }
};

/// A sum of SymbolicCosts' cells, each cost times a multiplier: kept as
/// coefficients of b^0 .. b^3 while every cost added is a number or in one
/// symbol b's fast form (nearly every node: adding one is a multiply-add a
/// nonzero coefficient, and no Count is made), and as Counts for the rest.
/// The same sums, in the same order, as adding each cost's Counts would
/// take (that form's arithmetic is on the same doubles).
class SymbolicSum {
public:
  void add(const SymbolicCost &C, double K);
  /// A numeric node's phases, times K.
  void add(const PhaseCost &Fwd, const PhaseCost &Bwd, double K);
  void add(const SymbolicSum &O);
  PhaseCount fwd() const { return phase(0); }
  PhaseCount bwd() const { return phase(4); }
  sym::Count savedBytes() const { return cell(8); }

private:
  static constexpr unsigned Cells = 9, Degrees = 4;
  sym::ExprRef Symbol = nullptr;
  std::array<double, Cells * Degrees> Coef{};
  /// What no coefficient holds: costs in another symbol, general formulas.
  std::unique_ptr<std::array<sym::Count, Cells>> Rest;
  sym::Count cell(unsigned K) const;
  PhaseCount phase(unsigned K) const { return {cell(K), cell(K + 1), cell(K + 2), cell(K + 3)}; }
};

/// Why a node is not costed: one pointer, null for almost every node.
class UnmodeledReason {
public:
  UnmodeledReason &operator=(std::string Why) {
    if (Why.empty())
      P.reset();
    else
      P.emplace(std::move(Why));
    return *this;
  }
  bool empty() const { return !P; }
  llvm::StringRef ref() const { return P ? llvm::StringRef(*P) : llvm::StringRef(); }
  std::string str() const { return ref().str(); }
  operator llvm::StringRef() const { return ref(); }

private:
  Boxed<std::string> P;
};

/// One node's costs. 96 bytes: a million-node graph holds one per node at
/// its peak. What few nodes have (extra saved bytes, a loop's multiplier, a
/// reason for being unmodeled, saved operands past the 32nd) lives in one
/// box, null for nearly every node; the saved operands are a bit per
/// operand position (its inputs, then its outputs) for the first 32.
struct NodeCost {
  const Node *N = nullptr;
  PhaseCost Fwd, Bwd;
  bool Modeled = false;
  bool NeedsBackward = false;
  /// Bit I: input I (I < 8) needs a gradient (which backward kernels run).
  uint8_t GradInputs = 0;
  bool inputNeedsGrad(unsigned I) const { return I < 8 && (GradInputs >> I & 1); }
  /// The type a quantized product multiplies in (Undefined: as stored):
  /// Int8 for QLinearConv, ConvInteger, ... or, in inference, a product of
  /// two dequantized integer operands (a QDQ pair that a runtime fuses);
  /// the weight's float8 type for two dequantized float8 operands. Timed at
  /// the device's rate for that type.
  DType QuantizedMath = DType::Undefined;

private:
  uint32_t SavedBits = 0; ///< bit P: operand position P is kept

public:
  /// Set when the counts are formulas (see SymbolicCost); null otherwise.
  Boxed<SymbolicCost> Sym;

  /// Extra bytes kept for backward (masks, statistics), beyond the saved
  /// operands.
  double savedBytes() const { return R ? R->SavedBytes : 0; }
  void setSavedBytes(double B) {
    if (B != 0 || R)
      rare().SavedBytes = B;
  }
  /// Loop trip counts; 0 for an If branch not taken.
  double multiplier() const { return R ? R->Multiplier : 1; }
  void setMultiplier(double M) {
    if (M != 1 || R)
      rare().Multiplier = M;
  }
  /// Why the node is not costed, when !Modeled ("" otherwise).
  llvm::StringRef unmodeled() const { return R ? llvm::StringRef(R->Unmodeled) : ""; }
  void setUnmodeled(std::string Why) {
    if (!Why.empty() || R)
      rare().Unmodeled = std::move(Why);
  }

  /// Keeps V, an input or output of N (its first position when it is at
  /// several), for the backward; nothing when V is not an operand of N.
  /// Activations are deduplicated across nodes when totals are taken.
  void keepSaved(const Value *V);
  void clearSaved() {
    SavedBits = 0;
    if (R)
      R->FarSaved.clear();
  }
  /// The activations kept, each once, in operand order.
  llvm::SmallVector<const Value *, 4> saved() const;

  /// A phase's counts: its formulas, or its numbers.
  PhaseCount fwdCounts() const { return Sym ? Sym->fwd() : countsOf(Fwd); }
  PhaseCount bwdCounts() const { return Sym ? Sym->bwd() : countsOf(Bwd); }
  /// The extra saved bytes: its formula, or its number.
  sym::Count savedCounts() const { return Sym ? Sym->savedBytes() : sym::Count(savedBytes()); }

private:
  struct Rare {
    double SavedBytes = 0;
    double Multiplier = 1;
    std::string Unmodeled;
    llvm::SmallVector<const Value *, 2> FarSaved; ///< positions past the 32nd
  };
  Boxed<Rare> R;
  Rare &rare() {
    if (!R)
      R.emplace();
    return *R;
  }
};

/// Formula helpers, each with its formula; unit-tested.
namespace formulas {
using sym::Count;
/// MatMul [..., M, K] x [..., K, N]: MACs = batch * M * N * K.
Count matmulMacs(Count Batch, Count M, Count N, Count K);
/// Conv: MACs = N * Cout * prod(out spatial) * (Cin / group) * prod(kernel).
/// Every tap is counted, padding included, as dense kernels execute them
/// (torch's flop counter and published tables count the same).
Count convMacs(Count BatchN, Count Cout, Count OutSpatial, Count CinPerGroup,
               Count KernelSpatial);
} // namespace formulas

struct CostResult {
  std::vector<NodeCost> Nodes; ///< main graph then subgraphs, topological
  PhaseCost Fwd, Bwd;          ///< totals, multipliers applied
  double SavedActivationBytes = 0; ///< distinct saved tensors + extras
  size_t ModeledNodes = 0, UnmodeledNodes = 0;
  /// --inference: nodes with a cost that compute from weights and constants
  /// alone, folded at load and costed at zero.
  size_t FoldedNodes = 0;
  /// Set when some node's counts are formulas (NodeCost::Sym): the totals
  /// over every node, numbers and formulas together. Fwd, Bwd and
  /// SavedActivationBytes above then hold the numeric nodes' part only.
  struct Formulas {
    PhaseCount Fwd, Bwd;
    sym::Count SavedActivationBytes = 0;
    size_t Nodes = 0; ///< nodes whose counts are formulas
  };
  Boxed<Formulas> Sym;
  /// FLOPs of unmodeled nodes estimated at one per output element: the
  /// denominator of the FLOP coverage figure, never added to totals.
  double UnmodeledFlopsEstimate = 0;
  /// (op, reason) -> count
  std::vector<std::pair<std::string, size_t>> UnmodeledOps;
  double TrainableParams = 0;  ///< elements of trainable tensors (initializers and node-kept)
  /// Of TrainableParams, the elements of weights the graph computes from
  /// constants (Constant, ConstantOfShape, a DequantizeLinear of an integer
  /// initializer, ...) rather than holding as initializers, and how many
  /// such tensors.
  double NodeParams = 0;
  size_t NodeParamTensors = 0;
  double FrozenInitElements = 0;
  /// Elements of the parameters --freeze left untrained, and their tensors;
  /// of them, those the graph computes from constants (not initializers,
  /// so not in FrozenInitElements).
  double FreezeParams = 0;
  size_t FreezeTensors = 0;
  double FreezeNodeParams = 0;
  /// The frozen weights: the tensors FrozenInitElements and FreezeNodeParams
  /// count (the planner places them on stages).
  std::vector<const Value *> FrozenWeights;
  /// Tensors that carry a gradient (trainable parameters and what they reach).
  ValueSet NeedsGrad;
  ValueSet Trainable;
  /// Values that are the same every step: outputs of nodes without inputs
  /// (Constant, RandomNormal, ...), of Shape and Size (ridge's shapes are
  /// static), and of nodes all of whose inputs are such values or frozen
  /// initializers (ConstantOfShape(Shape(x)), Cast of a Constant, ...).
  /// What a trainable parameter or a graph input reaches is not constant.
  ValueSet Constants;

  /// The free symbols the formulas hold, sorted (empty when every count is
  /// a number); found once, when the walk ends.
  const std::vector<std::string> &freeSymbols() const { return FreeSymbols; }
  std::vector<std::string> FreeSymbols;

  /// A saved tensor is an activation unless it is an initializer (a
  /// parameter) or a constant computed from constants only.
  bool isActivation(const Value *V) const {
    return V && !V->isInitializer() && !Constants.count(V);
  }
};

struct CostAnalysis {
  using Result = CostResult;
  static constexpr const char *Name = "cost";
  static llvm::Expected<Result> run(Model &M, AnalysisManager &AM);
};

/// Bytes of V with floating-point elements at FloatBytes each when given
/// (--dtype), else at V's own element size; 0 when its shape is unknown.
double valueBytes(const Value *V, std::optional<double> FloatBytes);
/// One element's bytes of V: FloatBytes (--dtype's) for a floating-point
/// tensor when given, else its stored type's.
double elementBytes(const Value *V, std::optional<double> FloatBytes);
/// V's bytes as a count: a number when its shape is known, its formula when
/// its dims are symbolic, and valueBytes' 0 when one is unknown (never an
/// unknown count: a size nobody knows adds nothing, as with numbers).
sym::Count determinedBytes(const Value *V, std::optional<double> FloatBytes);
/// V's elements as a count: a number when its shape is known, a formula
/// when its dims are symbolic, unknown (undecided) when one is unknown.
sym::Count elementCount(const Value *V);
/// valueBytes as a count (a formula for symbolic dims).
sym::Count valueCount(const Value *V, std::optional<double> FloatBytes);
/// nodeSavedBytes of a node whose counts are formulas (or numbers).
sym::Count nodeSavedCount(const NodeCost &NC, const CostResult &C,
                          std::optional<double> FloatBytes);
/// The element size --dtype gives floating-point tensors, if it is set.
std::optional<double> floatBytes(const Config &Cfg);
/// C, costed with formulas (Config::SymbolicCosts), as the numeric walk
/// costs the model once Bind binds its symbols: each node's formulas become
/// their values and the totals are summed again. M's shapes must already
/// hold the binding (saved tensors' bytes are read from them). A node the
/// formulas left unmodeled stays so: its rule is not run again. An error
/// names the node whose count does not evaluate.
llvm::Error bindCosts(CostResult &C, const Model &M, const sym::Binding &Bind,
                      std::optional<double> FloatBytes);
/// The error of a pass that needs numbers (times, recomputation plans) on
/// costs that are formulas: names the symbols and how to bind them.
llvm::Error needsNumbers(const Model &M, const CostResult &C, llvm::StringRef What);
/// What one node keeps for its backward, as printed per node: its extra
/// bytes (masks, statistics) plus its saved activations.
double nodeSavedBytes(const NodeCost &NC, const CostResult &C,
                      std::optional<double> FloatBytes);

/// Everything a cost rule sees about one node.
struct CostContext {
  const Node &N;
  /// Per input: does it need a gradient (false for omitted inputs).
  llvm::SmallVector<bool, 4> InputNeedsGrad;
  /// Element size override for floating-point tensors (--dtype), in bytes.
  std::optional<double> FloatBytes;
  /// --inference: BatchNormalization uses its running statistics, Dropout
  /// is the identity.
  bool Inference = false;

  bool anyGrad() const {
    for (bool B : InputNeedsGrad)
      if (B)
        return true;
    return false;
  }
  bool needsGrad(unsigned I) const {
    return I < InputNeedsGrad.size() && InputNeedsGrad[I];
  }
  /// Dims may be symbolic (Config::SymbolicCosts): counts are then formulas.
  bool Symbolic = false;

  /// Bytes of V at the analysis' element sizes (V's shape must be known, or
  /// symbolic when Symbolic).
  sym::Count bytes(const Value *V) const;
  double elemBytes(const Value *V) const;
  sym::Count elems(const Value *V) const { return V ? elementCount(V) : sym::Count(0); }
};

/// What a cost rule fills: counts that are numbers, or formulas when the
/// node's shapes hold symbols.
struct RuleCost {
  PhaseCount Fwd, Bwd;
  sym::Count SavedBytes = 0;
  llvm::SmallVector<const Value *, 2> Saved;
  UnmodeledReason Unmodeled;
};

/// A cost rule fills Fwd, Bwd (when C.anyGrad()), Saved/SavedBytes, or
/// sets Unmodeled with the reason.
using CostRuleFn = void (*)(const CostContext &C, RuleCost &Out);

struct OpRule {
  const char *Domain;
  const char *Name;
  CostRuleFn Fn;
  /// Bit i set: input i never carries a gradient (shapes, indices, axes,
  /// running statistics).
  uint32_t NonDiffInputs;
  /// Bit i set: the op's schema requires input (output) i in every version
  /// (ONNX's, or onnxruntime's for com.microsoft). A node that does not give
  /// one is unmodeled, checked once for every rule (applyRule).
  uint32_t RequiredInputs;
  uint32_t RequiredOutputs;
};

/// Runs Rule on C into Out: checks first that the node gives the operands
/// its op requires and that the shapes the rule needs are known (view,
/// metadata and control-flow rules need none), else sets Unmodeled.
/// Counts that are formulas go to Out.Sym; a rule that met an operation
/// with no exact formula (sym::CountScope) leaves the node unmodeled until
/// its symbols are bound.
void applyRule(const OpRule &Rule, const CostContext &C, NodeCost &Out);

/// What kind of kernel an op is, for fusion: element-wise ops and
/// normalizations fuse into their producer, views are free.
enum class OpClass { ElementWise, Normalization, View, Matrix, Other };
OpClass opClass(const OpRule &Rule);

/// The rule for (domain, op type), or nullptr when ridge has none.
const OpRule *findOpRule(llvm::StringRef Domain, llvm::StringRef OpType);
/// Every rule in the table, for --list-ops and the coverage tests.
llvm::ArrayRef<OpRule> allOpRules();

/// `print<cost>`: each node's forward and backward FLOPs, MACs, bytes and
/// saved bytes.
RIDGE_DECLARE_PASS(PrintCostPass)

} // namespace ridge

#endif
