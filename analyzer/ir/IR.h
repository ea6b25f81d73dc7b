//===- IR.h - ridge's graph IR: values, nodes, graphs, models ---*- C++ -*-===//
//
// The loader imports an ONNX ModelProto into this IR at one boundary; every
// analysis runs on it and never on protobuf objects. Nodes are stored in
// topological order. Shapes hold concrete and symbolic dims.
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_ANALYZER_IR_IR_H
#define RIDGE_ANALYZER_IR_IR_H

#include "analyzer/ir/DType.h"
#include "analyzer/symbolic/Expr.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMapEntry.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/iterator.h"
#include "llvm/ADT/iterator_range.h"
#include "llvm/Support/FormatProviders.h"
#include "llvm/Support/LEB128.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstring>
#include <map>
#include <mutex>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace ridge {

class Graph;
class Node;

/// S's one copy for the whole run (thread-safe; never freed): op types and
/// domains, interned by the importer so that a graph's nodes share them.
llvm::StringRef internString(llvm::StringRef S);

/// A string of internString's pool, held as one pointer (its pool entry
/// knows its length) and read as a StringRef: a node's op type and domain
/// take 8 bytes each, not 16.
class InternedString {
public:
  InternedString() = default;
  /// S's copy in the pool (the empty string: none).
  static InternedString of(llvm::StringRef S);
  llvm::StringRef ref() const { return E ? E->getKey() : llvm::StringRef(); }
  operator llvm::StringRef() const { return ref(); }
  bool empty() const { return !E; }
  size_t size() const { return ref().size(); }
  const char *data() const { return ref().data(); }
  std::string str() const { return ref().str(); }
  bool contains(llvm::StringRef S) const { return ref().contains(S); }
  bool starts_with(llvm::StringRef S) const { return ref().starts_with(S); }
  /// Equal strings are one entry: comparing two is comparing pointers.
  bool operator==(const InternedString &O) const { return E == O.E; }
  bool operator!=(const InternedString &O) const { return E != O.E; }

private:
  const llvm::StringMapEntry<std::nullopt_t> *E = nullptr;
};
inline bool operator==(const InternedString &A, llvm::StringRef B) { return A.ref() == B; }
inline bool operator!=(const InternedString &A, llvm::StringRef B) { return A.ref() != B; }
/// Against a string literal ("Constant"): its length is the array's, known
/// when compiled (through a const char * it was a strlen at each compare:
/// 1.6% of a bound analyze). Any other C string goes through StringRef.
template <size_t N> bool operator==(const InternedString &A, const char (&B)[N]) {
  return A.ref() == llvm::StringRef(B, N - 1);
}
template <size_t N> bool operator!=(const InternedString &A, const char (&B)[N]) {
  return !(A == B);
}

/// One dimension: a known extent, a symbolic expression of the model's
/// symbols (a dim_param "batch", or "2*seq", "floor((W + 1)/2) - 1"), or
/// unknown. Eight bytes, so that a shape's four inline dims take 32: a known
/// extent is stored as itself, an expression as its interned node's address
/// negated (at most -4096), unknown as -1. Equal dims are equal words.
class Dim {
public:
  Dim() = default;
  /// N when N >= 0; unknown otherwise.
  static Dim known(int64_t N) {
    Dim D;
    D.Raw = N >= 0 ? N : -1;
    return D;
  }
  /// The symbol named S (a dim_param); unknown when S is empty.
  static Dim symbolic(llvm::StringRef S) { return S.empty() ? Dim() : of(sym::symbol(S)); }
  /// A dim_param as a file stores it: a symbol, or an expression of symbols
  /// written with spaced operators as exporters write them
  /// ("past_sequence_length + sequence_length", "batch_size * num_heads"),
  /// read as that expression so that binding its symbols binds it. A name
  /// without a spaced operator ("batch-size", "p2o.Dim.0") stays one symbol.
  static Dim fromParam(llvm::StringRef S);
  /// E as a dim: a constant >= 0 is known; nullptr or a negative constant
  /// is unknown.
  static Dim of(sym::ExprRef E) {
    Dim D;
    if (!E)
      return D;
    if (std::optional<int64_t> C = E->constant())
      return known(*C);
    D.Raw = -int64_t(reinterpret_cast<uintptr_t>(E));
    return D;
  }
  bool isKnown() const { return Raw >= 0; }
  /// >= 0 when known, else -1.
  int64_t extent() const { return Raw >= 0 ? Raw : -1; }
  /// Not a number but an expression of symbols.
  bool isSymbolic() const { return Raw < -1; }
  /// Known or symbolic.
  bool isDetermined() const { return Raw != -1; }
  /// The dim as an expression: a constant when known, nullptr when unknown.
  sym::ExprRef expr() const {
    if (Raw >= 0)
      return sym::constant(Raw);
    return Raw < -1 ? reinterpret_cast<sym::ExprRef>(uintptr_t(-Raw)) : nullptr;
  }
  /// The symbol's name when the dim is exactly one symbol; else empty.
  llvm::StringRef symbolName() const {
    sym::ExprRef E = Raw < -1 ? expr() : nullptr;
    return E && E->kind() == sym::Expr::Kind::Symbol ? E->name() : llvm::StringRef();
  }
  /// "128", "batch", "2*seq", "?".
  std::string str() const;
  bool operator==(const Dim &O) const { return Raw == O.Raw; }
  bool operator!=(const Dim &O) const { return Raw != O.Raw; }

private:
  int64_t Raw = -1;
};
static_assert(sizeof(Dim) == 8, "a dim is one word");

