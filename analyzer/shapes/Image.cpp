//===- Image.cpp - Shape rules: Resize, GridSample, AffineGrid ------------===//
#include "analyzer/shapes/Rules.h"
#include <algorithm>
#include <cmath>

namespace ridge::shapes {

/// floor(D * Scale) for a symbolic D where it has an exact form: an integer
/// scale multiplies, a scale of 1/2^k is floor(D / 2^k) (exact in float for
/// the dims a float holds exactly, as ONNX's reference computes it).
static Dim scaleSymbolic(const Dim &D, double Scale) {
  if (Scale >= 1 && Scale <= 1024 && Scale == std::floor(Scale))
    return mulDim(D, int64_t(Scale));
  for (int64_t K = 2; K <= 1024; K *= 2)
    if (Scale * double(K) == 1.0)
      return D.isDetermined() ? Dim::of(sym::floorDiv(D.expr(), sym::constant(K))) : Dim{};
  return Dim{};
}

/// Resize and Upsample: output dims from sizes, else floor(dim * scale).
void ruleResize(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0);
  if (!X)
    return C.setType(0, T);
  size_t R = X->rank();
  bool Upsample = C.N.OpType == "Upsample";
  unsigned ScalesIn = Upsample || C.Opset < 11 ? 1 : 2;
  unsigned SizesIn = Upsample || C.Opset < 11 ? ~0u : 3;
  SmallVector<int64_t, 4> Axes;
  if (auto A = C.N.attrInts("axes"))
    Axes.assign(A->begin(), A->end());
  else
    for (size_t I = 0; I < R; ++I)
      Axes.push_back(I);
  for (int64_t &A : Axes)
    if (!normAxis(A, R))
      return C.setType(0, T);
  Shape Out = *X;
  IVec Sizes;
  FVec Scales;
  bool HaveScales = false;
  if (SizesIn != ~0u && C.has(SizesIn) && C.vals(SizesIn, Sizes)) {
    if (Sizes.size() != Axes.size())
      return C.setType(0, T);
    std::string Policy = C.N.attrString("keep_aspect_ratio_policy", "stretch");
    if (Policy != "stretch") {
      // not_larger/not_smaller: one scale for all axes, from the sizes.
      double Scale = Policy == "not_larger" ? 1e300 : 0;
      for (size_t I = 0; I < Axes.size(); ++I) {
        const Dim &D = X->Dims[Axes[I]];
        if (!Sizes[I].Known || !D.isKnown() || D.extent() == 0)
          return C.setRank(0, T, R);
        double S = double(Sizes[I].V) / double(D.extent());
        Scale = Policy == "not_larger" ? std::min(Scale, S) : std::max(Scale, S);
      }
      for (int64_t A : Axes)
        Out.Dims[A] = Dim::known(int64_t(std::round(Scale * X->Dims[A].extent())));
      return C.set(0, T, Out);
    }
    for (size_t I = 0; I < Axes.size(); ++I) {
      Dim D;
      if (!Sizes[I].Known && !Sizes[I].E) // this size only the run decides
        D = runtimeExtent(C, 0, Axes[I], SizesIn, I, C.N.OpType, nullptr);
      else if (!Sizes[I].toDim(D))
        return C.setType(0, T);
      Out.Dims[Axes[I]] = D;
    }
    return C.set(0, T, Out);
  }
  if (Upsample && C.Opset < 9) {
    if (const Attribute *A = C.N.attr("scales"); A && A->K == Attribute::Kind::Floats) {
      Scales.assign(A->floats().begin(), A->floats().end());
      HaveScales = true;
    }
  } else if (C.has(ScalesIn)) {
    HaveScales = C.floats(ScalesIn, Scales) && !Scales.empty();
  }
  // Sizes or scales that only the run decides (a box's size in a detector's
  // post-processing): each resized extent is a data symbol.
  bool RuntimeSizes = SizesIn != ~0u && C.has(SizesIn) && !C.vals(SizesIn, Sizes);
  bool RuntimeScales = !RuntimeSizes && !HaveScales && C.has(ScalesIn) &&
                       !(Upsample && C.Opset < 9);
  if (RuntimeSizes || RuntimeScales) {
    for (size_t I = 0; I < Axes.size(); ++I)
      if (RuntimeSizes || X->Dims[Axes[I]].isDetermined())
        Out.Dims[Axes[I]] =
            runtimeExtent(C, 0, Axes[I], RuntimeSizes ? SizesIn : ScalesIn, I, C.N.OpType,
                          nullptr);
      else
        Out.Dims[Axes[I]] = Dim{};
    return C.set(0, T, Out);
  }
  if (!HaveScales || Scales.size() != Axes.size())
    return C.setRank(0, T, R);
  for (size_t I = 0; I < Axes.size(); ++I) {
    const Dim &D = X->Dims[Axes[I]];
    if (D.isKnown())
    {
      float F = std::floor(float(D.extent()) * float(Scales[I]));
      Out.Dims[Axes[I]] = std::isfinite(F) && F >= 0 && F < 4.0e18f
                              ? Dim::known(int64_t(F)) : Dim{};
    }
    else
      Out.Dims[Axes[I]] = scaleSymbolic(D, Scales[I]);
  }
  C.set(0, T, Out);
}

void ruleGridSample(Ctx &C) {
  DType T = C.elem(0);
  const Shape *X = C.shape(0), *G = C.shape(1);
  if (!X || !G || X->rank() < 3 || G->rank() != X->rank())
    return C.setType(0, T);
  Shape Out;
  Out.Dims.push_back(mergeDim(X->Dims[0], G->Dims[0]));
  Out.Dims.push_back(X->Dims[1]);
  Out.Dims.append(G->Dims.begin() + 1, G->Dims.end() - 1);
  C.set(0, T, Out);
}

/// AffineGrid (20): theta [N, 2, 3] and size (N, C, H, W) -> [N, H, W, 2];
/// theta [N, 3, 4] and size (N, C, D, H, W) -> [N, D, H, W, 3].
void ruleAffineGrid(Ctx &C) {
  DType T = C.elem(0);
  IVec Size;
  if (!C.vals(1, Size) || (Size.size() != 4 && Size.size() != 5))
    return C.setType(0, T);
  Shape Out;
  Size.erase(Size.begin() + 1); // C
  if (!valsToShape(Size, Out))
    return C.setType(0, T);
  Out.Dims.push_back(Dim::known(Size.size() - 1));
  C.set(0, T, std::move(Out));
}

} // namespace ridge::shapes
