//===- Inference.h - Forward-only memory, KV caches, prefill and decode -*- C++ -*-===//
//
// `ridge analyze --inference`: what a forward pass holds and how fast it
// runs. Memory is the weights at their stored width plus the peak of the
// activations live at once over the execution order (a tensor lives from
// its producer to its last consumer: what a runtime that reuses buffers
// sees), plus a decoder's KV cache. With --prompt and --context the graph
// is loaded again at the prefill (past = 0, seq = P) and at one decode step
// (past = C - 1, seq = 1), and at growing batches for the throughput sweep.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_PASSES_INFERENCE_INFERENCE_H
#define RIDGE_PASSES_INFERENCE_INFERENCE_H

#include "analyzer/Diagnostics.h"
#include "analyzer/onnx/Loader.h"
#include "passes/cost/CostModel.h"
#include "passes/cost/KVCache.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <array>
#include <functional>
#include <memory>

namespace ridge {

struct InferenceMemoryResult {
  /// Initializers and Constant-node tensors at their stored width (floating
  /// ones at --dtype when it is given): int8 weights 1 byte, int4 half.
  double WeightBytes = 0;
  size_t WeightTensors = 0;
  double Params = 0; ///< elements of the floating-point weights
  /// The most bytes of activations live at once, and the node running then
  /// (its inputs and outputs both live). KV-cache tensors are counted apart.
  double ActivationPeakBytes = 0;
  const Node *PeakNode = nullptr;
  /// Per main-graph node: activation bytes live while it runs.
  std::vector<double> LiveBytes;
  /// Activations whose size is not known (not counted).
  size_t UnknownSize = 0;
  std::vector<KVCacheEntry> KV;
  /// The present tensors: the cache held after this pass; 0 when unknown.
  double KVCacheBytes = 0;
  bool KVCacheKnown = true;
  double totalBytes() const { return WeightBytes + ActivationPeakBytes + KVCacheBytes; }

