//===- Loader.cpp - Load an ONNX model file into the IR -------------------===//
//
// The only file besides Importer.cpp that sees protobuf and ONNX's C++ API.
// ONNX throws; every call into it is wrapped so that nothing past this file
// sees an exception.
//
//===----------------------------------------------------------------------===//
#include "analyzer/onnx/Loader.h"
#include "analyzer/onnx/Importer.h"
#include "analyzer/onnx/OnnxWire.h"
#include "analyzer/shapes/ShapeInference.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <onnx/defs/parser.h>
#include <onnx/defs/schema.h>
#include <google/protobuf/arena.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

using namespace ridge;
using llvm::Error;
using llvm::formatv;

namespace {

/// The reader jumps over tensor payloads: tell the kernel not to read ahead
/// or fault in the pages around each header, so the payload pages are never
/// brought in (for a mapped file; harmless on a heap buffer).
void adviseRandomAccess(llvm::StringRef Bytes) {
  if (Bytes.size() < (size_t(1) << 20))
    return;
  uintptr_t Page = uintptr_t(sysconf(_SC_PAGESIZE));
  uintptr_t Begin = uintptr_t(Bytes.data()) & ~(Page - 1);
  uintptr_t End = uintptr_t(Bytes.data()) + Bytes.size();
  (void)madvise(reinterpret_cast<void *>(Begin), End - Begin, MADV_RANDOM);
}

/// Text syntax starts with '<' (model header) or a '#' comment line; binary
/// ModelProto starts with a field key (ir_version is 0x08).
bool looksLikeText(llvm::StringRef Path, llvm::StringRef Bytes) {
  if (Path.ends_with(".onnxtxt") || Path.ends_with(".onnx.txt"))
    return true;
  if (Path.ends_with(".onnx"))
    return false;
  llvm::StringRef T = Bytes.ltrim();
  return T.starts_with("<") || T.starts_with("#");
}

Error parseText(llvm::StringRef File, llvm::StringRef Bytes,
                onnx::ModelProto &Proto) {
  std::string Text = Bytes.str(); // the parser wants a NUL-terminated string
  try {
    onnx::OnnxParser Parser(Text.c_str());
    auto Status = Parser.Parse(Proto);
    if (!Status.IsOK())
      return fileError(File, "cannot parse ONNX text syntax: " +
                                 Status.ErrorMessage());
  } catch (const std::exception &E) {
    return fileError(File, llvm::Twine("cannot parse ONNX text syntax: ") + E.what());
  }
  return Error::success();
}

Error parseBinary(llvm::StringRef File, llvm::StringRef Bytes,
                  const LeanReadOptions &Lean, onnx::ModelProto &Proto,
                  uint64_t &Skipped) {
  if (Bytes.empty())
    return fileError(File, "file is empty; not an ONNX model");
  std::string Filtered;
  LeanReadStats Stats;
  if (Error E = leanFilterModel(Bytes, Filtered, Stats, Lean))
    return fileError(File, "not a valid ONNX protobuf: " + llvm::toString(std::move(E)));
  Skipped = Stats.SkippedPayloadBytes;
  if (Filtered.size() > (size_t(1) << 31) - 1)
    return fileError(File, "graph structure alone exceeds protobuf's 2 GiB limit");
  if (!Proto.ParseFromString(Filtered))
    return fileError(File, "not a valid ONNX protobuf (ModelProto failed to parse)");
  if (!Proto.has_graph())
    return fileError(File, "not an ONNX model: it has no graph");
  return Error::success();
}

void setDims(onnx::TensorShapeProto &S,
             const llvm::StringMap<int64_t> &Bindings, llvm::StringSet<> &Used,
             const std::vector<std::pair<std::string, std::string>> &Renames) {
  for (auto &D : *S.mutable_dim())
    if (D.has_dim_param()) {
      for (const auto &[From, To] : Renames)
        if (D.dim_param() == From)
          D.set_dim_param(To);
      auto It = Bindings.find(D.dim_param());
      if (It != Bindings.end()) {
        Used.insert(D.dim_param());
        D.set_dim_value(It->second);
        continue;
      }
      // An expression of bound symbols ("past_sequence_length + 1").
      sym::ExprRef E = Dim::fromParam(D.dim_param()).expr();
      if (!E || E->kind() == sym::Expr::Kind::Symbol)
        continue;
      E = sym::substitute(E, [&](llvm::StringRef Name) -> std::optional<int64_t> {
        auto B = Bindings.find(Name);
        return B == Bindings.end() ? std::nullopt : std::optional<int64_t>(B->second);
      });
      if (std::optional<int64_t> C = E ? E->constant() : std::nullopt; C && *C >= 0)
        D.set_dim_value(*C);
    }
}

/// Applies --input-shape and --dim to the parsed file, for ONNX's fallback
/// inference. bindShapes has checked them on the IR already.
void applyBindings(onnx::ModelProto &Proto, const LoadOptions &Opts) {
  onnx::GraphProto &G = *Proto.mutable_graph();
  for (const auto &[Name, Dims] : Opts.InputShapes)
    for (auto &In : *G.mutable_input())
      if (In.name() == Name) {
        auto *TT = In.mutable_type()->mutable_tensor_type();
        TT->clear_shape();
        // Shapes the file stores for outputs and intermediates were
        // computed for the old input shape: drop them.
        G.clear_value_info();
        for (auto &Out : *G.mutable_output())
          if (Out.type().has_tensor_type())
            Out.mutable_type()->mutable_tensor_type()->clear_shape();
        auto *S = TT->mutable_shape();
        for (int64_t D : Dims) {
          if (D == LoadOptions::SymbolDim)
            S->add_dim()->set_dim_param(Opts.SymbolDimName);
          else
            S->add_dim()->set_dim_value(D);
        }
      }
  if (Opts.DimBindings.empty() && Opts.DimRenames.empty())
    return;
  llvm::StringMap<int64_t> Bindings;
  for (const auto &[Name, N] : Opts.DimBindings)
    Bindings[Name] = N;
  llvm::StringSet<> Used;
  for (auto *List : {G.mutable_input(), G.mutable_output(), G.mutable_value_info()})
    for (auto &VI : *List)
      if (VI.type().has_tensor_type() && VI.type().tensor_type().has_shape())
        setDims(*VI.mutable_type()->mutable_tensor_type()->mutable_shape(),
                Bindings, Used, Opts.DimRenames);
}

/// Drops the shapes a file declares inside G's control-flow bodies, at any
/// depth: their intermediates, outputs and inputs.
void forgetBodyShapes(Graph &G) {
  G.walk([](const Node &N) {
    for (Graph *Body : N.subgraphs())
      for (Value &V : Body->Values)
        if (V.Kind == ValueKind::Intermediate || V.Kind == ValueKind::GraphInput)
          V.Shp.reset();
  });
}

/// Applies --input-shape and --dim to the imported IR: the main graph's
/// inputs, and the shapes the file declares for its outputs and
/// intermediates. Errors name what is not there.
Error bindShapes(llvm::StringRef File, Model &M, const LoadOptions &Opts,
                 llvm::StringSet<> &Used) {
  Graph &G = *M.Main;
  for (const auto &[Name, Dims] : Opts.InputShapes) {
    Value *In = nullptr;
    std::string Names;
    for (Value *V : G.Inputs) {
      if (V->Name == Name)
        In = V;
      Names += (Names.empty() ? "" : ", ") + V->Name.str();
    }
    if (!In)
      return fileError(File, formatv("--input-shape: no graph input named '{0}' "
                                     "(inputs: {1})",
                                     Name, Names));
    if (In->isInitializer()) // an old exporter lists its weights as inputs
      return fileError(File, formatv("--input-shape: '{0}' is an initializer (a weight "
                                     "whose shape its data fixes), not an input",
                                     Name));
    // Shapes the file stores for outputs and intermediates were computed for
    // the old input shape: drop them so shape inference recomputes them;
    // so were a control-flow body's (its inputs' too: a Loop's carried
    // state declared at the exported batch; inference types them from the
    // values they receive).
    for (Value &V : G.Values)
      if (V.Kind == ValueKind::Intermediate)
        V.Shp.reset();
    forgetBodyShapes(G);
    Shape S;
    for (int64_t D : Dims)
      S.Dims.push_back(D == LoadOptions::SymbolDim ? Dim::symbolic(Opts.SymbolDimName)
                                                   : Dim::known(D));
    In->Shp = S;
  }
  if (!Opts.DimRenames.empty())
    for (Value &V : G.Values)
      V.Shp = mapSymbolicDims(V.Shp, [&](Dim D) {
        return Dim::of(sym::substitute(D.expr(), [&](llvm::StringRef Name) -> sym::ExprRef {
          for (const auto &[From, To] : Opts.DimRenames)
            if (Name == From)
              return sym::symbol(To);
          return nullptr;
        }));
      });
  if (Opts.DimBindings.empty())
    return Error::success();
  llvm::StringMap<int64_t> Bindings;
  for (const auto &[Name, N] : Opts.DimBindings) {
    auto [It, New] = Bindings.try_emplace(Name, N);
    if (!New && It->second != N)
      return usageError(formatv("--dim {0}: bound twice, to {1} and to {2}", Name,
                                It->second, N));
    M.DimBindings[Name] = N; // for the symbols shape inference makes
  }
  auto Bind = [&](llvm::StringRef Name) -> std::optional<int64_t> {
    auto It = Bindings.find(Name);
    if (It == Bindings.end())
      return std::nullopt;
    Used.insert(Name);
    return It->second;
  };
  for (Value &V : G.Values)
    V.Shp = mapSymbolicDims(V.Shp, [&](Dim D) { return Dim::of(sym::substitute(D.expr(), Bind)); });
  return Error::success();
}

/// Inferred shapes that contradict the file's declared ones, or whose dims
/// overflow: errors when the user bound dims or input shapes (the binding is
/// at fault: it names the value and node), else warnings (a file whose
/// declared shapes are stale).
Error reportConflicts(llvm::StringRef File, const std::vector<ShapeConflict> &Conflicts,
                      const LoadOptions &Opts, DiagnosticEngine &Diags) {
  if (Conflicts.empty())
    return Error::success();
  const ShapeConflict &C = Conflicts.front();
  std::string What =
      C.Declared.empty()
          ? formatv("node '{0}' output '{1}': {2}", C.Node, C.Value, C.Inferred).str()
          : formatv("node '{0}' output '{1}': inferred {2} contradicts the declared {3}",
                    C.Node, C.Value, C.Inferred, C.Declared)
                .str();
  if (Conflicts.size() > 1)
    What += formatv(" (and {0} more)", Conflicts.size() - 1).str();
  bool Bound = !Opts.DimBindings.empty() || !Opts.InputShapes.empty();
  if (Bound && Opts.ConflictsAreErrors)
    return fileError(File, What + " at the bound dims (--dim, --input-shape)");
  Diags.warn(File, What);
  return Error::success();
}

/// A --dim that names no symbol of the inputs nor any data-dependent
/// symbol inference made is an error listing the symbols there are.
Error checkBindingsUsed(llvm::StringRef File, const Model &M, const LoadOptions &Opts,
                        const llvm::StringSet<> &Used) {
  const Graph &G = *M.Main;
  for (const auto &[Name, N] : Opts.DimBindings)
    if (!Used.contains(Name) && !M.DataSymbols.count(Name)) {
      std::set<std::string> Symbols;
      for (const Value *V : G.Inputs)
        if (V->Shp)
          for (const Dim &D : V->Shp->Dims)
            for (std::string &S : sym::symbols(D.expr()))
              Symbols.insert(std::move(S));
      std::string List;
      for (const auto &S : Symbols)
        List += (List.empty() ? "" : ", ") + S;
      std::string Data;
      for (const auto &[S, _] : M.DataSymbols)
        Data += (Data.empty() ? "" : ", ") + S;
      return fileError(File, formatv("--dim {0}: the model has no dimension named "
                                     "'{0}' (symbolic dims of its inputs: {1}{2}); a "
                                     "fixed dim is set with --input-shape NAME=AxBxC",
                                     Name, List.empty() ? "none" : List,
                                     Data.empty() ? "" : "; data-dependent: " + Data));
    }
  // A data-dependent symbol bound past what its node can give (more boxes
  // than NMS keeps, more iterations than the loop's maximum) is a binding
  // no run can have.
  for (const auto &[Name, N] : Opts.DimBindings) {
    auto It = M.DataSymbols.find(Name);
    if (It == M.DataSymbols.end() || !It->second.Bound)
      continue;
    std::optional<int64_t> Most = It->second.Bound->constant();
    if (Most && N > *Most)
      return fileError(File, formatv("--dim {0}={1}: node '{2}' gives at most {3} ({4})", Name,
                                     N, It->second.Node, *Most, It->second.What));
  }
  return Error::success();
}

/// What the model keeps of a shape inference: its data-dependent symbols,
/// broadcast assumptions, loops' trip counts and invalid nodes. (The model
/// imported again after ONNX's fallback inference once lost its loops' trip
/// counts: one place moves them all.)
void keepInferenceResults(Model &M, ShapeInferenceStats &Stats) {
  M.DataSymbols = std::move(Stats.DataSymbols);
  M.BroadcastAssumptions = std::move(Stats.Assumptions);
  M.LoopTrips = std::move(Stats.LoopTrips);
  M.InvalidNodes = std::move(Stats.Invalid);
}

void inferShapesInProcess(llvm::StringRef File, onnx::ModelProto &Proto,
                          DiagnosticEngine &Diags) {
  // Strict first, so that a broken model is reported; then leniently, so that
  // one op ONNX cannot infer does not cost the shapes of all the others.
  try {
    onnx::shape_inference::InferShapes(Proto, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 1, true));
    return;
  } catch (const std::exception &E) {
    llvm::StringRef Msg = E.what();
    Diags.warn(File, "ONNX shape inference: " + Msg.trim() +
                         " (continuing with what can be inferred)");
  }
  try {
    onnx::shape_inference::InferShapes(Proto, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception &E) {
    Diags.warn(File, llvm::Twine("ONNX shape inference failed: ") + E.what());
  }
}

/// ONNX 1.12's shape inference dereferences null pointers on some malformed
/// graphs (fuzzing found six: Shape or EyeLike of an undefined input, Scan
/// without a body, Conv with mismatched ranks, LayerNormalization with an
/// out-of-range axis). It runs in a child process: the child sends back the
/// inferred model and its warnings; if it dies or hangs, ridge warns and
/// keeps the shapes it has.
/// The child's side: infer, then send the warning count, each warning
/// (length-prefixed) and the model down the pipe. Never returns.
[[noreturn]] void inferInChild(llvm::StringRef File, onnx::ModelProto &Proto, int Fd) {
  // The parent reports a crash; the child must not print LLVM's stack dump.
  for (int Sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM})
    signal(Sig, SIG_DFL);
  alarm(120); // a hang is reported like a crash
  DiagnosticEngine ChildDiags;
  inferShapesInProcess(File, Proto, ChildDiags);
  std::string Out;
  auto Put = [&](llvm::StringRef S) {
    uint64_t N = S.size();
    Out.append(reinterpret_cast<const char *>(&N), sizeof N);
    Out.append(S.data(), S.size());
  };
  std::string Count = std::to_string(ChildDiags.warnings().size());
  Put(Count);
  for (const std::string &W : ChildDiags.warnings())
    Put(W);
  Put(Proto.SerializeAsString());
  const char *P = Out.data();
  size_t Left = Out.size();
  while (Left > 0) {
    ssize_t W = write(Fd, P, Left);
    if (W <= 0)
      _exit(3);
    P += W;
    Left -= size_t(W);
  }
  _exit(0);
}

