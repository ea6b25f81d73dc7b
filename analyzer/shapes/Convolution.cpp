//===- Convolution.cpp - Shape rules: convolution, pooling, Col2Im --------===//
#include "analyzer/shapes/Rules.h"

namespace ridge::shapes {

/// Spatial output dims of Conv and the pools. Kernel: -1 where unknown.
/// One spatial output dim of a symbolic input In, by the same formulas as
/// the known case: ceil(In / S) with SAME padding, else
/// floor((In + PB + PE - ((K - 1) D + 1)) / S) + 1. Ceil mode with a
/// symbolic input stays unknown (its correction for a window starting in
/// the right padding is a comparison the expression cannot settle).
static Dim symbolicConvDim(const Dim &In, int64_t K, int64_t S, int64_t D, size_t I, size_t NS,
                           const std::optional<llvm::ArrayRef<int64_t>> &Pads, bool Same,
                           bool UsePads, bool CeilMode) {
  if (Same)
    return Dim::of(sym::ceilDiv(In.expr(), sym::constant(S)));
  if (CeilMode)
    return Dim{};
  int64_t PB = 0, PE = 0;
  if (UsePads && Pads && Pads->size() == 2 * NS) {
    PB = (*Pads)[I];
    PE = (*Pads)[I + NS];
  }
  i128 EffK = i128(K - 1) * D + 1, Off = i128(PB) + PE - EffK;
  if (!extentOk(EffK) || Off < -MaxExtent || Off > MaxExtent)
    return Dim{};
  sym::ExprRef Span = sym::add(In.expr(), sym::constant(int64_t(Off)));
  return Dim::of(sym::add(sym::floorDiv(Span, sym::constant(S)), sym::constant(1)));
}

/// What in N's kernel_shape, strides, dilations and pads breaks the
/// operator's rules for NS spatial axes (ONNX Runtime refuses such a node),
/// or "". Kernel: the kernel's extents, -1 where a weight leaves one
/// unknown; KernelAttr: whether they are the node's kernel_shape.
static std::string badWindow(const Node &N, size_t NS, ArrayRef<int64_t> Kernel,
                             bool KernelAttr) {
  auto List = [](ArrayRef<int64_t> V) {
    std::string S = "[";
    for (size_t I = 0; I < V.size(); ++I)
      S += (I ? "," : "") + std::to_string(V[I]);
    return S + "]";
  };
  if (Kernel.size() != NS)
    return llvm::formatv("kernel_shape {0}: {1} value(s) for the input's {2} spatial axes",
                         List(Kernel), Kernel.size(), NS);
  if (KernelAttr && llvm::any_of(Kernel, [](int64_t K) { return K <= 0; }))
    return "kernel_shape " + List(Kernel) + " has an extent below 1";
  if (llvm::is_contained(Kernel, 0))
    return "the weight's kernel " + List(Kernel) + " has an empty axis";
  for (const char *Attr : {"strides", "dilations"})
    if (auto V = N.attrInts(Attr)) {
      if (V->size() != NS)
        return llvm::formatv("{0} {1}: {2} value(s) for the input's {3} spatial axes", Attr,
                             List(*V), V->size(), NS);
      if (llvm::any_of(*V, [](int64_t X) { return X <= 0; }))
        return std::string(Attr) + " " + List(*V) + " has a value below 1";
    }
  if (auto P = N.attrInts("pads")) {
    if (P->size() != 2 * NS)
      return llvm::formatv("pads {0}: {1} value(s), not 2 for each of {2} spatial axes",
                           List(*P), P->size(), NS);
    if (llvm::any_of(*P, [](int64_t X) { return X < 0; }))
      return "pads " + List(*P) + " has a negative value";
  }
  return "";
}

static bool convPoolDims(Ctx &C, const Shape &X, ArrayRef<int64_t> Kernel, bool KernelAttr,
                         bool CeilMode, Shape &Out) {
  const Node &N = C.N;
  size_t NS = X.rank() - 2;
  if (std::string Why = badWindow(N, NS, Kernel, KernelAttr); !Why.empty()) {
    C.invalid(Why);
    return false;
  }
  auto Strides = N.attrInts("strides"), Dil = N.attrInts("dilations"),
       Pads = N.attrInts("pads");
  std::string AutoPad = N.attrString("auto_pad", "NOTSET");
  bool Same = AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER";
  bool UsePads = AutoPad == "NOTSET" || AutoPad.empty();
  for (size_t I = 0; I < NS; ++I) {
    int64_t S = Strides ? (*Strides)[I] : 1;
    int64_t D = Dil ? (*Dil)[I] : 1;
    const Dim &In = X.Dims[2 + I];
    if (In.isSymbolic() && Kernel[I] >= 0) {
      Out.Dims.push_back(symbolicConvDim(In, Kernel[I], S, D, I, NS, Pads, Same, UsePads,
                                         CeilMode));
      continue;
    }
    if (!In.isKnown() || Kernel[I] < 0) {
      Out.Dims.push_back(Dim{});
      continue;
    }
    i128 Len;
    if (Same) {
      Len = ceilDiv(In.extent(), S);
    } else {
      i128 PB = 0, PE = 0;
      if (UsePads && Pads && Pads->size() == 2 * NS) {
        PB = (*Pads)[I];
        PE = (*Pads)[I + NS];
      }
      i128 EffK = i128(Kernel[I] - 1) * D + 1;
      i128 Span = In.extent() + PB + PE - EffK;
      if (Span < 0 && extentOk(EffK)) {
        C.invalid(llvm::formatv("spatial axis {0}: the window ({1} with dilation {2}) is "
                                "wider than the padded input ({3} + {4} + {5})",
                                I, Kernel[I], D, In.extent(), int64_t(PB), int64_t(PE)));
        return false;
      }
      if (Span < 0 || !extentOk(Span))
        return false;
      if (CeilMode) {
        Len = (Span + S - 1) / S + 1;
        // A window may not start in the right padding (the spec since ONNX
        // 1.16; PyTorch and ONNX Runtime).
        if ((Len - 1) * S >= In.extent() + PB)
          --Len;
      } else {
        Len = Span / S + 1;
      }
    }
    if (!extentOk(Len))
      return false;
    Out.Dims.push_back(Dim::known(int64_t(Len)));
  }
  return true;
}

/// Conv, ConvInteger, QLinearConv: X at input IX, W at IW.
static void convRule(Ctx &C, unsigned IX, unsigned IW, DType T) {
  const Shape *X = C.shape(IX), *W = C.shape(IW);
  if (!X || X->rank() < 2) {
    C.setType(0, T);
    return;
  }
  size_t NS = X->rank() - 2;
  SmallVector<int64_t, 4> Kernel;
  auto KAttr = C.N.attrInts("kernel_shape");
  if (KAttr) {
    Kernel.assign(KAttr->begin(), KAttr->end());
  } else if (W && W->rank() == NS + 2) {
    for (size_t I = 0; I < NS; ++I)
      Kernel.push_back(W->Dims[2 + I].isKnown() ? W->Dims[2 + I].extent() : -1);
  } else {
    Kernel.assign(NS, -1);
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(W && W->rank() >= 1 ? W->Dims[0] : Dim{});
  if (!convPoolDims(C, *X, Kernel, KAttr.has_value(), false, Out)) {
    C.setType(0, T);
    return;
  }
  C.set(0, T, std::move(Out));
}

void ruleConv(Ctx &C) { convRule(C, 0, 1, C.elem(0)); }
void ruleConvInteger(Ctx &C) { convRule(C, 0, 1, DType::Int32); }
void ruleQLinearConv(Ctx &C) {
  convRule(C, 0, 3, C.has(7) ? C.elem(7) : C.elem(0));
}

void ruleConvTranspose(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *W = C.shape(1);
  if (!X || X->rank() < 2) {
    C.setType(0, T);
    return;
  }
  size_t NS = X->rank() - 2;
  const Node &N = C.N;
  int64_t Group = N.attrInt("group", 1);
  SmallVector<int64_t, 4> Kernel;
  if (auto K = N.attrInts("kernel_shape"))
    Kernel.assign(K->begin(), K->end());
  else if (W && W->rank() == NS + 2)
    for (size_t I = 0; I < NS; ++I)
      Kernel.push_back(W->Dims[2 + I].isKnown() ? W->Dims[2 + I].extent() : -1);
  else
    Kernel.assign(NS, -1);
  if (std::string Why = badWindow(N, NS, Kernel, N.attrInts("kernel_shape").has_value());
      !Why.empty()) {
    C.invalid(Why);
    C.setType(0, T);
    return;
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Dim M;
  if (W && W->rank() >= 2 && W->Dims[1].isKnown())
    M = extentOk(i128(W->Dims[1].extent()) * Group)
            ? Dim::known(W->Dims[1].extent() * Group) : Dim{};
  Out.Dims.push_back(M);
  auto Strides = N.attrInts("strides"), Dil = N.attrInts("dilations"),
       Pads = N.attrInts("pads"), OutPad = N.attrInts("output_padding"),
       OutShape = N.attrInts("output_shape");
  std::string AutoPad = N.attrString("auto_pad", "NOTSET");
  bool Same = AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER";
  if (OutShape && (OutShape->size() == NS || OutShape->size() == NS + 2)) {
    for (size_t I = OutShape->size() - NS; I < OutShape->size(); ++I)
      Out.Dims.push_back((*OutShape)[I] >= 0 ? Dim::known((*OutShape)[I]) : Dim{});
    C.set(0, T, Out);
    return;
  }
  for (size_t I = 0; I < NS; ++I) {
    int64_t S = Strides && I < Strides->size() ? (*Strides)[I] : 1;
    int64_t D = Dil && I < Dil->size() ? (*Dil)[I] : 1;
    int64_t OP = OutPad && I < OutPad->size() ? (*OutPad)[I] : 0;
    const Dim &In = X->Dims[2 + I];
    if (!In.isKnown() || Kernel[I] < 0) {
      Out.Dims.push_back(Dim{});
      continue;
    }
    i128 Len;
    if (Same) {
      Len = i128(In.extent()) * S;
    } else {
      i128 PB = 0, PE = 0;
      if (AutoPad != "VALID" && Pads && Pads->size() == 2 * NS) {
        PB = (*Pads)[I];
        PE = (*Pads)[I + NS];
      }
      Len = i128(S) * (In.extent() - 1) + OP + i128(Kernel[I] - 1) * D + 1 - PB - PE;
    }
    if (!extentOk(Len)) {
      C.setType(0, T);
      return;
    }
    Out.Dims.push_back(Dim::known(int64_t(Len)));
  }
  C.set(0, T, Out);
}

void rulePool(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  auto K = C.N.attrInts("kernel_shape");
  if (C.numOuts() > 1)
    C.setType(1, DType::Int64);
  if (!X || X->rank() < 2 || !K) {
    C.setType(0, T);
    return;
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(X->Dims[1]);
  if (!convPoolDims(C, *X, *K, true, C.N.attrInt("ceil_mode", 0) != 0, Out)) {
    C.setType(0, T);
    return;
  }
  C.set(0, T, Out);
  if (C.numOuts() > 1)
    C.set(1, DType::Int64, Out);
}

void ruleGlobalPool(Ctx &C) {
  const Shape *X = C.shape(0);
  if (!X || X->rank() < 2) {
    C.setType(0, C.elem(0));
    return;
  }
  Shape Out = *X;
  for (size_t I = 2; I < Out.rank(); ++I)
    Out.Dims[I] = Dim::known(1);
  C.set(0, C.elem(0), Out);
}

void ruleMaxUnpool(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  IVec OS;
  if (C.has(2)) {
    if (C.vals(2, OS)) {
      Shape Out;
      for (const IV &V : OS) {
        Dim D;
        if (!V.toDim(D))
          return C.setType(0, T);
        Out.Dims.push_back(D);
      }
      C.set(0, T, Out);
    } else if (const Shape *S = C.shape(2); S && S->rank() == 1 && S->Dims[0].isKnown()) {
      C.setRank(0, T, S->Dims[0].extent());
    } else {
      C.setType(0, T);
    }
    return;
  }
  auto K = C.N.attrInts("kernel_shape");
  if (!X || X->rank() < 2 || !K || K->size() != X->rank() - 2)
    return C.setType(0, T);
  size_t NS = X->rank() - 2;
  auto Strides = C.N.attrInts("strides"), Pads = C.N.attrInts("pads");
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(X->Dims[1]);
  for (size_t I = 0; I < NS; ++I) {
    int64_t S = Strides && I < Strides->size() ? (*Strides)[I] : 1;
    int64_t PB = 0, PE = 0;
    if (Pads && Pads->size() == 2 * NS) {
      PB = (*Pads)[I];
      PE = (*Pads)[I + NS];
    }
    const Dim &In = X->Dims[2 + I];
    i128 Len = i128(In.extent() - 1) * S + (*K)[I] - PB - PE;
    Out.Dims.push_back(In.isKnown() && extentOk(Len) ? Dim::known(int64_t(Len)) : Dim{});
  }
  C.set(0, T, Out);
}

/// RoiAlign, MaxRoiPool: [num_rois, C, h, w].
void ruleRoiPool(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *R = C.shape(1);
  if (!X || X->rank() != 4 || !R || R->rank() != 2)
    return C.setType(0, T);
  Dim H, W;
  if (C.N.OpType == "MaxRoiPool") {
    auto P = C.N.attrInts("pooled_shape");
    if (!P || P->size() != 2)
      return C.setType(0, T);
    H = Dim::known((*P)[0]);
    W = Dim::known((*P)[1]);
  } else {
    H = Dim::known(C.N.attrInt("output_height", 1));
    W = Dim::known(C.N.attrInt("output_width", 1));
  }
  C.setDims(0, T, {R->Dims[0], X->Dims[1], H, W});
}

/// Col2Im (18): [N, C * prod(block), L] -> [N, C, *image_shape].
void ruleCol2Im(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  IVec Image, Block;
  if (!X || X->rank() != 3 || !C.vals(1, Image) || !C.vals(2, Block))
    return C.setType(0, T);
  int64_t BlockElems = 1;
  for (const IV &B : Block) {
    if (!B.Known || B.V <= 0 || !mulOk(BlockElems, B.V, BlockElems))
      return C.setType(0, T);
  }
  Shape Out;
  Out.Dims.push_back(X->Dims[0]);
  Out.Dims.push_back(divDim(X->Dims[1], BlockElems));
  Shape Img;
  if (!valsToShape(Image, Img))
    return C.setType(0, T);
  Out.Dims.append(Img.Dims.begin(), Img.Dims.end());
  C.set(0, T, std::move(Out));
}

} // namespace ridge::shapes