/// A ranked shape. Unranked values have no Shape at all (see Value).
struct Shape {
  llvm::SmallVector<Dim, 4> Dims;

  size_t rank() const { return Dims.size(); }
  bool isFullyKnown() const;
  /// Every dim known or symbolic (none unknown).
  bool isDetermined() const {
    for (const Dim &D : Dims)
      if (!D.isDetermined())
        return false;
    return true;
  }
  /// Number of elements as a double: exact below 2^53, never wraps around
  /// (dims up to 2^62 multiply safely). nullopt when a dim is not known.
  std::optional<double> numElements() const;
  /// "[N,128,7]", "[batch,2*seq]"; "?" for an unknown dim.
  std::string str() const;
};

/// An interned Shape (internShape). It never changes once made, so what its
/// dims decide is computed once, not at every read: a cost rule asks for a
/// value's element count several times a node, and scanning the dims each
/// time was 5% of a bound analyze.
struct InternedShape : Shape {
  std::optional<double> Elements; ///< numElements(): set when fully known
};

/// S's one copy for the whole run (thread-safe; never freed, as sym's
/// expressions are not): values of equal shape share it.
const InternedShape *internShape(const Shape &S);

/// A value's shape: unknown rank, or one pointer to an interned Shape
/// (internShape). A graph has few distinct shapes (a generated 1M-node
/// graph a handful, a transformer one per tensor kind), and a Shape in
/// place took 56 bytes of each of its 1.5M values. Reads like the
/// std::optional<Shape> it replaces; a change assigns a whole shape.
class ValueShape {
public:
  ValueShape() = default;
  ValueShape(std::nullopt_t) {}
  ValueShape(const Shape &S) : P(internShape(S)) {}
  ValueShape(const std::optional<Shape> &S) : P(S ? internShape(*S) : nullptr) {}
  ValueShape &operator=(std::nullopt_t) {
    P = nullptr;
    return *this;
  }
  ValueShape &operator=(const Shape &S) {
    P = internShape(S);
    return *this;
  }
  ValueShape &operator=(const std::optional<Shape> &S) {
    P = S ? internShape(*S) : nullptr;
    return *this;
  }
  template <typename... Args> const Shape &emplace(Args &&...A) {
    P = internShape(Shape{std::forward<Args>(A)...});
    return *P;
  }
  void reset() { P = nullptr; }
  bool has_value() const { return P != nullptr; }
  explicit operator bool() const { return P != nullptr; }
  const Shape &operator*() const { return *P; }
  const Shape *operator->() const { return P; }
  const Shape &value() const { return *P; }
  /// A copy to change (then assign back).
  operator std::optional<Shape>() const {
    return P ? std::optional<Shape>(*P) : std::nullopt;
  }
  /// The shape's numElements(), from when it was interned; none for an
  /// unknown rank.
  std::optional<double> numElements() const { return P ? P->Elements : std::nullopt; }
  /// Equal shapes are one copy: comparing two is comparing pointers.
  bool operator==(const ValueShape &O) const { return P == O.P; }
  bool operator!=(const ValueShape &O) const { return P != O.P; }

private:
  const InternedShape *P = nullptr;
};

/// S with each symbolic dim D replaced by F(D) (unknown rank stays).
template <typename Fn> ValueShape mapSymbolicDims(const ValueShape &S, Fn F) {
  if (!S)
    return S;
  bool Any = false;
  for (const Dim &D : S->Dims)
    Any |= D.isSymbolic();
  if (!Any)
    return S;
  Shape Out = *S;
  for (Dim &D : Out.Dims)
    if (D.isSymbolic())
      D = F(D);
  return Out;
}

/// Where a value comes from.
enum class ValueKind : uint8_t { Intermediate, GraphInput, Initializer, OuterScope };

/// An optional value kept on the heap: one pointer in the object holding it
/// (most values are neither initializers nor small constants, and a 100k-node
/// graph has 150k values), with value semantics otherwise: a copy copies the
/// contents.
template <typename T> class Boxed {
public:
  Boxed() = default;
  Boxed(const Boxed &O) : P(O.P ? std::make_unique<T>(*O.P) : nullptr) {}
  Boxed(Boxed &&) noexcept = default;
  Boxed &operator=(const Boxed &O) {
    if (this != &O)
      P = O.P ? std::make_unique<T>(*O.P) : nullptr;
    return *this;
  }
  Boxed &operator=(Boxed &&) noexcept = default;
  template <typename... Args> T &emplace(Args &&...A) {
    P = std::make_unique<T>(std::forward<Args>(A)...);
    return *P;
  }
  void reset() { P.reset(); }
  explicit operator bool() const { return P != nullptr; }
  T &operator*() { return *P; }
  const T &operator*() const { return *P; }
  T *operator->() { return P.get(); }
  const T *operator->() const { return P.get(); }

private:
  std::unique_ptr<T> P;
};

/// What ridge knows of an initializer; its payload is never loaded.
struct InitializerInfo {
  bool External = false;        ///< data_location = EXTERNAL
  std::string Location;         ///< external file, relative to the model
  bool LocationMissing = false; ///< external file not found (a warning)
  bool operator<(const InitializerInfo &O) const {
    return std::tie(External, Location, LocationMissing) <
           std::tie(O.External, O.Location, O.LocationMissing);
  }
};

/// Integer tensors of at most this many elements have their values
/// followed element by element (analyzer/shapes: value analysis); the
/// importer keeps the payloads of such initializers and Constants.
/// Floating-point values are followed up to MaxFloatValueElems.
constexpr size_t MaxIntValueElems = 65536;
constexpr size_t MaxFloatValueElems = 64;