/// Everything the child wrote, then its exit status; false (with a warning)
/// when it crashed or did not finish.
bool readChild(llvm::StringRef File, pid_t Child, int Fd, std::string &In,
               DiagnosticEngine &Diags) {
  char Buf[1 << 16];
  for (;;) {
    ssize_t R = read(Fd, Buf, sizeof Buf);
    if (R < 0 && errno == EINTR)
      continue;
    if (R <= 0)
      break;
    In.append(Buf, size_t(R));
  }
  close(Fd);
  int Status = 0;
  while (waitpid(Child, &Status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(Status) && WEXITSTATUS(Status) == 0)
    return true;
  Diags.warn(File, WIFSIGNALED(Status)
                       ? llvm::Twine("ONNX shape inference crashed (signal ") +
                             llvm::Twine(WTERMSIG(Status)) +
                             ") on this model; continuing without its shapes"
                       : llvm::Twine("ONNX shape inference did not finish; continuing "
                                     "without its shapes"));
  return false;
}

/// The child's message: its warnings, then the inferred model into Proto.
void decodeChildReply(const std::string &In, onnx::ModelProto &Proto, DiagnosticEngine &Diags) {
  size_t Off = 0;
  auto Get = [&](std::string &S) {
    uint64_t N;
    if (Off + sizeof N > In.size())
      return false;
    std::memcpy(&N, In.data() + Off, sizeof N);
    Off += sizeof N;
    if (N > In.size() - Off)
      return false;
    S.assign(In.data() + Off, N);
    Off += N;
    return true;
  };
  std::string Count, Model;
  if (!Get(Count))
    return;
  for (unsigned long I = 0, E = std::stoul(Count); I < E; ++I) {
    std::string W;
    if (!Get(W))
      return;
    Diags.warn("", W); // the child's warnings already name the file
  }
  if (Get(Model))
    Proto.ParseFromString(Model);
}

void inferShapesWithOnnx(llvm::StringRef File, onnx::ModelProto &Proto, DiagnosticEngine &Diags) {
  // ridge plan loads on two threads: one fork at a time, and ONNX's schema
  // registry built here, so that no child inherits it half-built.
  static std::mutex OneAtATime;
  std::lock_guard<std::mutex> Lock(OneAtATime);
  (void)onnx::OpSchemaRegistry::Instance();
  int Pipe[2];
  if (pipe(Pipe) != 0) {
    inferShapesInProcess(File, Proto, Diags);
    return;
  }
  fflush(nullptr);
  pid_t Child = fork();
  if (Child < 0) {
    close(Pipe[0]);
    close(Pipe[1]);
    inferShapesInProcess(File, Proto, Diags);
    return;
  }
  if (Child == 0) {
    close(Pipe[0]);
    inferInChild(File, Proto, Pipe[1]);
  }
  close(Pipe[1]);
  std::string In;
  if (readChild(File, Child, Pipe[0], In, Diags))
    decodeChildReply(In, Proto, Diags);
}

/// Inlines calls of model-local functions (as onnx-mlir and onnxruntime
/// do): each call becomes the function's nodes, formal inputs and outputs
/// bound to the call's, internal values prefixed with the call's name,
/// attribute references resolved from the call; inside the body's subgraphs
/// (If branches, Loop bodies) too. Nested calls are inlined too, up to a
/// depth that rejects recursion.
class FunctionInliner {
public:
  FunctionInliner(llvm::StringRef File, onnx::ModelProto &Proto) : File(File), Proto(Proto) {
    for (const auto &F : Proto.functions())
      Functions[key(F.domain(), F.name())] = &F;
  }

  Error run() {
    if (Functions.empty())
      return Error::success();
    return inlineGraph(*Proto.mutable_graph(), 0);
  }

private:
  llvm::StringRef File;
  onnx::ModelProto &Proto;
  llvm::StringMap<const onnx::FunctionProto *> Functions;

  static std::string key(llvm::StringRef Domain, llvm::StringRef Name) {
    return (Domain + "\x1f" + Name).str();
  }

  Error inlineGraph(onnx::GraphProto &G, unsigned Depth) {
    for (auto &N : *G.mutable_node())
      for (auto &A : *N.mutable_attribute()) {
        if (A.has_g())
          if (Error E = inlineGraph(*A.mutable_g(), Depth))
            return E;
        for (auto &Sub : *A.mutable_graphs())
          if (Error E = inlineGraph(Sub, Depth))
            return E;
      }
    bool Any = false;
    for (const auto &N : G.node())
      Any |= Functions.count(key(N.domain(), N.op_type())) > 0;
    if (!Any)
      return Error::success();
    if (Depth > 32)
      return fileError(File, "model-local functions call each other more than 32 deep "
                             "(recursion?)");
    google::protobuf::RepeatedPtrField<onnx::NodeProto> Out;
    for (int I = 0; I < G.node_size(); ++I) {
      const onnx::NodeProto &N = G.node(I);
      auto It = Functions.find(key(N.domain(), N.op_type()));
      if (It == Functions.end()) {
        *Out.Add() = N;
        continue;
      }
      // An unnamed call is named as the importer would name it.
      expand(N, N.name().empty() ? N.op_type() + "_" + std::to_string(I) : N.name(),
             *It->second, Out);
    }
    *G.mutable_node() = std::move(Out);
    return inlineGraph(G, Depth + 1); // calls inside the inlined bodies
  }

  using NameMap = std::function<std::string(const std::string &)>;
  using CallAttrMap = std::map<std::string, const onnx::AttributeProto *>;

  /// A body node as it stands in the caller: values renamed, attribute
  /// references taken from the call (or dropped: the default applies), and
  /// the same done inside its subgraphs.
  static void rewriteNode(onnx::NodeProto &N, const NameMap &Map, const CallAttrMap &CallAttrs,
                          const std::string &Prefix) {
    for (auto &In : *N.mutable_input())
      In = Map(In);
    for (auto &O : *N.mutable_output())
      O = Map(O);
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> Attrs;
    for (const auto &A : N.attribute()) {
      if (A.ref_attr_name().empty()) {
        onnx::AttributeProto Copy = A;
        if (Copy.has_g())
          rewriteGraph(*Copy.mutable_g(), Map, CallAttrs, Prefix);
        for (auto &G : *Copy.mutable_graphs())
          rewriteGraph(G, Map, CallAttrs, Prefix);
        *Attrs.Add() = std::move(Copy);
        continue;
      }
      auto It = CallAttrs.find(A.ref_attr_name());
      if (It == CallAttrs.end())
        continue;
      onnx::AttributeProto Resolved = *It->second;
      Resolved.set_name(A.name());
      *Attrs.Add() = std::move(Resolved);
    }
    *N.mutable_attribute() = std::move(Attrs);
    if (N.domain().empty() || N.domain() == "ai.onnx")
      N.clear_domain();
  }

  /// A subgraph of a body node: every name in it is the function's own (a
  /// body reaches outside only through its formals), so all are renamed the
  /// same way; the graph and its named nodes are prefixed like the body.
  static void rewriteGraph(onnx::GraphProto &G, const NameMap &Map, const CallAttrMap &CallAttrs,
                           const std::string &Prefix) {
    G.set_name(Prefix + G.name());
    for (auto *List : {G.mutable_input(), G.mutable_output(), G.mutable_value_info()})
      for (auto &VI : *List)
        VI.set_name(Map(VI.name()));
    for (auto &T : *G.mutable_initializer())
      T.set_name(Map(T.name()));
    for (auto &ST : *G.mutable_sparse_initializer()) {
      ST.mutable_values()->set_name(Map(ST.values().name()));
      ST.mutable_indices()->set_name(Map(ST.indices().name()));
    }
    for (auto &N : *G.mutable_node()) {
      if (!N.name().empty())
        N.set_name(Prefix + N.name());
      rewriteNode(N, Map, CallAttrs, Prefix);
    }
  }

  void expand(const onnx::NodeProto &Call, const std::string &CallName,
              const onnx::FunctionProto &F,
              google::protobuf::RepeatedPtrField<onnx::NodeProto> &Out) {
    std::string Prefix = CallName + "/";
    std::map<std::string, std::string> Rename;
    for (int I = 0; I < F.input_size(); ++I)
      Rename[F.input(I)] = I < Call.input_size() ? Call.input(I) : std::string();
    for (int I = 0; I < F.output_size(); ++I)
      Rename[F.output(I)] = I < Call.output_size() ? Call.output(I) : std::string();
    NameMap Map = [&](const std::string &Name) {
      if (Name.empty())
        return Name;
      auto It = Rename.find(Name);
      return It != Rename.end() ? It->second : Prefix + Name;
    };
    CallAttrMap CallAttrs;
    for (const auto &A : Call.attribute())
      CallAttrs[A.name()] = &A;
    int K = 0;
    for (const auto &BodyNode : F.node()) {
      onnx::NodeProto N = BodyNode;
      N.set_name(Prefix + (BodyNode.name().empty()
                               ? BodyNode.op_type() + "_" + std::to_string(K)
                               : BodyNode.name()));
      ++K;
      rewriteNode(N, Map, CallAttrs, Prefix);
      *Out.Add() = std::move(N);
    }
  }
};

/// One diagnostic naming the nodes whose inputs break their op's rules (the
/// first in graph order).
void reportInvalidNodes(const Model &M, DiagnosticEngine &Diags) {
  if (M.InvalidNodes.empty())
    return;
  const Node *First = nullptr;
  M.Main->walk([&](const Node &N) {
    if (!First && M.InvalidNodes.count(&N))
      First = &N;
  });
  if (!First)
    First = M.InvalidNodes.begin()->first;
  Diags.warn(M.Path, formatv("{0} node(s) break their op's rules (ONNX Runtime would refuse "
                             "the model), the first '{1}' ({2}): {3}; they are reported "
                             "unmodeled",
                             M.InvalidNodes.size(), First->Name, First->qualifiedOpType(),
                             M.InvalidNodes.find(First)->second));
}

/// One diagnostic naming what shape inference assumed of symbolic dims.
void reportAssumptions(const Model &M, DiagnosticEngine &Diags) {
  if (M.BroadcastAssumptions.empty())
    return;
  const BroadcastAssumption &A = M.BroadcastAssumptions.front();
  Diags.warn(M.Path,
             formatv("{0} broadcast(s) pair a symbolic dim with a fixed extent, the first in "
                     "'{1}' ({2} against {3}): ONNX allows that only where the dim is 1 or {3}, "
                     "and ridge takes {3} there",
                     M.BroadcastAssumptions.size(), A.Node, A.Dim->str(), A.Against));
}

/// One diagnostic listing the values whose shapes are still unknown.
void reportUnknownShapes(const Model &M, bool SymbolicCosted, DiagnosticEngine &Diags) {
  std::vector<std::string> Items;
  std::set<std::string> Symbols;
  size_t Count = 0;
  M.Main->walk([&](const Node &N) {
    for (Value *V : N.Outputs) {
      if (!V || V->hasKnownShape() || V->NonTensor)
        continue;
      if (SymbolicCosted && V->Shp &&
          llvm::all_of(V->Shp->Dims, [](const Dim &D) { return D.isDetermined(); }))
        continue;
      ++Count;
      if (V->Shp && !SymbolicCosted) // (costed symbols are not what is missing)
        for (const Dim &D : V->Shp->Dims)
          for (std::string &S : sym::symbols(D.expr()))
            Symbols.insert(std::move(S));
      if (Items.size() < 8)
        Items.push_back(formatv("'{0}' ({1} output, {2})", V->Name, N.OpType,
                                V->Shp ? "dims " + V->Shp->str() : "rank unknown")
                            .str());
    }
  });
  if (!Count)
    return;
  std::string Msg = formatv("{0} value(s) have unknown shapes: ", Count).str();
  for (size_t I = 0; I < Items.size(); ++I)
    Msg += (I ? ", " : "") + Items[I];
  if (Count > Items.size())
    Msg += formatv(", and {0} more", Count - Items.size()).str();
  if (!Symbols.empty()) {
    Msg += "; unbound symbols:";
    for (const auto &S : Symbols)
      Msg += " " + S;
    Msg += " (bind them with --dim NAME=N)";
  }
  Msg += "; ops reading them are reported as unmodeled";
  Diags.warn(M.Path, Msg);
}

} // namespace