  /// Set when some activation's size is a formula (free symbols): the
  /// live bytes, the peak and the cache as formulas in place of the
  /// numbers above (which stay 0). PeakNode is then the node at the peak
  /// when one node provably is, for every binding; else null, and the peak
  /// is the max of the candidates'.
  struct Formulas {
    std::vector<sym::Count> LiveBytes; ///< per main-graph node
    sym::Count ActivationPeakBytes = 0;
    /// The nodes whose live bytes can be the peak (one when decided).
    std::vector<const Node *> PeakCandidates;
    sym::Count KVCacheBytes = 0; ///< unknown when a present's size is
    sym::Count totalBytes(double WeightBytes) const {
      return ActivationPeakBytes + KVCacheBytes + WeightBytes;
    }
  };
  Boxed<Formulas> Sym;
};

struct InferenceMemoryAnalysis {
  using Result = InferenceMemoryResult;
  static constexpr const char *Name = "inference-memory";
  static llvm::Expected<Result> run(Model &M, AnalysisManager &AM);
};

/// `print<liveness>`: per main-graph node, the activation bytes live while
/// it runs, then the weights, the peak and its node, and the KV cache.
RIDGE_DECLARE_PASS(PrintLivenessPass)

//===----------------------------------------------------------------------===//
// Prefill, decode and the batch sweep
//===----------------------------------------------------------------------===//

struct ServingOptions {
  std::optional<int64_t> Prompt;  ///< --prompt P
  std::optional<int64_t> Context; ///< --context C
  int64_t Batch = 1;              ///< --batch
  /// Largest batch the sweep tries (it stops earlier when memory runs out).
  int64_t MaxSweepBatch = 4096;
  bool Sweep = true;
};

/// One forward pass analyzed: prefill or a decode step at one batch.
struct ServingPass {
  int64_t Batch = 1;
  int64_t Tokens = 0;      ///< new tokens per sequence (P, or 1 in decode)
  int64_t Context = 0;     ///< past + new tokens
  /// The forward as one stream: the device's time, or the host's launches
  /// where they take longer (Device::streamSeconds).
  double Seconds = 0;
  double HostStallSeconds = 0; ///< of Seconds, the device waiting on launches
  double Launches = 0;         ///< kernels the host issues
  /// Of FusedSeconds: the fused groups bound by memory, and the device
  /// waiting on the fused step's launches.
  double FusedMemoryBoundSeconds = 0, FusedHostStallSeconds = 0;
  /// The same with element-wise ops and norms fused into their producers
  /// (the fusion what-if: what a fusing engine runs).
  double FusedSeconds = 0;
  double MemoryBoundSeconds = 0;
  double ComputeBoundSeconds = 0; ///< phases bound by compute or transcendentals
  /// Of the products with a weight operand (projections, MLP, LM head):
  /// seconds bound by compute and by memory.
  double WeightProductComputeSeconds = 0, WeightProductMemorySeconds = 0;
  PhaseCost Fwd;           ///< totals
  double WeightBytes = 0, ActivationPeakBytes = 0, KVCacheBytes = 0;
  std::string PeakNode;
  double MatrixPeak = 0, Bandwidth = 0;
  size_t Unmodeled = 0;
  /// Op types by time: (op, nodes, seconds, memory-bound seconds).
  struct OpTime {
    std::string Op;
    size_t Count = 0;
    double Seconds = 0, MemoryBoundSeconds = 0, Flops = 0, Bytes = 0;
  };
  std::vector<OpTime> ByOp;
  double totalBytes() const { return WeightBytes + ActivationPeakBytes + KVCacheBytes; }
  double tokensPerSecond() const { return Seconds > 0 ? Batch * Tokens / Seconds : 0; }
  double memoryBoundShare() const { return Seconds > 0 ? MemoryBoundSeconds / Seconds : 0; }
  bool fits(double Capacity) const { return totalBytes() <= Capacity; }
};

struct ServingResult {
  std::string Model;
  std::string Device;
  double Capacity = 0;
  double LaunchOverhead = 0;      ///< the device's host time a kernel launch
  size_t KVLayers = 0;            ///< present tensors (a key and a value per layer)
  std::string PastSymbol, SeqSymbol, BatchSymbol;
  std::optional<ServingPass> Prefill, Decode;
  /// Decode (or prefill without --context) at batch 1, 2, 4, ... while it fits.
  std::vector<ServingPass> Sweep;
  /// The first swept batch with more of its time bound by compute than by
  /// memory, if any.
  std::optional<int64_t> ComputeBoundFrom;
  /// The first swept batch whose products with weights are more compute-
  /// than memory-bound: where reading the weights stops setting the pace.
  std::optional<int64_t> WeightProductsComputeBoundFrom;
};

/// Loads the model with the given dim bindings at a batch (0: the batch the
/// user's bindings give).
using ServingLoadFn = std::function<llvm::Expected<std::unique_ptr<Model>>(
    const std::vector<std::pair<std::string, int64_t>> &Bindings, int64_t Batch,
    DiagnosticEngine &Diags)>;

/// Loads Src with the serving pass's bindings added to Opts' own, at a
/// batch (0: the one Opts' bindings give) bound as loadModelAtBatch binds
/// it (BatchDim: the --batch-dim names, "" for the default); Who names the
/// batch's setter in messages ("analyze --batch").
ServingLoadFn servingLoader(const ModelSource &Src, const LoadOptions &Opts,
                            std::string BatchDim, std::string Who);

/// What a serving pass binds, found on the graph at the user's bindings:
/// the KV cache's past-length symbol and the new tokens' sequence symbol
/// (or the length the graph fixes). Errors name the model: --context
/// without a KV cache, --prompt longer than a fixed sequence dim, a fixed
/// past length, counts below 1.
struct ServingSetup {
  std::string Path;
  size_t KVLayers = 0;
  std::string Past, Seq;
  std::optional<int64_t> FixedSeq;
  std::string SeqWhere; ///< where the sequence dim is, for messages
  /// New tokens per sequence: 1 in decode, the prompt in the prefill.
  int64_t tokens(bool Decode, const ServingOptions &SO) const;
  /// The dims of the decode step at SO.Context or the prefill of SO.Prompt.
  std::vector<std::pair<std::string, int64_t>> bindings(bool Decode,
                                                        const ServingOptions &SO) const;
};
llvm::Expected<ServingSetup> setupServing(const ServingLoadFn &Load, const ServingOptions &SO);

/// The prefill of --prompt tokens and one decode step at --context, each
/// analyzed forward-only on Cfg's device, and the batch sweep. Errors name
/// the model: --context without a KV cache, --prompt longer than a fixed
/// sequence dim.
llvm::Expected<ServingResult> analyzeServing(const ServingLoadFn &Load, const Config &Cfg,
                                             const ServingOptions &SO,
                                             DiagnosticEngine &Diags);

//===----------------------------------------------------------------------===//
// ridge plan --inference: tensor parallelism, pipeline stages and replicas
//===----------------------------------------------------------------------===//

struct InferencePlanOptions {
  unsigned Devices = 1;
  unsigned DevicesPerNode = 0; ///< 0: the device file's
  unsigned MaxTP = 0;          ///< 0: devices per node
  std::optional<unsigned> TP, PP; ///< a fixed configuration when both are set
  bool Throughput = false;     ///< --objective throughput (else latency)
  unsigned Top = 5;
};

/// One configuration: t-way tensor parallelism inside each of p pipeline
/// stages, r = N / (t p) replicas.
struct InferencePlanEval {
  unsigned T = 1, P = 1, R = 1;
  bool Fits = true;
  std::string Why;              ///< what does not fit, by how much
  double PassSeconds = 0;       ///< one pass (a token in decode): stages + communication
  double SlowestStageSeconds = 0;
  double TPSeconds = 0;         ///< tensor-parallel all-reduces per pass
  double P2PSeconds = 0;        ///< sends between stages per pass
  double TokensPerSecond = 0;   ///< all replicas, p batches in flight each
  double MemoryBytes = 0;       ///< the fullest device, its reserve included
  double WeightBytes = 0, KVCacheBytes = 0, ActivationBytes = 0; ///< on it
  double ReserveBytes = 0;      ///< Device::withReserve's part of MemoryBytes
  size_t Collectives = 0;       ///< all-reduces per pass
  bool TPInterNode = false;
};

struct InferencePlanResult {
  std::string Model, Device;
  double Capacity = 0;
  std::string Phase;            ///< "decode at context 2048", "prefill of 512 tokens"
  bool Decode = false;
  int64_t Batch = 1, Tokens = 1;
  InferencePlanOptions Opts;
  std::vector<InferencePlanEval> Ranked;   ///< fitting, best first
  std::vector<InferencePlanEval> Rejected; ///< not fitting, least memory first
  std::optional<InferencePlanEval> Fixed;
  InferencePlanEval SingleDevice;
};

/// Loads the pass once (the decode step at --context, else the prefill of
/// --prompt, at --batch per replica), propagates the tensor-parallel
/// sharding at each degree, and evaluates every (t, p, r) with t p r = N.
llvm::Expected<InferencePlanResult> planInference(const ServingLoadFn &Load, const Config &Cfg,
                                                  const ServingOptions &SO,
                                                  const InferencePlanOptions &PO,
                                                  DiagnosticEngine &Diags);

} // namespace ridge

#endif