/// An SSA value: a graph input, an initializer or a node output.
/// A name a graph keeps (NameArena::save): one pointer to its length (a
/// varint) and bytes in the graph's name arena, null for the empty name.
/// Reads as a StringRef. 8 bytes, where a StringRef took 16 in every value
/// and node.
class PackedName {
public:
  PackedName() = default;
  llvm::StringRef ref() const {
    if (!P)
      return {};
    const auto *B = reinterpret_cast<const uint8_t *>(P);
    unsigned LenBytes = 0;
    uint64_t N = llvm::decodeULEB128(B, &LenBytes);
    return {P + LenBytes, size_t(N)};
  }
  operator llvm::StringRef() const { return ref(); }
  std::string str() const { return ref().str(); }
  bool empty() const { return P == nullptr; }
  size_t size() const { return ref().size(); }
  const char *data() const { return ref().data(); }

private:
  friend class NameArena;
  explicit PackedName(const char *P) : P(P) {}
  const char *P = nullptr;
};

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &OS, const PackedName &N) {
  return OS << N.ref();
}
inline bool operator==(const PackedName &A, llvm::StringRef B) { return A.ref() == B; }
inline bool operator==(llvm::StringRef A, const PackedName &B) { return A == B.ref(); }
inline bool operator==(const PackedName &A, const PackedName &B) { return A.ref() == B.ref(); }
inline bool operator!=(const PackedName &A, llvm::StringRef B) { return A.ref() != B; }
inline bool operator!=(llvm::StringRef A, const PackedName &B) { return A != B.ref(); }
inline bool operator!=(const PackedName &A, const PackedName &B) { return A.ref() != B.ref(); }
inline bool operator<(const PackedName &A, const PackedName &B) { return A.ref() < B.ref(); }

/// A slot of a graph's user arena: a node reading a value, or the head of
/// a value's block of them.
union UserSlot {
  Node *User;
  struct {
    uint32_t Size, Capacity;
  } Head;
};

/// Runs of value-initialized Ts (pointers, slots, name bytes) that live as
/// long as the arena, in chunks of ChunkSlots: one heap block each was a
/// million allocations on a large import. A run longer than a chunk gets a
/// chunk of its own; the current chunk's rest stays for the next runs.
template <typename T, size_t ChunkSlots = 8 * 1024> class SlotArena {
public:
  T *allocate(size_t N) {
    if (N > Left) {
      size_t Size = std::max(ChunkSlots, N);
      Chunks.push_back(std::make_unique<T[]>(Size));
      if (Size > ChunkSlots)
        return Chunks.back().get();
      Next = Chunks.back().get();
      Left = Size;
    }
    T *Run = Next;
    Next += N;
    Left -= N;
    return Run;
  }

private:
  std::vector<std::unique_ptr<T[]>> Chunks;
  T *Next = nullptr;
  size_t Left = 0;
};

/// A graph's blocks of user slots (UserList past one reader).
using UserArena = SlotArena<UserSlot>;

/// The nodes reading a value, once per operand position that reads it, in
/// import order: one in place, or a block in the importing graph's user
/// arena (its head, then the nodes) grown by doubling. One word; a value
/// with two readers takes 24 bytes of arena where TinyPtrVector's heap
/// list took 48 and a heap block.
class UserList {
public:
  UserList() { P.One = nullptr; }
  bool empty() const { return !isBlock() && !P.One; }
  size_t size() const { return isBlock() ? block()->Head.Size : P.One ? 1 : 0; }
  Node *const *begin() const { return isBlock() ? &block()[1].User : &P.One; }
  Node *const *end() const { return begin() + size(); }
  Node *operator[](size_t I) const {
    assert(I < size() && "user out of range");
    return begin()[I];
  }
  /// Appends N, growing into Arena.
  void push_back(Node *N, UserArena &Arena);

private:
  union {
    Node *One;      ///< no block: the one reader, or null
    UserSlot *Many; ///< a block, tagged with the low bit
  } P;
  bool isBlock() const { return bits() & 1; }
  uintptr_t bits() const {
    uintptr_t B;
    std::memcpy(&B, &P, sizeof B);
    return B;
  }
  UserSlot *block() const { return reinterpret_cast<UserSlot *>(bits() & ~uintptr_t(1)); }
};

class Value {
public:
  /// Set once, by the graph that adds the value (its name index hashed it),
  /// to its copy in the graph's name arena (Graph::saveName).
  PackedName Name;
  ValueKind Kind = ValueKind::Intermediate;
  DType Elem = DType::Undefined;
  bool IsGraphOutput = false;
  /// Declared as a sequence, map, optional or sparse tensor: no dense tensor
  /// shape to know (ops on such values are costed without one). A value with
  /// no type information at all is not NonTensor: its shape is unknown.
  bool NonTensor = false;
  /// Position in its graph's Values, in order of definition: two imports
  /// of one file number their values alike.
  uint32_t Id = 0;
  ValueShape Shp; ///< empty: rank unknown
  /// The node that computes the value; null for an initializer or a graph
  /// input.
  Node *producer() const { return isInitializer() ? nullptr : Def.Producer; }
  void setProducer(Node *N) {
    assert(!isInitializer() && "an initializer has no producer");
    Def.Producer = N;
  }
  /// What ridge knows of an initializer (null for any other value): one copy
  /// per model of each distinct info (Model::initializerInfo), as a
  /// generated graph's half million weights in one external file all have
  /// the same.
  const InitializerInfo *init() const { return isInitializer() ? Def.Init : nullptr; }
  void setInit(const InitializerInfo *I) {
    assert(isInitializer() && "only an initializer has initializer info");
    Def.Init = I;
  }
  /// The nodes reading the value, once per operand position that reads it.
  /// One pointer in place (most values have one reader; a 1M-node graph has
  /// 1.5M values), a block in the graph's user arena past one (UserList;
  /// Graph::addUser appends).
  UserList Users;
  /// Small integer constant contents, when the loader saw them (shape
  /// tensors, axes, index tables of at most MaxIntValueElems elements);
  /// used by ridge's own shape rules.
  Boxed<llvm::SmallVector<int64_t, 4>> IntData;