struct ModelSource::Parsed {
  /// The file as read (mapped): the fast path decodes it in place.
  std::unique_ptr<llvm::MemoryBuffer> File;
  /// The protobuf path's model, serialized for the decoder (text files,
  /// files with functions or anything else strict decoding leaves to
  /// protobuf).
  std::string Serialized;
  bool FromProtobuf = false; ///< Wire refers into Serialized, not File
  wire::Model Wire;
  std::string Dir;  ///< where external data locations are resolved
  uint64_t FileBytes = 0, Skipped = 0;
  /// The model as protobuf objects, for ONNX's shape inference (the
  /// fallback): parsed on first need, once for both loads.
  std::once_flag ProtoOnce;
  std::unique_ptr<onnx::ModelProto> Proto;
  std::string ProtoError;
};

ModelSource::~ModelSource() = default;

llvm::Expected<std::unique_ptr<ModelSource>> ModelSource::open(llvm::StringRef Path,
                                                               const LoadOptions &Opts) {
  auto BufOrErr = [&] {
    Timing::Scope Read(Opts.Timer, "load: read file");
    return Path == "-" ? llvm::MemoryBuffer::getSTDIN()
                       : llvm::MemoryBuffer::getFile(Path, /*IsText=*/false,
                                                     /*RequiresNullTerminator=*/false);
  }();
  if (!BufOrErr)
    return fileError(Path, BufOrErr.getError().message());
  return openBuffer(std::move(*BufOrErr), Path, Opts);
}

