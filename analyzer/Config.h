//===- Config.h - Settings every pass can read ------------------*- C++ -*-===//
//
// The driver fills one Config from its options; passes and analyses read it
// through the AnalysisManager, so a pass needs no constructor arguments and
// the pipeline parser can build any pass by name.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_CONFIG_H
#define RIDGE_ANALYZER_CONFIG_H

#include "analyzer/ir/DType.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>
#include <string>
#include <vector>

namespace ridge {

struct Device;

enum class OutputFormat { Text, Json, Csv };

struct Config {
  llvm::raw_ostream *Out = &llvm::outs();
  OutputFormat Format = OutputFormat::Text;
  bool Color = false;         ///< ANSI colors in text tables
  std::string PrintAfter;     ///< print the IR after this pass ("all": each)

  // Cost model.
  /// --dtype: element type of floating-point tensors during training
  /// (bf16 mixed precision keeps fp32 master weights and optimizer state).
  std::optional<DType> ComputeDType;
  /// Graph inputs that are trained (by default only initializers are).
  std::vector<std::string> TrainableInputs;
  /// --trip-count: iterations of loops whose count the graph does not fix.
  std::optional<int64_t> TripCount;
  bool Strict = false; ///< an unmodeled op is an error
  /// --freeze-constants: weights the graph computes from constants (not
  /// initializers) are not trained.
  bool FreezeConstants = false;
  /// --freeze: glob patterns of parameter names not trained (fine-tuning
  /// with frozen layers; buffers an export keeps as initializers).
  std::vector<std::string> Freeze;
  /// Nodes whose shapes hold free symbols are costed as formulas in them
  /// (NodeCost::Sym) rather than left unmodeled: `ridge analyze` of a
  /// training step turns it on; what needs numbers (times, plans) does not.
  bool SymbolicCosts = false;
  /// Passes make the rows of a graph of at least this many nodes on two
  /// threads (analyzer/Parallel.h; below, a thread costs more to start than
  /// it saves): costing one without control flow, placing each op on the
  /// roofline. Hidden --two-threads-from: the same output at any value.
  size_t TwoThreadsFrom = 16384;

  /// --inference: a forward pass only (no gradients, optimizer or saved
  /// activations; BatchNormalization and Dropout in inference mode); memory
  /// is the weights at their stored width plus the peak of live activations.
  bool Inference = false;
  /// --kv-append in-place: with Inference, a KV cache's Concat (past + new
  /// into present) moves only the new keys or values, written into the
  /// cache's next slots, as serving engines append (paged or preallocated
  /// caches); false: the whole cache is copied, as the graph's Concat says.
  bool KVAppendInPlace = false;

  // Training step.
  enum class Optimizer { SGD, Momentum, Adam, AdamW };
  /// Activation recomputation: None; Selective, Megatron-LM's (the
  /// attention core); Cheap, every op cheaper than a matrix product; Full,
  /// layer checkpointing (passes/cost/TrainingStep.h).
  enum class Recompute { None, Selective, Full, Cheap };
  Optimizer Opt = Optimizer::AdamW;
  Recompute Recomp = Recompute::None;

  // Roofline.
  const Device *Dev = nullptr; ///< target device (the driver always sets one)
  /// Add compute and memory time instead of taking the larger (a kernel
  /// that does not overlap its loads with its arithmetic).
  bool SumTerms = false;
  /// --time-model roofline: time every op by the roofline alone (its bound),
  /// also on a GPU whose device file enables the kernel model.
  bool RooflineTimes = false;
  /// fp32 matrix products on TF32 tensor cores (the device's tf32 peak).
  bool TF32 = false;
  /// 3x3 convolutions may run as Winograd (--winograd=false: the library
  /// runs implicit GEMMs only, as cuDNN's tensor-op path and deterministic
  /// algorithms do, and DeepBench's USE_TENSOR_CORES=1 build forces).
  bool Winograd = true;

  // Report.
  /// --fail-if: budgets on the report's JSON totals ("step_seconds>0.5",
  /// on `ridge diff` relative: "memory.total>+5%"); a broken one fails the run.
  std::vector<std::string> Budgets;
  std::string RooflinePath;   ///< --roofline: chart written after the report
  std::string AnnotatePath;   ///< --annotate: the model with ridge's numbers
  std::string ReportPath;     ///< --report: one self-contained HTML page
  std::string Sort = "time"; ///< time | flops | bytes | name | order
  unsigned Top = 50;          ///< rows of the text per-op table (0: all)
};

} // namespace ridge

#endif