  bool isInitializer() const { return Kind == ValueKind::Initializer; }

private:
  /// Where the value comes from: a producer, or (initializers, which have
  /// none) their info. One word for the two: 12 MB on a million-node graph.
  union {
    Node *Producer = nullptr;
    const InitializerInfo *Init;
  } Def;

public:
  bool hasKnownShape() const { return Shp.numElements().has_value(); }
  /// Elements, when the shape is fully known.
  std::optional<double> numElements() const { return Shp.numElements(); }
  /// Bytes at the value's element type, when the shape is fully known.
  std::optional<double> numBytes() const;
  /// "f32[N,128]", "f32[*]" when unranked.
  std::string typeStr() const;
};

/// A node attribute. Graph-valued attributes own their subgraphs.
///
/// An int, a float or an int list (what nearly every attribute is: axis,
/// perm, kernel_shape, pads, epsilon) is held in place; strings, float
/// lists, tensor dims and subgraphs live in a payload allocated only for
/// the attributes that have them. 112 bytes an attribute (288 when every
/// kind had its own member: a Conv's five were 1.4 KB).
struct Attribute {
  enum class Kind : uint8_t {
    Undefined, Float, Int, String, Tensor, Graph, Floats, Ints, Strings,
    Tensors, Graphs, SparseTensor, SparseTensors, TypeProto, TypeProtos
  };
  /// The members few attributes have.
  struct Payload {
    std::string S;
    llvm::SmallVector<double, 4> Floats;
    std::vector<std::string> Strings;
    /// For Tensor attributes: dims (payload not kept; small integer and
    /// float payloads go to Ints and Floats).
    llvm::SmallVector<int64_t, 4> TensorDims;
    std::vector<std::unique_ptr<Graph>> Graphs;
  };
  std::string Name;
  Kind K = Kind::Undefined;
  /// For Tensor attributes: the element type.
  DType TensorElem = DType::Undefined;
  double F = 0;
  int64_t I = 0;
  llvm::SmallVector<int64_t, 4> Ints;

  Attribute() = default;
  // noexcept, so that std::vector moves attributes when it grows.
  Attribute(Attribute &&) noexcept = default;
  Attribute &operator=(Attribute &&) noexcept = default;

  llvm::StringRef str() const { return More ? llvm::StringRef(More->S) : llvm::StringRef(); }
  llvm::ArrayRef<double> floats() const {
    return More ? llvm::ArrayRef<double>(More->Floats) : llvm::ArrayRef<double>();
  }
  llvm::ArrayRef<std::string> strings() const {
    return More ? llvm::ArrayRef<std::string>(More->Strings) : llvm::ArrayRef<std::string>();
  }
  llvm::ArrayRef<int64_t> tensorDims() const {
    return More ? llvm::ArrayRef<int64_t>(More->TensorDims) : llvm::ArrayRef<int64_t>();
  }
  llvm::ArrayRef<std::unique_ptr<Graph>> graphs() const {
    return More ? llvm::ArrayRef<std::unique_ptr<Graph>>(More->Graphs)
                : llvm::ArrayRef<std::unique_ptr<Graph>>();
  }
  /// The payload, allocated on first use (writers: the importer, tests).
  Payload &more() {
    if (!More)
      More = std::make_unique<Payload>();
    return *More;
  }

private:
  std::unique_ptr<Payload> More;
};
static_assert(sizeof(Attribute) <= 112, "an attribute keeps its rare members out of line");

/// Iterates the graphs of a range of attributes (each Graph or Graphs
/// attribute's, in order).
/// A node's attributes, in file order: one heap array, sized once by the
/// importer (reserve) and filled in order. 16 bytes, where a std::vector
/// took 24 a node.
class AttributeList {
public:
  AttributeList() = default;
  AttributeList(AttributeList &&O) noexcept
      : P(std::move(O.P)), Size(std::exchange(O.Size, 0)), Capacity(std::exchange(O.Capacity, 0)) {}
  AttributeList &operator=(AttributeList &&O) noexcept {
    P = std::move(O.P);
    Size = std::exchange(O.Size, 0);
    Capacity = std::exchange(O.Capacity, 0);
    return *this;
  }
  size_t size() const { return Size; }
  bool empty() const { return Size == 0; }
  const Attribute *data() const { return P.get(); }
  Attribute *begin() { return P.get(); }
  Attribute *end() { return P.get() + Size; }
  const Attribute *begin() const { return P.get(); }
  const Attribute *end() const { return P.get() + Size; }
  const Attribute &operator[](size_t I) const { return P[I]; }
  /// Room for N attributes in all (never shrinks).
  void reserve(size_t N) {
    if (N <= Capacity)
      return;
    std::unique_ptr<Attribute[]> Grown(new Attribute[N]);
    std::move(begin(), end(), Grown.get());
    P = std::move(Grown);
    Capacity = uint32_t(N);
  }
  void push_back(Attribute A) {
    if (Size == Capacity)
      reserve(std::max<size_t>(1, 2 * size_t(Capacity)));
    P[Size++] = std::move(A);
  }

private:
  std::unique_ptr<Attribute[]> P;
  uint32_t Size = 0, Capacity = 0;
};