llvm::Expected<std::unique_ptr<ModelSource>>
ModelSource::openBuffer(std::unique_ptr<llvm::MemoryBuffer> Buffer, llvm::StringRef Path,
                        const LoadOptions &Opts) {
  std::optional<Timing::Scope> Phase;
  std::unique_ptr<ModelSource> Src(new ModelSource);
  Src->Path = Path.str();
  Src->P = std::make_unique<Parsed>();
  Parsed &P = *Src->P;
  P.File = std::move(Buffer);
  llvm::StringRef Bytes = P.File->getBuffer();
  adviseRandomAccess(Bytes);
  P.FileBytes = Bytes.size();

  // A binary file is decoded where it lies (tensor payloads skipped, no
  // protobuf objects); what strict decoding leaves to protobuf (malformed
  // bytes, which protobuf reports; functions, which it inlines; rare
  // fields) and text files take the protobuf path, serialized for the same
  // decoder.
  Phase.emplace(Opts.Timer, "load: parse");
  wire::DecodeOptions Strict;
  Strict.KeepPayloadBytes = Opts.Lean.KeepPayloadBytes;
  Strict.MaxDepth = Opts.Lean.MaxDepth;
  bool Text = looksLikeText(Path, Bytes);
  if (Text || Bytes.empty() || !wire::decodeModel(Bytes, P.Wire, Strict) || !P.Wire.HasGraph) {
    google::protobuf::Arena Arena;
    auto *Proto = google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&Arena);
    P.Skipped = 0;
    if (Text) {
      if (Error E = parseText(Path, Bytes, *Proto))
        return E;
    } else if (Error E = parseBinary(Path, Bytes, Opts.Lean, *Proto, P.Skipped)) {
      return E;
    }
    if (Error E = FunctionInliner(Path, *Proto).run())
      return E;
    P.Serialized = Proto->SerializeAsString();
    P.Wire = wire::Model();
    if (!wire::decodeModel(P.Serialized, P.Wire, wire::trustedDecode()))
      return fileError(Path, "cannot decode the model protobuf parsed (internal error)");
    P.FromProtobuf = true;
    P.File.reset(); // everything needed is in Serialized
  } else {
    P.Skipped = P.Wire.SkippedPayloadBytes;
  }

  llvm::SmallString<256> Dir(Path == "-" ? "." : Path);
  llvm::sys::path::remove_filename(Dir);
  P.Dir = Dir.empty() ? "." : Dir.str().str();

  // The inputs as declared, for binding a batch dim without importing
  // (old exporters list initializers among the inputs: those are left out).
  const wire::Graph &G = P.Wire.G;
  llvm::StringSet<> Inits, Names;
  for (const auto &VI : G.Inputs)
    Names.insert(VI.Name);
  for (llvm::StringRef T : G.Initializers)
    if (llvm::StringRef Name = wire::initializerName(T); Names.contains(Name))
      Inits.insert(Name);
  for (const auto &T : G.SparseInitializers)
    if (Names.contains(T.Values.Name))
      Inits.insert(T.Values.Name);
  for (const auto &VI : G.Inputs) {
    if (Inits.contains(VI.Name))
      continue;
    Input In;
    In.Name = VI.Name.str();
    In.Ranked = VI.Ty.K == wire::Type::Kind::Tensor && VI.Ty.HasShape;
    if (In.Ranked)
      for (const wire::Dimension &D : VI.Ty.Dims)
        In.Dims.push_back(D.K == wire::Dimension::Kind::Value ? Dim::known(D.Value)
                                                               : Dim::fromParam(D.Param));
    Src->Inputs.push_back(std::move(In));
  }
  return Src;
}

