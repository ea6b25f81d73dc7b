//===- IR.cpp - ridge's graph IR ------------------------------------------===//
#include "analyzer/ir/IR.h"
#include "llvm/ADT/Twine.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TinyPtrVector.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>
#include <deque>
#include <mutex>

using namespace ridge;

bool Shape::isFullyKnown() const {
  for (const Dim &D : Dims)
    if (!D.isKnown())
      return false;
  return true;
}

std::optional<double> Shape::numElements() const {
  double N = 1;
  for (const Dim &D : Dims) {
    if (!D.isKnown())
      return std::nullopt;
    N *= static_cast<double>(D.extent());
  }
  return N;
}

std::string Shape::str() const {
  std::string S = "[";
  for (size_t I = 0; I < Dims.size(); ++I) {
    if (I)
      S += ',';
    S += Dims[I].str();
  }
  return S + "]";
}

std::optional<double> Value::numBytes() const {
  auto N = numElements();
  if (!N)
    return std::nullopt;
  return *N * dtypeBytes(Elem);
}

std::string Value::typeStr() const {
  return dtypeName(Elem).str() + (Shp ? Shp->str() : std::string("[*]"));
}

const Attribute *Node::attr(llvm::StringRef N) const {
  for (const Attribute &A : Attrs)
    if (A.Name == N)
      return &A;
  return nullptr;
}

int64_t Node::attrInt(llvm::StringRef N, int64_t Default) const {
  const Attribute *A = attr(N);
  return A && A->K == Attribute::Kind::Int ? A->I : Default;
}

double Node::attrFloat(llvm::StringRef N, double Default) const {
  const Attribute *A = attr(N);
  return A && A->K == Attribute::Kind::Float ? A->F : Default;
}

std::string Node::attrString(llvm::StringRef N, llvm::StringRef Default) const {
  const Attribute *A = attr(N);
  return A && A->K == Attribute::Kind::String ? A->str().str() : Default.str();
}

std::optional<llvm::ArrayRef<int64_t>> Node::attrInts(llvm::StringRef N) const {
  const Attribute *A = attr(N);
  if (!A || A->K != Attribute::Kind::Ints)
    return std::nullopt;
  return llvm::ArrayRef<int64_t>(A->Ints);
}

void Graph::releaseNameIndex() {
  ByName = NameIndex();
  IndexReleased.store(true, std::memory_order_release);
  for (Node *N : Nodes)
    for (Graph *Sub : N->subgraphs())
      Sub->releaseNameIndex();
}

void Graph::ensureNameIndex() const {
  if (!IndexReleased.load(std::memory_order_acquire))
    return;
  std::lock_guard<std::mutex> Hold(IndexLock);
  if (!IndexReleased.load(std::memory_order_relaxed))
    return;
  ByName.reserve(Values.size());
  for (const Value &V : Values)
    ByName.insert(V);
  IndexReleased.store(false, std::memory_order_release);
}

Value *Graph::lookupLocal(const NameKey &N) const {
  ensureNameIndex();
  std::optional<uint32_t> Id = ByName.find(N, Values);
  return Id ? Values[*Id] : nullptr;
}

Value *Graph::lookup(llvm::StringRef N) const {
  for (const Graph *G = this; G; G = G->Parent)
    if (Value *V = G->lookupLocal(N))
      return V;
  return nullptr;
}

/// S's entry in the run's pool (S not empty).
static const llvm::StringMapEntry<std::nullopt_t> *internEntry(llvm::StringRef S) {
  static std::mutex Lock;
  static llvm::StringSet<> Pool; // entries never move
  std::lock_guard<std::mutex> Hold(Lock);
  return &*Pool.insert(S).first;
}

/// A hash of dims' words (equal dims are equal words).
static unsigned hashDims(llvm::ArrayRef<Dim> D) {
  return unsigned(llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(D.data()), D.size() * sizeof(Dim))));
}

const InternedShape *ridge::internShape(const Shape &S) {
  static std::mutex Lock;
  // Shapes in a deque never move; the index maps a hash to the shapes
  // with it (collisions compared dim by dim).
  static std::deque<InternedShape> Pool;
  static llvm::DenseMap<unsigned, llvm::TinyPtrVector<const InternedShape *>> Index;
  unsigned H = hashDims(S.Dims);
  if (H >= ~1u) // DenseMap's reserved keys
    H = 0;
  std::lock_guard<std::mutex> Hold(Lock);
  llvm::TinyPtrVector<const InternedShape *> &Bucket = Index[H];
  for (const InternedShape *P : Bucket)
    if (llvm::ArrayRef<Dim>(P->Dims) == llvm::ArrayRef<Dim>(S.Dims))
      return P;
  Pool.push_back(InternedShape{S, S.numElements()});
  Bucket.push_back(&Pool.back());
  return &Pool.back();
}

llvm::StringRef ridge::internString(llvm::StringRef S) {
  return S.empty() ? llvm::StringRef() : internEntry(S)->getKey();
}

InternedString InternedString::of(llvm::StringRef S) {
  InternedString I;
  if (!S.empty())
    I.E = internEntry(S);
  return I;
}

Dim Dim::fromParam(llvm::StringRef S) {
  bool Spaced = false;
  for (const char *Op : {" + ", " - ", " * ", " / "})
    Spaced |= S.contains(Op);
  if (Spaced) {
    llvm::Expected<sym::ExprRef> E = sym::parse(S);
    if (E && *E)
      return of(*E);
    llvm::consumeError(E.takeError());
  }
  return symbolic(S);
}