class SubgraphIterator {
public:
  using iterator_category = std::forward_iterator_tag;
  using value_type = Graph *;
  using difference_type = std::ptrdiff_t;
  using pointer = Graph *const *;
  using reference = Graph *;
  SubgraphIterator(const Attribute *A, const Attribute *E) : A(A), E(E) { settle(); }
  Graph *operator*() const { return A->graphs()[G].get(); }
  SubgraphIterator &operator++() {
    ++G;
    settle();
    return *this;
  }
  bool operator==(const SubgraphIterator &O) const { return A == O.A && G == O.G; }
  bool operator!=(const SubgraphIterator &O) const { return !(*this == O); }

private:
  void settle() {
    while (A != E && G >= A->graphs().size()) {
      ++A;
      G = 0;
    }
  }
  const Attribute *A, *E;
  size_t G = 0;
};

/// A node's inputs or outputs, fixed in number once the importer made them
/// (Graph::operands): one operand held in place (nearly every output list,
/// many input lists), more in the graph's operand arena. 16 bytes a list,
/// where a SmallVector with inline slots took 40 (inputs) and 24 (outputs)
/// a node.
class OperandList {
public:
  OperandList() : One(nullptr) {}
  size_t size() const { return N; }
  bool empty() const { return N == 0; }
  Value **begin() { return N == 1 ? &One : Many; }
  Value **end() { return begin() + N; }
  Value *const *begin() const { return N == 1 ? &One : Many; }
  Value *const *end() const { return begin() + N; }
  Value *&operator[](size_t I) {
    assert(I < N && "operand out of range");
    return begin()[I];
  }
  Value *operator[](size_t I) const {
    assert(I < N && "operand out of range");
    return begin()[I];
  }
  Value *front() const { return (*this)[0]; }
  Value *back() const { return (*this)[N - 1]; }
  operator llvm::ArrayRef<Value *>() const { return {begin(), N}; }

private:
  friend class Graph;
  union {
    Value *One;   ///< N == 1
    Value **Many; ///< N > 1: N slots in the graph's operand arena
  };
  uint32_t N = 0;
};

class Node {
public:
  /// May be empty in the file; the importer names it. Points into the
  /// parent graph's name arena (Graph::saveName).
  PackedName Name;
  /// The op type and domain ("" for the default ai.onnx domain), interned
  /// for the whole run (internString): a graph has few distinct ones, and a
  /// string each cost a million-node graph 64 MB a load.
  InternedString OpType;
  InternedString Domain;
  /// nullptr: an omitted optional input (or output). Made by the graph
  /// (Graph::operands), in number as the file lists them.
  OperandList Inputs;
  OperandList Outputs;
  AttributeList Attrs;
  Graph *Parent = nullptr;
  unsigned Index = 0; ///< position in the parent's topological order
  /// The domain's opset (0: none imported, a model-local function). At most
  /// INT32_MAX (a larger one in the file reads as that): it shares a word
  /// with Index.
  int32_t OpsetVersion = 0;

  const Attribute *attr(llvm::StringRef Name) const;
  int64_t attrInt(llvm::StringRef Name, int64_t Default) const;
  double attrFloat(llvm::StringRef Name, double Default) const;
  std::string attrString(llvm::StringRef Name, llvm::StringRef Default) const;
  /// The ints attribute, or nullopt when absent.
  std::optional<llvm::ArrayRef<int64_t>> attrInts(llvm::StringRef Name) const;
  Value *input(unsigned I) const {
    return I < Inputs.size() ? Inputs[I] : nullptr;
  }
  Value *output(unsigned I) const {
    return I < Outputs.size() ? Outputs[I] : nullptr;
  }
  /// Subgraphs held by attributes (If branches, Loop/Scan bodies), in
  /// attribute order, without copying (graph walks ask every node).
  llvm::iterator_range<SubgraphIterator> subgraphs() const {
    return {SubgraphIterator(Attrs.data(), Attrs.data() + Attrs.size()),
            SubgraphIterator(Attrs.data() + Attrs.size(), Attrs.data() + Attrs.size())};
  }
  /// The same, as a list (for indexing).
  llvm::SmallVector<Graph *, 2> subgraphList() const {
    return llvm::SmallVector<Graph *, 2>(subgraphs());
  }
  /// "OpType", or "Domain.OpType" outside the default domain.
  std::string qualifiedOpType() const;
  /// "ai.onnx" for the default domain, else the domain.
  llvm::StringRef domainName() const {
    return Domain.empty() ? llvm::StringRef("ai.onnx") : Domain;
  }
};