/// The model as protobuf objects (for ONNX's shape inference), parsed on
/// first use: from what the protobuf path serialized, or from the file.
static const onnx::ModelProto *protoOf(llvm::StringRef Path, ModelSource::Parsed &P,
                                       const LoadOptions &Opts) {
  std::call_once(P.ProtoOnce, [&] {
    P.Proto = std::make_unique<onnx::ModelProto>();
    uint64_t Skipped = 0;
    if (P.FromProtobuf) {
      if (!P.Proto->ParseFromString(P.Serialized))
        P.ProtoError = "cannot parse the model serialized (internal error)";
    } else if (Error E = parseBinary(Path, P.File->getBuffer(), Opts.Lean, *P.Proto, Skipped)) {
      P.ProtoError = llvm::toString(std::move(E));
    }
  });
  return P.ProtoError.empty() ? P.Proto.get() : nullptr;
}

llvm::Expected<std::unique_ptr<Model>> ModelSource::load(const LoadOptions &Opts,
                                                         DiagnosticEngine &Diags) const {
  // A decoded model, or ONNX's inferred protobuf (importModel serializes
  // and decodes it).
  auto Import = [&](const auto &Proto) -> llvm::Expected<std::unique_ptr<Model>> {
    try {
      return importModel(Proto, Path, P->Dir, Diags);
    } catch (const std::exception &E) {
      return fileError(Path, llvm::Twine("cannot import model: ") + E.what());
    }
  };
  // Import first: it validates the graph (every input defined, no cycle)
  // before any shape inference sees it. Then the bindings, on the IR (the
  // decoded file stays as it is for the next load). Then ridge's own shape
  // rules; ONNX's inference (in a child process) only for what they leave
  // unknown.
  std::optional<Timing::Scope> Phase(std::in_place, Opts.Timer, "load: import to IR");
  llvm::Expected<std::unique_ptr<Model>> M = Import(P->Wire);
  if (!M)
    return M.takeError();
  llvm::StringSet<> Used;
  if (Error E = bindShapes(Path, **M, Opts, Used))
    return E;
  if (Opts.InferShapes) {
    Phase.emplace(Opts.Timer, "load: shape inference");
    ShapeInferenceStats Stats = ridge::inferShapes(*(*M)->Main, **M);
    keepInferenceResults(**M, Stats);
    if (Error E = reportConflicts(Path, Stats.Conflicts, Opts, Diags))
      return E;
    if (Stats.Unknown > 0) {
      Phase.emplace(Opts.Timer, "load: ONNX shape inference (fallback)");
      const onnx::ModelProto *Parsed = protoOf(Path, *P, Opts);
      if (!Parsed)
        return fileError(Path, P->ProtoError);
      onnx::ModelProto Bound(*Parsed);
      applyBindings(Bound, Opts);
      inferShapesWithOnnx(Path, Bound, Diags);
      Phase.emplace(Opts.Timer, "load: import to IR");
      auto Again = Import(Bound);
      if (!Again)
        return Again.takeError();
      M = std::move(Again);
      for (const auto &[Name, N] : Opts.DimBindings) // bound in the proto already
        (*M)->DimBindings[Name] = N;
      Phase.emplace(Opts.Timer, "load: shape inference");
      ShapeInferenceStats Again2 = ridge::inferShapes(*(*M)->Main, **M);
      keepInferenceResults(**M, Again2);
    }
  }
  if (Error E = checkBindingsUsed(Path, **M, Opts, Used))
    return E;
  (*M)->FileBytes = P->FileBytes;
  (*M)->SkippedPayloadBytes = P->Skipped;
  reportUnknownShapes(**M, Opts.SymbolicShapesCosted, Diags);
  reportAssumptions(**M, Diags);
  reportInvalidNodes(**M, Diags);
  return M;
}