std::string Dim::str() const {
  if (isKnown())
    return std::to_string(extent());
  return isSymbolic() ? expr()->str() : "?";
}

std::string Node::qualifiedOpType() const {
  return Domain.empty() ? OpType.str() : (Domain.ref() + "." + OpType.ref()).str();
}

NodeArena::~NodeArena() {
  for (size_t C = 0; C < Chunks.size(); ++C) {
    auto [P, N] = Chunks[C];
    size_t Live = C + 1 == Chunks.size() ? Used : N;
    for (size_t I = 0; I < Live; ++I)
      P[I].~Node();
    std::allocator<Node>().deallocate(P, N);
  }
}

Node *NodeArena::create() {
  if (Chunks.empty() || Used == Chunks.back().second) {
    size_t N = Chunks.empty() ? 4 : std::min<size_t>(2 * Chunks.back().second, 1024);
    Chunks.emplace_back(std::allocator<Node>().allocate(N), N);
    Used = 0;
  }
  return new (Chunks.back().first + Used++) Node();
}

void UserList::push_back(Node *N, UserArena &Arena) {
  if (!isBlock() && !P.One) {
    P.One = N;
    return;
  }
  size_t Size = size();
  size_t Capacity = isBlock() ? block()->Head.Capacity : 1;
  if (Size == Capacity) {
    // A block of twice the room (the old one stays in the arena).
    size_t Grown = 2 * Capacity;
    if (Grown > UINT32_MAX)
      llvm::report_fatal_error("a value read more than 2^32 times");
    UserSlot *B = Arena.allocate(Grown + 1);
    std::copy(begin(), end(), &B[1].User);
    B[0].Head = {uint32_t(Size), uint32_t(Grown)};
    uintptr_t Tagged = reinterpret_cast<uintptr_t>(B) | 1;
    std::memcpy(&P, &Tagged, sizeof Tagged);
  }
  UserSlot *B = block();
  B[1 + B[0].Head.Size++].User = N;
}

PackedName NameArena::save(llvm::StringRef S) {
  if (S.empty())
    return {};
  // The length as a ULEB128 varint (one byte below 128), then the bytes.
  uint8_t Len[10];
  unsigned L = llvm::encodeULEB128(S.size(), Len);
  char *At = Bytes.allocate(L + S.size());
  std::memcpy(At, Len, L);
  std::memcpy(At + L, S.data(), S.size());
  return PackedName(At);
}

Value *Graph::addValue(llvm::StringRef N, ValueKind K) { return tryAddValue(N, K).first; }

std::pair<Value *, bool> Graph::tryAddValue(const NameKey &N, ValueKind K) {
  ensureNameIndex();
  if (std::optional<uint32_t> Id = ByName.find(N, Values))
    return {Values[*Id], false};
  Value *V = &Values.add();
  V->Name = Names.save(N.Name);
  V->Kind = K;
  ByName.insert(*V, N.Hash);
  return {V, true};
}

uint32_t NameIndex::hash(llvm::StringRef N) { return uint32_t(llvm::xxh3_64bits(N)); }

void NameIndex::reserve(size_t N) {
  size_t Want = 16;
  while (Want * 4 < N * 5)
    Want *= 2;
  if (Want <= Slots.size())
    return;
  std::vector<Slot> Old = std::move(Slots);
  Slots.assign(Want, Slot());
  for (const Slot &S : Old)
    if (S.Id != UINT32_MAX)
      place(S.Hash, S.Id);
}

void NameIndex::place(uint32_t Hash, uint32_t Id) {
  size_t Mask = Slots.size() - 1;
  size_t I = Hash & Mask;
  while (Slots[I].Id != UINT32_MAX)
    I = (I + 1) & Mask;
  Slots[I] = {Hash, Id};
}

void NameIndex::insert(const Value &V) { insert(V, hash(V.Name)); }

void NameIndex::insert(const Value &V, uint32_t Hash) {
  if ((Count + 1) * 5 > Slots.size() * 4)
    reserve(Count + 1);
  place(Hash, V.Id);
  ++Count;
}

std::optional<uint32_t> NameIndex::find(const NameKey &K, const ValueList &Values) const {
  if (Slots.empty())
    return std::nullopt;
  llvm::StringRef N = K.Name;
  uint32_t H = K.Hash;
  size_t Mask = Slots.size() - 1;
  for (size_t I = H & Mask;; I = (I + 1) & Mask) {
    const Slot &S = Slots[I];
    if (S.Id == UINT32_MAX)
      return std::nullopt;
    if (S.Hash == H && Values[S.Id]->Name == N)
      return S.Id;
  }
}

size_t Graph::numNodesRecursive() const {
  size_t N = 0;
  walk([&](const Node &) { ++N; });
  return N;
}

sym::ExprRef Model::leadingSymbol() const {
  if (!Main)
    return nullptr;
  for (const Value *V : Main->Inputs)
    if (V && V->Shp)
      for (const Dim &D : V->Shp->Dims)
        if (!D.isKnown() && D.isDetermined())
          for (const std::string &S : sym::symbols(D.expr()))
            return sym::symbol(S);
  return nullptr;
}

const Function *Model::findFunction(llvm::StringRef Domain,
                                    llvm::StringRef Name) const {
  for (const Function &F : Functions)
    if (F.Domain == Domain && F.Name == Name)
      return &F;
  return nullptr;
}
