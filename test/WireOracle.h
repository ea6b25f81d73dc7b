//===- WireOracle.h - The in-place decoder checked against protobuf -*- C++ -*-===//
//
// For tests and the binary fuzzer: every field analyzer/onnx/OnnxWire.h decoded
// from some bytes, compared with what protobuf's own accessors give for the
// same bytes. (Comparing imported IR alone would not do: ridge imports a
// protobuf model by serializing it for the same decoder.)
//
//===----------------------------------------------------------------------===//
#ifndef RIDGE_TEST_WIREORACLE_H
#define RIDGE_TEST_WIREORACLE_H

#include "analyzer/onnx/OnnxWire.h"
#include <onnx/onnx_pb.h>
#include <cstring>
#include <string>
#include <vector>

namespace ridge::wireoracle {

/// Collects the first difference, with where it is.
class Diff {
public:
  template <typename A, typename B>
  void same(const A &Mine, const B &Theirs, const std::string &Where, const char *What) {
    if (First.empty() && !(Mine == Theirs))
      First = Where + ": " + What + " differs";
  }
  bool found() const { return !First.empty(); }
  std::string First;
  /// The model's decode options: its nodes are decoded again with them.
  wire::DecodeOptions Opts;
};

template <typename T, typename R> std::vector<T> vec(const R &Range) {
  return std::vector<T>(Range.begin(), Range.end());
}
/// Floating-point values by their bits: a NaN read the same is the same.
template <typename R> std::vector<uint64_t> bits(const R &Range) {
  std::vector<uint64_t> Out;
  for (auto X : Range) {
    uint64_t B = 0;
    std::memcpy(&B, &X, sizeof(X));
    Out.push_back(B);
  }
  return Out;
}
template <typename F> uint64_t bitsOf(F X) { return bits(std::vector<F>{X})[0]; }

template <typename R> std::vector<std::string> strs(const R &Range) {
  std::vector<std::string> Out;
  for (const auto &S : Range)
    Out.push_back(std::string(S));
  return Out;
}

inline void match(Diff &D, const wire::Tensor &T, const onnx::TensorProto &P, const std::string &W) {
  D.same(T.Name.str(), P.name(), W, "name");
  D.same(T.DataType, P.data_type(), W, "data_type");
  D.same(vec<int64_t>(T.Dims), vec<int64_t>(P.dims()), W, "dims");
  D.same(T.DataLocation, int(P.data_location()), W, "data_location");
  std::string Loc;
  for (const auto &KV : P.external_data())
    if (KV.key() == "location")
      Loc = KV.value();
  D.same(T.Location.str(), Loc, W, "location");
  D.same(T.HasRaw, P.has_raw_data(), W, "has raw_data");
  D.same(T.Raw.str(), P.raw_data(), W, "raw_data");
  D.same(bits(T.lists().FloatData), bits(P.float_data()), W, "float_data");
  D.same(T.lists().Int32Data, vec<int32_t>(P.int32_data()), W, "int32_data");
  D.same(T.lists().Int64Data, vec<int64_t>(P.int64_data()), W, "int64_data");
  D.same(bits(T.lists().DoubleData), bits(P.double_data()), W, "double_data");
  D.same(T.lists().Uint64Data, vec<uint64_t>(P.uint64_data()), W, "uint64_data");
}

inline void match(Diff &D, const wire::Type &T, const onnx::TypeProto &P, const std::string &W) {
  using K = wire::Type::Kind;
  K Want = P.has_tensor_type()          ? K::Tensor
           : P.has_sequence_type()      ? K::Sequence
           : P.has_map_type()           ? K::Map
           : P.has_optional_type()      ? K::Optional
           : P.has_sparse_tensor_type() ? K::SparseTensor
           : P.has_opaque_type()        ? K::Opaque
                                        : K::None;
  D.same(int(T.K), int(Want), W, "type kind");
  if (Want != K::Tensor)
    return;
  const auto &TT = P.tensor_type();
  D.same(T.ElemType, TT.elem_type(), W, "elem_type");
  D.same(T.HasShape, TT.has_shape(), W, "has shape");
  D.same(T.Dims.size(), size_t(TT.shape().dim_size()), W, "rank");
  for (size_t I = 0; I < T.Dims.size() && I < size_t(TT.shape().dim_size()); ++I) {
    const auto &Dm = TT.shape().dim(int(I));
    using DK = wire::Dimension::Kind;
    DK Kind = Dm.has_dim_value() ? DK::Value : Dm.has_dim_param() ? DK::Param : DK::None;
    D.same(int(T.Dims[I].K), int(Kind), W, "dim kind");
    D.same(T.Dims[I].Value, Dm.dim_value(), W, "dim_value");
    D.same(T.Dims[I].Param.str(), Dm.dim_param(), W, "dim_param");
  }
}

inline void match(Diff &D, const wire::Graph &G, const onnx::GraphProto &P, const std::string &W);

inline void match(Diff &D, const wire::Attribute &A, const onnx::AttributeProto &P,
                  const std::string &W) {
  D.same(A.Name.str(), P.name(), W, "name");
  D.same(A.Type, int(P.type()), W, "type");
  D.same(A.HasF, P.has_f(), W, "has f");
  D.same(A.HasI, P.has_i(), W, "has i");
  D.same(A.HasS, P.has_s(), W, "has s");
  D.same(A.HasT, P.has_t(), W, "has t");
  D.same(A.HasG, P.has_g(), W, "has g");
  D.same(bitsOf(A.F), bitsOf(P.f()), W, "f");
  D.same(A.I, P.i(), W, "i");
  D.same(A.S.str(), P.s(), W, "s");
  D.same(bits(A.Floats), bits(P.floats()), W, "floats");
  D.same(A.Ints, vec<int64_t>(P.ints()), W, "ints");
  D.same(strs(A.Strings), strs(P.strings()), W, "strings");
  if (P.has_t())
    match(D, A.T, P.t(), W + "/t");
  D.same(bool(A.G), P.has_g(), W, "g present");
  if (P.has_g() && A.G)
    match(D, *A.G, P.g(), W + "/g");
  D.same(A.Tensors.size(), size_t(P.tensors_size()), W, "tensors");
  for (int I = 0; I < P.tensors_size() && size_t(I) < A.Tensors.size(); ++I)
    match(D, A.Tensors[I], P.tensors(I), W + "/tensors");
  D.same(A.Graphs.size(), size_t(P.graphs_size()), W, "graphs");
  for (int I = 0; I < P.graphs_size() && size_t(I) < A.Graphs.size(); ++I)
    match(D, A.Graphs[I], P.graphs(I), W + "/graphs");
}

template <typename Infos>
void matchInfos(Diff &D, const std::vector<wire::ValueInfo> &Mine, const Infos &Theirs,
                const std::string &W) {
  D.same(Mine.size(), size_t(Theirs.size()), W, "count");
  for (int I = 0; I < Theirs.size() && size_t(I) < Mine.size(); ++I) {
    D.same(Mine[I].Name.str(), Theirs.Get(I).name(), W, "name");
    match(D, Mine[I].Ty, Theirs.Get(I).type(), W + " " + Theirs.Get(I).name());
  }
}

inline void match(Diff &D, const wire::Graph &G, const onnx::GraphProto &P, const std::string &W) {
  D.same(G.Name.str(), P.name(), W, "graph name");
  D.same(G.Nodes.size(), size_t(P.node_size()), W, "nodes");
  for (int I = 0; I < P.node_size() && size_t(I) < G.Nodes.size(); ++I) {
    wire::Node N;
    const onnx::NodeProto &NP = P.node(I);
    std::string At = W + "/node " + std::to_string(I);
    D.same(wire::decodeNode(G.Nodes[I], N, D.Opts), true, At, "decoded again");
    D.same(N.Name.str(), NP.name(), At, "name");
    D.same(N.OpType.str(), NP.op_type(), At, "op_type");
    D.same(N.Domain.str(), NP.domain(), At, "domain");
    D.same(strs(N.Inputs), strs(NP.input()), At, "inputs");
    D.same(strs(N.Outputs), strs(NP.output()), At, "outputs");
    D.same(N.Attrs.size(), size_t(NP.attribute_size()), At, "attributes");
    for (int J = 0; J < NP.attribute_size() && size_t(J) < N.Attrs.size(); ++J)
      match(D, N.Attrs[J], NP.attribute(J), At + "/" + NP.attribute(J).name());
  }
  size_t Outputs = 0;
  for (const onnx::NodeProto &NP : P.node())
    Outputs += size_t(NP.output_size());
  D.same(G.NumNodeOutputs, Outputs, W, "node outputs");
  D.same(G.Initializers.size(), size_t(P.initializer_size()), W, "initializers");
  for (int I = 0; I < P.initializer_size() && size_t(I) < G.Initializers.size(); ++I) {
    wire::Tensor T;
    D.same(wire::decodeInitializer(G.Initializers[I], T, D.Opts), true,
           W + "/initializer " + std::to_string(I), "decoded again");
    match(D, T, P.initializer(I), W + "/initializer");
  }
  D.same(G.SparseInitializers.size(), size_t(P.sparse_initializer_size()), W,
         "sparse initializers");
  matchInfos(D, G.Inputs, P.input(), W + "/input");
  matchInfos(D, G.Outputs, P.output(), W + "/output");
  matchInfos(D, G.ValueInfos, P.value_info(), W + "/value_info");
}

/// "" when every field the decoder read from some bytes is what protobuf
/// parsed from them, else where the first difference is.
inline std::string firstDifference(const wire::Model &M, const onnx::ModelProto &P) {
  Diff D;
  D.Opts = M.Opts;
  D.same(M.IrVersion, P.ir_version(), "model", "ir_version");
  D.same(M.ProducerName.str(), P.producer_name(), "model", "producer_name");
  D.same(M.ProducerVersion.str(), P.producer_version(), "model", "producer_version");
  D.same(M.HasGraph, P.has_graph(), "model", "graph present");
  D.same(M.Opsets.size(), size_t(P.opset_import_size()), "model", "opsets");
  for (int I = 0; I < P.opset_import_size() && size_t(I) < M.Opsets.size(); ++I) {
    D.same(M.Opsets[I].Domain.str(), P.opset_import(I).domain(), "model", "opset domain");
    D.same(M.Opsets[I].Version, P.opset_import(I).version(), "model", "opset version");
  }
  match(D, M.G, P.graph(), "graph");
  return D.First;
}

} // namespace ridge::wireoracle

#endif