size_t ModelSource::numNodes() const { return P->Wire.G.Nodes.size(); }

llvm::Expected<std::unique_ptr<Model>>
ridge::loadModel(llvm::StringRef Path, const LoadOptions &Opts,
                 DiagnosticEngine &Diags) {
  auto Src = ModelSource::open(Path, Opts);
  if (!Src)
    return Src.takeError();
  return (*Src)->load(Opts, Diags);
}

llvm::Error ridge::modelAsBinary(llvm::StringRef Path, llvm::StringRef Bytes, std::string &Out,
                                bool &Binary) {
  Binary = !looksLikeText(Path, Bytes);
  if (Binary)
    return Error::success();
  onnx::ModelProto Proto;
  if (Error E = parseText(Path, Bytes, Proto))
    return E;
  Out = Proto.SerializeAsString();
  return Error::success();
}

llvm::Error ridge::reserializeModel(llvm::StringRef Path, llvm::StringRef Bytes,
                                   std::string &Out) {
  if (Bytes.size() > (size_t(1) << 31) - 1)
    return fileError(Path, "not valid ONNX protobuf framing, and too large (over 2 GiB) "
                           "for protobuf to read it");
  onnx::ModelProto Proto;
  if (!Proto.ParseFromArray(Bytes.data(), int(Bytes.size())))
    return fileError(Path, "not a valid ONNX protobuf (ModelProto failed to parse)");
  Out = Proto.SerializeAsString();
  return Error::success();
}