/// A graph's values, with stable addresses, in chunks of 4, 8, ... 4096 and
/// then 4096 values: chunk k holds 4 << min(k, 10), so value I is found by
/// arithmetic on I (no table of pointers: 12 MB for a million-and-a-half
/// values). Iterates as Value &. (Not LLVM's BumpPtrAllocator: instantiated
/// here under AddressSanitizer it would interpose on libLLVM's own, which
/// does not unpoison what it hands out.)
class ValueList {
public:
  ValueList() = default;
  ValueList(const ValueList &) = delete;
  ValueList &operator=(const ValueList &) = delete;
  ~ValueList() {
    for (Value &V : *this)
      V.~Value();
    for (size_t C = 0; C < Chunks.size(); ++C)
      std::allocator<Value>().deallocate(Chunks[C], chunkSize(C));
  }
  Value &add() {
    if (Left == 0) {
      Left = chunkSize(Chunks.size());
      Next = std::allocator<Value>().allocate(Left);
      Chunks.push_back(Next);
    }
    Value *V = new (Next++) Value();
    --Left;
    V->Id = uint32_t(Count++);
    return *V;
  }
  /// The value with Id I (I < size()).
  Value *operator[](size_t I) const {
    size_t C = chunkOf(I);
    return Chunks[C] + (I - chunkStart(C));
  }
  class iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Value;
    using difference_type = std::ptrdiff_t;
    using pointer = Value *;
    using reference = Value &;
    iterator(const ValueList &L, size_t I) : L(&L), I(I) {
      if (I < L.Count)
        settleChunk();
    }
    Value &operator*() const { return *P; }
    Value *operator->() const { return P; }
    iterator &operator++() {
      ++I;
      if (++P == ChunkEnd && I < L->Count)
        settleChunk();
      return *this;
    }
    bool operator==(const iterator &O) const { return I == O.I; }
    bool operator!=(const iterator &O) const { return I != O.I; }

  private:
    /// P is value I: find where its chunk ends.
    void settleChunk() {
      P = (*L)[I];
      size_t C = chunkOf(I);
      ChunkEnd = L->Chunks[C] + chunkSize(C);
    }
    const ValueList *L;
    size_t I;
    Value *P = nullptr, *ChunkEnd = nullptr;
  };
  iterator begin() const { return iterator(*this, 0); }
  iterator end() const { return iterator(*this, Count); }
  size_t size() const { return Count; }
  void reserve(size_t N) { Chunks.reserve(chunkOf(N) + 1); }

private:
  /// Values in the chunks that grow (4 + 8 + ... + 4096).
  static constexpr size_t SmallValues = 4 * ((size_t(1) << 11) - 1);
  static size_t chunkSize(size_t C) { return size_t(4) << std::min<size_t>(C, 10); }
  /// The chunk of value I: chunk k (k <= 10) starts at 4 (2^k - 1).
  static size_t chunkOf(size_t I) {
    if (I < SmallValues)
      return 63 - unsigned(__builtin_clzll(uint64_t(I / 4 + 1)));
    return 11 + (I - SmallValues) / 4096;
  }
  /// The id of chunk C's first value.
  static size_t chunkStart(size_t C) {
    return C <= 11 ? 4 * ((size_t(1) << C) - 1) : SmallValues + (C - 11) * 4096;
  }
  std::vector<Value *> Chunks;
  Value *Next = nullptr;
  size_t Left = 0;
  size_t Count = 0;
};

/// A name with its hash in a NameIndex: an importer that prefetches a
/// name's slot some names ahead, then looks it up and adds it, hashes it
/// once (three times was 2% of a bound analyze's instructions).
struct NameKey {
  llvm::StringRef Name;
  uint32_t Hash = 0;
};

/// A graph's values by name: open addressing over (hash, Id) pairs, 8 bytes
/// a slot. A probe compares the stored hash and reads a value's name only
/// when the hash matches, so a lookup in a million-value graph reads the
/// slot array and the value found; a map keyed by the names themselves read
/// a value's name at every probe (a cache miss each).
class NameIndex {
public:
  static NameKey key(llvm::StringRef N) { return {N, hash(N)}; }
  /// The Id of the value named K.Name in Values, or none.
  std::optional<uint32_t> find(const NameKey &K, const ValueList &Values) const;
  /// Starts loading the slot where K's search begins into the cache.
  void prefetch(const NameKey &K) const {
    if (!Slots.empty())
      __builtin_prefetch(&Slots[K.Hash & (Slots.size() - 1)]);
  }
  /// Records V (whose name is not in the index yet), its name's hash given
  /// (NameKey's) or computed.
  void insert(const Value &V, uint32_t Hash);
  void insert(const Value &V);
  /// Sizes the index for N values.
  void reserve(size_t N);
  bool empty() const { return Count == 0; }

private:
  struct Slot {
    uint32_t Hash = 0;
    uint32_t Id = UINT32_MAX; ///< UINT32_MAX: empty
  };
  /// A power of two, at most 80% full (linear probing: an unsuccessful
  /// probe reads 13 slots on average, two cache lines).
  std::vector<Slot> Slots;
  size_t Count = 0;
  static uint32_t hash(llvm::StringRef N);
  void place(uint32_t Hash, uint32_t Id);
};

/// Copies of a graph's names, in chunks (a name is its bytes, no string
/// object: a million values' std::strings were 32 bytes each, and a heap
/// block each for any longer than 15 characters).
class NameArena {
public:
  /// S's copy, valid as long as the arena (the empty name: none).
  PackedName save(llvm::StringRef S);

private:
  SlotArena<char, 64 * 1024> Bytes;
};

/// A graph's operand lists of more than one operand (OperandList), their
/// slots null until set.
using OperandArena = SlotArena<Value *>;

/// A graph's nodes' storage, in chunks of up to 1024 (a heap block a node
/// was a million allocations and their headers on a 1M-node import). The
/// nodes live, at stable addresses, until the arena is destroyed.
class NodeArena {
public:
  NodeArena() = default;
  NodeArena(const NodeArena &) = delete;
  NodeArena &operator=(const NodeArena &) = delete;
  ~NodeArena();
  /// A new, default node.
  Node *create();

private:
  std::vector<std::pair<Node *, size_t>> Chunks; ///< (first, capacity)
  size_t Used = 0;                               ///< of the last chunk
};

/// A graph: the model's main graph, a subgraph or a function body.
class Graph {
public:
  std::string Name;
  Graph *Parent = nullptr; ///< enclosing graph for subgraphs
  Node *ParentNode = nullptr;
  ValueList Values;
  /// Topological order; the nodes are the graph's own (newNode).
  std::vector<Node *> Nodes;
  llvm::SmallVector<Value *, 4> Inputs;
  llvm::SmallVector<Value *, 4> Outputs;
  llvm::SmallVector<Value *, 8> Initializers;
  /// Values of enclosing graphs that nodes here (or deeper) read.
  llvm::SmallVector<Value *, 2> Captures;

  /// The value named N in this graph or, for subgraphs, an enclosing one.
  Value *lookup(llvm::StringRef N) const;
  /// The value named N in this graph only.
  Value *lookupLocal(llvm::StringRef N) const { return lookupLocal(NameIndex::key(N)); }
  Value *lookupLocal(const NameKey &K) const;
  /// Whether V is one of this graph's values (then Values[V->Id] is V).
  bool owns(const Value *V) const { return V->Id < Values.size() && Values[V->Id] == V; }
  /// A new node the graph owns (the caller places it in Nodes).
  Node *newNode() { return NodeStore.create(); }
  /// Records that N reads V (V of this graph or an enclosing one; its
  /// list grows in this graph's arena, which lives as long as V's).
  void addUser(Value *V, Node *N) { V->Users.push_back(N, UserStore); }
  /// A list of N operands, each null, for a node of this graph.
  OperandList operands(size_t N) {
    OperandList L;
    L.N = uint32_t(N);
    if (N > 1)
      L.Many = OperandStore.allocate(N);
    return L;
  }
  /// A list of the operands Vs, for a node of this graph.
  OperandList operands(llvm::ArrayRef<Value *> Vs) {
    OperandList L = operands(Vs.size());
    std::copy(Vs.begin(), Vs.end(), L.begin());
    return L;
  }
  /// The copy of S that the graph keeps (value names point into it).
  PackedName saveName(llvm::StringRef S) { return Names.save(S); }
  /// Adds a value named N (callers check the name is new; an existing value
  /// of that name is returned as is).
  Value *addValue(llvm::StringRef N, ValueKind K);
  /// The value named N, added with kind K if it was not there (second:
  /// whether it was added).
  std::pair<Value *, bool> tryAddValue(llvm::StringRef N, ValueKind K) {
    return tryAddValue(NameIndex::key(N), K);
  }
  std::pair<Value *, bool> tryAddValue(const NameKey &N, ValueKind K);
  /// Starts loading where a lookup of N in this graph will look (an
  /// importer looking names up in a loop calls it some names ahead, so that
  /// the cache misses of a large graph's index overlap).
  void prefetchName(const NameKey &K) const { ByName.prefetch(K); }
  /// Frees the name indexes of this graph and its subgraphs (16 MB for a
  /// million values) once the importer is done with them: the passes after
  /// it look a name up rarely (an attribute that names a value), and the
  /// first such lookup, or a value added, rebuilds the graph's index.
  void releaseNameIndex();
  /// Sizes the name index for about N values (import of a large graph).
  void reserveValues(size_t N) {
    if (ByName.empty() && N > 16) {
      ByName.reserve(std::min<size_t>(N, size_t(1) << 28));
      Values.reserve(std::min<size_t>(N, size_t(1) << 28));
    }
  }
  /// Calls F on every node here and in nested subgraphs, parents first.
  template <typename Fn> void walk(Fn &&F) const {
    for (const auto &N : Nodes) {
      F(*N);
      for (Graph *G : N->subgraphs())
        G->walk(F);
    }
  }
  size_t numNodesRecursive() const;
  /// The node of this graph that holds N: N itself when it is one of this
  /// graph's nodes, else the node whose subgraph (at any depth) holds it.
  const Node *holderOf(const Node *N) const {
    while (N->Parent != this && N->Parent->ParentNode)
      N = N->Parent->ParentNode;
    return N;
  }

private:
  NameArena Names;
  /// Rebuilt on demand after releaseNameIndex (hence mutable: a lookup is
  /// const); IndexLock serializes the rebuild against a planner thread.
  mutable NameIndex ByName;
  mutable std::atomic<bool> IndexReleased{false};
  mutable std::mutex IndexLock;
  NodeArena NodeStore;
  OperandArena OperandStore;
  UserArena UserStore;
  void ensureNameIndex() const;
};

/// A T for each value one graph's nodes read: by Value::Id for the graph's
/// own values (a vector, read in about the order of definition; a hash map
/// of pointers missed the cache at every query on a large graph), in a hash
/// map for the others (an enclosing or nested graph's). For flags, T is
/// uint8_t (a std::vector<bool> has no T &).
template <typename T> class ValueMap {
public:
  explicit ValueMap(const Graph &G, T Default = T())
      : G(G), Own(G.Values.size(), Default), Default(Default) {}
  /// V's entry, added as Default when absent.
  T &operator[](const Value *V) {
    return G.owns(V) ? Own[V->Id] : Other.try_emplace(V, Default).first->second;
  }
  /// V's entry, or Default.
  T lookup(const Value *V) const {
    if (G.owns(V))
      return Own[V->Id];
    auto It = Other.find(V);
    return It == Other.end() ? Default : It->second;
  }

private:
  const Graph &G;
  std::vector<T> Own;
  llvm::DenseMap<const Value *, T> Other;
  T Default;
};