llvm::Expected<std::pair<std::string, int64_t>>
ridge::parseDimBinding(llvm::StringRef S) {
  auto [Name, Num] = S.split('=');
  int64_t N;
  if (Name.empty() || Num.getAsInteger(10, N) || N < 0)
    return usageError(formatv("--dim '{0}': expected NAME=N with N >= 0", S));
  return std::make_pair(Name.str(), N);
}

llvm::Expected<std::pair<std::string, std::vector<int64_t>>>
ridge::parseInputShape(llvm::StringRef S) {
  auto [Name, Dims] = S.rsplit('=');
  if (Name.empty() || Dims.empty())
    return usageError(formatv("--input-shape '{0}': expected NAME=AxBxC", S));
  std::vector<int64_t> Out;
  llvm::SmallVector<llvm::StringRef, 8> Parts;
  Dims.split(Parts, 'x');
  for (llvm::StringRef P : Parts) {
    int64_t N;
    if (P.getAsInteger(10, N) || N < 0)
      return usageError(formatv("--input-shape '{0}': dim '{1}' is not a "
                                "non-negative integer",
                                S, P));
    Out.push_back(N);
  }
  return std::make_pair(Name.str(), Out);
}

llvm::Expected<std::unique_ptr<Model>>
ridge::loadModelAtBatch(const ModelSource &Src, const LoadOptions &Opts,
                        llvm::StringRef BatchDim, int64_t Batch, DiagnosticEngine &Diags,
                        llvm::StringRef Who) {
  bool Plan = Who == "plan";
  LoadOptions LO = Opts;
  LO.ConflictsAreErrors = false; // the planner names a fixed batch itself
  // A free batch is costed as formulas in it: no warning of its dims.
  LO.SymbolicShapesCosted |= Batch == SymbolicBatch;
  // The inputs as the file declares them, with the user's --input-shape.
  std::vector<ModelSource::Input> Declared = Src.inputs();
  for (ModelSource::Input &In : Declared)
    for (const auto &[Name, Dims] : Opts.InputShapes)
      if (Name == In.Name) {
        In.Ranked = true;
        In.Dims.clear();
        for (int64_t D : Dims)
          In.Dims.push_back(Dim::known(D));
      }
  std::vector<const ModelSource::Input *> Inputs;
  for (const ModelSource::Input &In : Declared)
    if (In.Ranked && !In.Dims.empty())
      Inputs.push_back(&In);
  // The batch dims: --batch-dim's names, else the first input's dim 0 when
  // symbolic. The plan sets them: a --dim of one would contradict it.
  std::vector<std::string> Batched;
  llvm::SmallVector<llvm::StringRef, 2> Names;
  BatchDim.split(Names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef N : Names)
    if (!N.trim().empty())
      Batched.push_back(N.trim().str());
  bool Named = !Batched.empty();
  if (!Named && !Inputs.empty() && !Inputs.front()->Dims[0].symbolName().empty())
    Batched.push_back(Inputs.front()->Dims[0].symbolName().str());
  for (const auto &[Name, N] : Opts.DimBindings)
    if (llvm::is_contained(Batched, Name))
      return fileError(Src.path(), formatv("--dim {0}: '{0}' is the batch dimension, which "
                                           "{1} sets itself ({2})",
                                           Name, Plan ? "plan" : "inference",
                                           Plan ? "--global-batch, --micro-batch" : Who));
  // Then the user's --dim bindings.
  for (ModelSource::Input &In : Declared)
    for (Dim &D : In.Dims)
      if (D.isSymbolic())
        D = Dim::of(sym::substitute(D.expr(), [&](llvm::StringRef S) -> std::optional<int64_t> {
          for (const auto &[Name, N] : Opts.DimBindings)
            if (Name == S)
              return N;
          return std::nullopt;
        }));
  // An input dim left symbolic keeps the ops that read it from being
  // costed: often a second name for the batch (torch names each input's
  // dynamic axis apart unless told otherwise). Bound says whether the plan
  // sets an input dim; SetsWhat says what it sets. (In a fixed-batch
  // export, naming a symbolic dim as the batch would leave the fixed one:
  // only --dim is offered there.)
  auto WarnUnbound = [&](llvm::function_ref<bool(const ModelSource::Input &, size_t)> Bound,
                         const std::string &SetsWhat) {
    // By free symbol, in the order first met: the input dims it appears
    // in (a KV-cache export has one past length in 64 inputs: the first
    // three name it, a count stands for the rest).
    std::vector<std::pair<std::string, std::vector<std::string>>> BySymbol;
    size_t Dims = 0;
    for (const ModelSource::Input *In : Inputs)
      for (size_t I = 0; I < In->Dims.size(); ++I) {
        const Dim &D = In->Dims[I];
        if (!D.isSymbolic() || Bound(*In, I))
          continue;
        std::vector<std::string> Free = sym::symbols(D.expr());
        llvm::erase_if(Free, [&](const std::string &S) { return llvm::is_contained(Batched, S); });
        Dims += !Free.empty();
        for (const std::string &S : Free) {
          auto It = llvm::find_if(BySymbol, [&](const auto &E) { return E.first == S; });
          if (It == BySymbol.end())
            It = BySymbol.insert(BySymbol.end(), {S, {}});
          It->second.push_back(formatv("'{0}' dim {1}", In->Name, I).str());
        }
      }
    if (BySymbol.empty())
      return;
    std::vector<std::string> Listed, Binds;
    for (const auto &[S, Where] : BySymbol) {
      constexpr size_t Shown = 3;
      std::vector<std::string> Head(Where.begin(), Where.begin() + std::min(Where.size(), Shown));
      std::string More =
          Where.size() > Shown ? formatv(" and {0} more", Where.size() - Shown).str() : "";
      std::string Name = sym::symbol(S)->str(); // quoted when not an identifier
      Listed.push_back(formatv("{0} ({1}{2})", Name, llvm::join(Head, ", "), More).str());
      Binds.push_back(formatv("--dim {0}=N", S).str());
    }
    const std::string &First = BySymbol.front().first;
    std::string BindAll = llvm::join(Binds, " ");
    std::string Fix =
        Batched.empty()
            ? formatv("bind {0} ({1})", BySymbol.size() == 1 ? "it" : "them", BindAll).str()
            : formatv("if {1} is the batch too, name both (--batch-dim {0},{1}); else bind "
                      "{2} ({3})",
                      llvm::join(Batched, ","), First, BySymbol.size() == 1 ? "it" : "them",
                      BindAll)
                  .str();
    Diags.warn(Src.path(),
               formatv("{4}: {0} input dim(s) not bound, and what reads them cannot be costed: "
                       "{1}; {5} sets only {2} to the {6}; {3}",
                       Dims, llvm::join(Listed, ", "), SetsWhat, Fix, Who,
                       Plan ? "the plan" : Who, Plan ? "micro-batch" : "batch"));
  };
  if (!Batched.empty()) {
    // (A name no input has is the load's error to report.)
    auto Declares = [&](const std::string &Name) {
      return llvm::any_of(Inputs, [&](const ModelSource::Input *In) {
        return llvm::any_of(In->Dims, [&](const Dim &D) { return D.symbolName() == Name; });
      });
    };
    if (llvm::all_of(Batched, Declares))
      WarnUnbound(
          [&](const ModelSource::Input &In, size_t I) {
            return llvm::is_contained(Batched, In.Dims[I].symbolName().str());
          },
          Named ? formatv("--batch-dim {0}", llvm::join(Batched, ",")).str()
                : formatv("the first input's dim 0 ({0})", Batched[0]).str());
    if (Batch == SymbolicBatch) {
      for (const std::string &Name : Batched)
        if (!Declares(Name)) {
          std::set<std::string> Symbols;
          for (const ModelSource::Input *In : Inputs)
            for (const Dim &D : In->Dims)
              for (std::string &S : sym::symbols(D.expr()))
                Symbols.insert(std::move(S));
          return fileError(Src.path(),
                           formatv("--batch-dim {0}: the model has no dimension named '{0}' "
                                   "(symbolic dims of its inputs: {1})",
                                   Name, Symbols.empty() ? "none" : llvm::join(Symbols, ", ")));
        }
      for (size_t I = 1; I < Batched.size(); ++I)
        LO.DimRenames.emplace_back(Batched[I], Batched[0]);
    } else {
      for (const std::string &Name : Batched)
        LO.DimBindings.emplace_back(Name, Batch);
    }
    auto M = Src.load(LO, Diags);
    if (M && Batch == SymbolicBatch)
      (*M)->BatchSymbol = Batched[0];
    return M;
  }
  if (Inputs.empty())
    return fileError(Src.path(), "no graph input has a batch dimension to bind (use --batch-dim)");
  // A fixed-batch export: dim 0 of each input that has the first input's
  // (the batch it was exported with) is replaced. An input with another
  // dim 0 is not batched (a [5] bias beside a [3, 4, 5] input: replaced,
  // it broadcast at micro-batch 1 and clashed at 2).
  const Dim Exported = Inputs.front()->Dims[0];
  // (A replaced input's other dims must be known: an error below.)
  WarnUnbound([&](const ModelSource::Input &In, size_t) { return In.Dims[0] == Exported; },
              formatv("dim 0 of the inputs whose dim 0 is the first input's ({0})",
                      Exported.isKnown() ? std::to_string(Exported.extent()) : "?")
                  .str());
  for (const ModelSource::Input *In : Inputs) {
    if (!(In->Dims[0] == Exported))
      continue;
    std::vector<int64_t> Dims{Batch == SymbolicBatch ? LoadOptions::SymbolDim : Batch};
    for (size_t I = 1; I < In->Dims.size(); ++I) {
      if (!In->Dims[I].isKnown())
        return fileError(Src.path(),
                         formatv("input '{0}' has unknown dim {1}: bind it with --dim "
                                 "or name the batch dim with --batch-dim",
                                 In->Name, I));
      Dims.push_back(In->Dims[I].extent());
    }
    LO.InputShapes.emplace_back(In->Name, Dims);
  }
  if (Batch != SymbolicBatch)
    return Src.load(LO, Diags);
  // The batch symbol: "batch", unless an input already has a dim of that name.
  std::string Name = "batch";
  for (const ModelSource::Input *In : Inputs)
    for (const Dim &D : In->Dims)
      for (const std::string &S : sym::symbols(D.expr()))
        if (S == Name)
          Name = "micro_batch";
  LO.SymbolDimName = Name;
  auto M = Src.load(LO, Diags);
  if (M)
    (*M)->BatchSymbol = Name;
  return M;
}