/// A set of values, kept as ValueMap keeps its entries: a bit per value of
/// one graph (by Value::Id), a hash set for the others. Unbound (default
/// constructed), every value goes to the hash set. A million values take
/// 125 KB, where a hash set of their pointers took 32 MB and missed the
/// cache at every query.
class ValueSet {
public:
  ValueSet() = default;
  explicit ValueSet(const Graph &G) : G(&G), Own(G.Values.size()) {}
  /// Adds V; true when it was not there.
  bool insert(const Value *V) {
    if (G && G->owns(V)) {
      if (Own[V->Id])
        return false;
      Own[V->Id] = true;
      ++NumOwn;
      return true;
    }
    return Other.insert(V).second;
  }
  size_t count(const Value *V) const {
    return G && G->owns(V) ? size_t(Own[V->Id]) : Other.count(V);
  }
  size_t size() const { return NumOwn + Other.size(); }
  /// Calls F(V) for each value: the graph's by Id, then the others (in no
  /// order: what F does must not depend on it).
  template <typename Fn> void forEach(Fn F) const {
    for (size_t I = 0; NumOwn && I < Own.size(); ++I)
      if (Own[I])
        F(static_cast<const Value *>(G->Values[I]));
    for (const Value *V : Other)
      F(V);
  }

private:
  const Graph *G = nullptr;
  std::vector<bool> Own;
  size_t NumOwn = 0;
  llvm::DenseSet<const Value *> Other;
};

/// A model-local function (FunctionProto): its body is kept as a graph whose
/// inputs and outputs are the formal parameters (no shapes).
struct Function {
  std::string Domain;
  std::string Name;
  std::vector<std::string> AttributeNames;
  std::unique_ptr<Graph> Body;
};

/// A symbol shape inference made for an extent that depends on the data
/// (NonZero's count, NonMaxSuppression's selected boxes, ...): bindable with
/// --dim NAME=N, listed in the output with the bound ridge can prove.
struct DataSymbol {
  std::string Name;  ///< "<node>.<what>"
  std::string Node;  ///< the node that makes it
  std::string What;  ///< what it counts, in words
  sym::ExprRef Bound = nullptr; ///< an upper bound, when one is known
};

/// A broadcast that paired a symbolic dim with a fixed extent above 1: ONNX
/// allows it only where the symbol is 1 or that extent, and the result takes
/// the extent (a batch-fixed export adds a [8, 16] table to [batch, 16]).
struct BroadcastAssumption {
  std::string Node;
  sym::ExprRef Dim = nullptr;
  int64_t Against = 0;
};

class Model {
public:
  std::string Path;          ///< as given on the command line ("-" for stdin)
  int64_t IrVersion = 0;
  std::string Producer;      ///< producer_name and version
  std::map<std::string, int64_t> Opsets; ///< domain ("" = ai.onnx) -> version
  std::unique_ptr<Graph> Main;
  std::vector<Function> Functions;
  uint64_t FileBytes = 0;        ///< size of the file read
  uint64_t SkippedPayloadBytes = 0; ///< weight bytes never loaded
  /// --dim bindings, by symbol name, for symbols inference makes.
  std::map<std::string, int64_t> DimBindings;
  /// Data-dependent symbols, by name (bound ones included).
  std::map<std::string, DataSymbol> DataSymbols;
  /// Loaded with its batch left free (loadModelAtBatch, SymbolicBatch): the
  /// one symbol every batch dim is; empty otherwise.
  std::string BatchSymbol;
  /// What shape inference assumed of symbolic dims, in node order.
  std::vector<BroadcastAssumption> BroadcastAssumptions;
  /// Each Loop's trip count as shape inference found it: its maximum trip
  /// count (a number or an expression), or, with none, the data symbol
  /// "<node>.trips" (bound with --dim or left free).
  llvm::DenseMap<const Node *, sym::ExprRef> LoopTrips;
  /// Nodes whose inputs break their op's rules (operands that do not
  /// broadcast, a product's inner dims that differ), with why: ONNX Runtime
  /// refuses such a model, and ridge reports them unmodeled.
  llvm::DenseMap<const Node *, std::string> InvalidNodes;

  const Function *findFunction(llvm::StringRef Domain, llvm::StringRef Name) const;
  /// The first symbol of the main graph's input dims (the batch, usually),
  /// or nullptr: costs in it alone take sym::Count's fast univariate form
  /// (sym::UnivariateScope) while a whole graph is costed as formulas.
  sym::ExprRef leadingSymbol() const;
  /// The model's one copy of Info (initializers point to it).
  const InitializerInfo *initializerInfo(const InitializerInfo &Info) {
    return &*InitializerInfos.insert(Info).first;
  }
  /// The distinct initializer infos of the model (every graph's).
  const std::set<InitializerInfo> &initializerInfos() const { return InitializerInfos; }

private:
  std::set<InitializerInfo> InitializerInfos; ///< never moves its elements
};

} // namespace ridge

/// formatv("{0}", Name) prints the name as a StringRef would.
template <> struct llvm::format_provider<ridge::PackedName> {
  static void format(const ridge::PackedName &N, llvm::raw_ostream &OS, llvm::StringRef Style) {
    llvm::format_provider<llvm::StringRef>::format(N.ref(), OS, Style);
  }
};

#endif
