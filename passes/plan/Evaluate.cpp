//===- Evaluate.cpp - The planner: one configuration's time and memory ----===//
#include "passes/plan/PlannerImpl.h"
#include <cstring>

using namespace ridge;

namespace ridge::plan {

void Planner::sizeWorkspace(Workspace &W) {
  size_t NSlots = 4 * ClassRep.size();
  Group &G = W.G;
  for (auto *V : {&G.SlotTF, &G.SlotTB, &G.SlotLF, &G.SlotLB, &G.SlotMF, &G.SlotMM0, &G.SlotMM1})
    V->resize(NSlots);
  G.PreCk.resize(CutPos.size() + 1);
  G.SegSum.resize(CutPos.empty() ? 0 : CutPos.size() - 1);
  G.CollSeconds.resize(CollCosts.size());
}

Group &Planner::group(Workspace &W, int64_t B, unsigned T, bool SP) {
  Group &G = W.G;
  if (G.Valid && G.B == B && G.T == T && G.SP == SP)
    return G;
  const TPPlan &TP = tpPlan(T, SP);
  G.Valid = true;
  G.B = B;
  G.T = T;
  G.SP = SP;
  G.TP = &TP;
  for (auto &E : G.Ends)
    E.clear();
  for (SegSums &S : G.Seg) {
    S.Made = false;
    for (double &M : S.MaxSeg)
      M = -1;
  }
  G.Aggs.clear();
  sizeWorkspace(W);
  sumCollectives(G);
  placeSlots(W);
  // Every cost finite and non-negative: so are the slots' times and the
  // collectives (a position's cost adds a few of them), and the sums are
  // finite unless they overflow (SegSums::Bounded checks the totals).
  bool Finite = true;
  auto Ok = [](double X) { return X >= 0 && X <= std::numeric_limits<double>::max(); };
  for (uint32_t I : TP.UsedSlots)
    Finite &= Ok(G.SlotTF[I]) && Ok(G.SlotTB[I]);
  for (uint32_t I : TP.UsedCosts)
    Finite &= Ok(G.CollSeconds[I]);
  G.TermsFinite = Finite;
  segSums(G, 0);
  checkExactSums(G);
  return G;
}

void Planner::sumCollectives(Group &G) {
  // Tensor-parallel collectives: each distinct one's seconds (the segment
  // classes add them per position, in the plan's order).
  const TPPlan &TP = *G.TP;
  bool TPInter = crossesNodes(1, G.T);
  double TPBw = groupBandwidth(1, G.T), TPLat = linkLatency(TPInter);
  for (uint32_t I : TP.UsedCosts) {
    double Bytes = CollCosts[I].Bytes.at(double(G.B));
    G.CollSeconds[I] = collectiveSeconds(CollCosts[I].Kind, Bytes, G.T, TPBw, TPLat);
  }
  G.TPCount = TP.CollPos.size();
}

void Planner::placeSlots(Workspace &W) {
  // Each slot's forward and backward time on the device and its FLOP terms.
  Group &G = W.G;
  const TPPlan &TP = *G.TP;
  double Mb = double(G.B);
  unsigned T = G.T;
  G.SlotOf = TP.SlotOf.data();
  bool Kernels = hasKernelModel(Dev, Cfg);
  for (uint32_t Slot : TP.UsedSlots) {
    unsigned Kind = Slot & 3, Sp = Kind != 0;
    const Position &X = *ClassRep[Slot >> 2];
    double Scale = Sp ? 1.0 / T : 1.0;
    const PolyPhase &XF = fwd(X), &XB = bwd(X);
    PhaseCost F = XF.at(Mb, Scale), Bc = XB.at(Mb, Scale);
    if (Kernels && X.Product) {
      productTimes(W, X, Mb, Kind, T, G.SlotTF[Slot], G.SlotTB[Slot], G.SlotLF[Slot],
                   G.SlotLB[Slot]);
    } else if (Kernels && X.Conv) {
      convTimes(W, X, Mb, Kind, T, F, Bc, G.SlotTF[Slot], G.SlotTB[Slot], G.SlotLF[Slot],
                G.SlotLB[Slot]);
    } else if (Kernels && X.Recurrent) {
      recurrentTimes(W, X, Mb, Kind, T, G.SlotTF[Slot], G.SlotTB[Slot], G.SlotLF[Slot],
                     G.SlotLB[Slot]);
    } else {
      PhaseTime PF = placeOnDevice(F, Dev, X.Type, Cfg);
      PhaseTime PB = X.NeedsBackward ? placeOnDevice(Bc, Dev, X.Type, Cfg) : PhaseTime();
      // With the kernel model, a streaming kernel as analyze times it
      // (its DRAM latency before the first bytes).
      G.SlotTF[Slot] =
          Kernels ? kernels::streaming("forward", F, Dev, X.Type, Cfg, &PF).Seconds : PF.Seconds;
      G.SlotTB[Slot] =
          Kernels ? kernels::streaming("backward", Bc, Dev, X.Type, Cfg, &PB).Seconds : PB.Seconds;
      G.SlotLF[Slot] = PF.Launches;
      G.SlotLB[Slot] = PB.Launches;
      uint32_t P = uint32_t(&X - Pos.data());
      if (auto NP = NestedProducts.find(P); Kernels && NP != NestedProducts.end())
        nestedSlot(W, X, NP->second, Mb, Scale, T, G.SlotTF[Slot], G.SlotTB[Slot],
                   G.SlotLF[Slot], G.SlotLB[Slot]);
      else if (auto It = NestedKernels.find(P); It != NestedKernels.end())
        nestedKernels(It->second, Kernels, G.SlotTF[Slot], G.SlotTB[Slot], G.SlotLF[Slot],
                      G.SlotLB[Slot]);
    }
    G.SlotMF[Slot] = (XF.Flops.at(Mb) + XB.Flops.at(Mb)) * T * Scale;
    G.SlotMM0[Slot] = 2 * (XF.Macs.at(Mb) * 1 + XB.Macs.at(Mb)) * T * Scale;
    G.SlotMM1[Slot] = 2 * (XF.Macs.at(Mb) * 2 + XB.Macs.at(Mb)) * T * Scale;
  }
}

void Planner::nestedKernels(const std::array<double, 2> &K, bool Kernels, double &Fwd,
                            double &Bwd, double &FwdLaunches, double &BwdLaunches) const {
  // A control-flow node's bodies, costed as one summed phase (one kernel):
  // each further kernel costs the device its per-kernel overhead (and with
  // the kernel model its DRAM latency), as analyze times each body node.
  double Extra = Dev.perKernelOverhead() + (Kernels ? kernels::constants().DramLatency : 0);
  auto Add = [&](double &Time, double &Launches, double N) {
    if (Launches > 0 && N > 1) {
      Time += (N - 1) * Extra;
      Launches = N;
    }
  };
  Add(Fwd, FwdLaunches, K[0]);
  Add(Bwd, BwdLaunches, K[1]);
}

void Planner::nestedSlot(Workspace &W, const Position &X,
                         const std::vector<NestedProduct> &Prods, double Mb, double Scale,
                         unsigned T, double &Fwd, double &Bwd, double &FwdLaunches,
                         double &BwdLaunches) {
  // The bodies' other nodes stream, as one summed kernel and the rest of
  // their count (nestedKernels); each product runs its own kernels by the
  // kernel model, its trips times (a split position divides its batch, or
  // M, by t, as attention's products are split).
  PhaseCost F = fwd(X).at(Mb, Scale), B = bwd(X).at(Mb, Scale);
  std::array<double, 2> K = NestedKernels.lookup(uint32_t(&X - Pos.data()));
  auto TakeOut = [](PhaseCost &From, const PhaseCost &P) {
    From.Flops = std::max(0.0, From.Flops - P.Flops);
    From.Macs = std::max(0.0, From.Macs - P.Macs);
    From.Transcendentals = std::max(0.0, From.Transcendentals - P.Transcendentals);
    From.Bytes = std::max(0.0, From.Bytes - P.Bytes);
  };
  for (const NestedProduct &NP : Prods) {
    TakeOut(F, NP.Fwd.at(Mb, Scale));
    TakeOut(B, NP.Bwd.at(Mb, Scale));
    for (int Ph = 0; Ph < 2; ++Ph)
      K[Ph] -= NP.Counted[Ph] ? NP.Mult : 0;
  }
  Fwd = Bwd = FwdLaunches = BwdLaunches = 0;
  auto Stream = [&](const char *Name, const PhaseCost &P, double N, double &Time,
                    double &Launches) {
    if (N <= 0)
      return;
    PhaseTime PT = placeOnDevice(P, Dev, X.Type, Cfg);
    Time = kernels::streaming(Name, P, Dev, X.Type, Cfg, &PT).Seconds;
    Launches = std::max(1.0, PT.Launches);
  };
  Stream("forward", F, K[0], Fwd, FwdLaunches);
  if (X.NeedsBackward)
    Stream("backward", B, K[1], Bwd, BwdLaunches);
  nestedKernels(K, true, Fwd, Bwd, FwdLaunches, BwdLaunches);
  MathUnit U = mathUnit(Dev, X.Type, Cfg);
  double Elem = dtypeBytes(X.Type);
  for (const NestedProduct &NP : Prods) {
    GemmShape S{NP.Dims[0].at(Mb), NP.Dims[1].at(Mb), NP.Dims[2].at(Mb), NP.Dims[3].at(Mb)};
    if (Scale != 1)
      (S.Batch >= T ? S.Batch : S.M) /= T;
    PhaseKernels PF = productPhase(S, false, false, false, U, Dev, Elem, &W.Memo);
    Fwd += PF.seconds() * NP.Mult;
    FwdLaunches += PF.launches() * NP.Mult;
    if (NP.NeedsBackward && X.NeedsBackward) {
      PhaseKernels PB = productPhase(S, true, NP.GradA, NP.GradB, U, Dev, Elem, &W.Memo);
      Bwd += PB.seconds() * NP.Mult;
      BwdLaunches += PB.launches() * NP.Mult;
    }
  }
}

namespace {
/// A slot's forward and backward seconds and launches from its kernels.
void takeTimes(const PhaseKernels &F, const PhaseKernels &B, double &Fwd, double &Bwd,
               double &FwdLaunches, double &BwdLaunches) {
  Fwd = F.seconds();
  Bwd = B.seconds();
  FwdLaunches = F.launches();
  BwdLaunches = B.launches();
}
} // namespace

void Planner::convTimes(Workspace &W, const Position &X, double Mb, unsigned Kind,
                        unsigned T, const PhaseCost &F, const PhaseCost &B, double &Fwd,
                        double &Bwd, double &FwdLaunches, double &BwdLaunches) {
  // The convolution at micro-batch Mb, split by tensor parallelism as its
  // sharding says (Kind: a TPSplit).
  ConvGeometry Geo = Convs[X.ShapeIdx].Geo;
  Geo.Batch = Convs[X.ShapeIdx].Batch.at(Mb);
  Geo = splitShape(Geo, TPSplit(Kind), T);
  MathUnit U = mathUnit(Dev, X.Type, Cfg);
  double Elem = dtypeBytes(X.Type);
  ConvGrads Grads{X.GradA, X.GradB, X.GradC};
  PhaseKernels PF = convPhase(Geo, false, Grads, F, Dev, X.Type, Cfg, U, Elem, &W.Memo);
  PhaseKernels PB = X.NeedsBackward
                        ? convPhase(Geo, true, Grads, B, Dev, X.Type, Cfg, U, Elem, &W.Memo)
                        : PhaseKernels();
  takeTimes(PF, PB, Fwd, Bwd, FwdLaunches, BwdLaunches);
}

void Planner::recurrentTimes(Workspace &W, const Position &X, double Mb, unsigned Kind,
                             unsigned T, double &Fwd, double &Bwd, double &FwdLaunches,
                             double &BwdLaunches) {
  // The layer at micro-batch Mb; a split divides its sequences (no sharding
  // rule splits a recurrent layer's weights).
  RecurrentGeometry Geo = Recurrents[X.ShapeIdx].Geo;
  Geo.Batch = Recurrents[X.ShapeIdx].Batch.at(Mb);
  if (Kind != 0)
    Geo.Batch /= T;
  MathUnit U = mathUnit(Dev, X.Type, Cfg);
  double Elem = dtypeBytes(X.Type);
  RecurrentGrads Grads{X.GradA, X.GradB, X.GradC};
  PhaseKernels PF = recurrentPhase(Geo, false, Grads, Dev, U, Elem, &W.Memo);
  PhaseKernels PB = X.NeedsBackward ? recurrentPhase(Geo, true, Grads, Dev, U, Elem, &W.Memo)
                                    : PhaseKernels();
  takeTimes(PF, PB, Fwd, Bwd, FwdLaunches, BwdLaunches);
}

void Planner::productTimes(Workspace &W, const Position &X, double Mb, unsigned Kind,
                           unsigned T, double &Fwd, double &Bwd, double &FwdLaunches,
                           double &BwdLaunches) {
  // The product at micro-batch Mb (each dim a polynomial in it), split by
  // tensor parallelism as its sharding says (Kind: a TPSplit).
  const GemmDims &D = Gemms[X.GemmIdx];
  GemmShape S = splitShape(GemmShape{D[0].at(Mb), D[1].at(Mb), D[2].at(Mb), D[3].at(Mb)},
                           TPSplit(Kind), T);
  MathUnit U = mathUnit(Dev, X.Type, Cfg);
  double Elem = dtypeBytes(X.Type);
  PhaseKernels F = productPhase(S, false, false, false, U, Dev, Elem, &W.Memo);
  PhaseKernels B = X.NeedsBackward
                       ? productPhase(S, true, X.GradA, X.GradB, U, Dev, Elem, &W.Memo)
                       : PhaseKernels();
  takeTimes(F, B, Fwd, Bwd, FwdLaunches, BwdLaunches);
}

double Planner::stageLaunches(const StageView &S, unsigned St) const {
  if (!Dev.asyncLaunch())
    return 0;
  const std::vector<double> &L = S.Sums.LPre[S.R];
  double Sum = 0;
  for (unsigned C = 0; C < S.V; ++C) {
    unsigned Ch = St + C * S.P;
    Sum += L[S.bd1(Ch)] - L[S.bd0(Ch)];
  }
  return Sum;
}

void Planner::checkExactSums(Group &G) {
  // Whether the activation sums are exact: whole-number terms scaled by 1
  // or 1/t with t a power of two, else checked term by term. (Exact, they
  // are the same in any order and grouping: the segments' sums.)
  const TPPlan &TP = *G.TP;
  const uint8_t *Split = TP.SplitU8.data();
  double Mb = double(G.B);
  unsigned T = G.T;
  bool AnyScaled = G.SP || TP.AnySplit;
  int Shift = !AnyScaled ? 0 : (T & (T - 1)) == 0 ? __builtin_ctz(T) : -1;
  auto Scale = [&](size_t P) { return (Split[P] || G.SP) ? 1.0 / T : 1.0; };
  auto Check = [&](const IntegralTerms &I, auto Term) {
    if (I.exactAt(Mb, Shift))
      return true;
    ExactSum X;
    for (size_t P = 0; P < Pos.size(); ++P)
      X.add(Term(P).at(Mb) * Scale(P));
    return X.exact();
  };
  G.AExact = Check(SavedInt, [&](size_t P) -> const BatchPoly & { return savedAff(P); });
  G.ASExact = Check(SelInt, [&](size_t P) -> const BatchPoly & { return selAff(P); });
  G.CkExact = CkInt.exactAt(Mb, Shift);
  if (!G.CkExact) {
    ExactSum X;
    for (size_t K = 0; K < CutPos.size(); ++K)
      X.add(CutCk[K].at(Mb) * Scale(CutPos[K]));
    G.CkExact = X.exact();
  }
  double *PCk = G.PreCk.data();
  PCk[0] = 0;
  double Ck = 0;
  for (size_t K = 0; K < CutPos.size(); ++K)
    PCk[K + 1] = Ck += CutCk[K].at(Mb) * Scale(CutPos[K]);
  const std::vector<double> &PA = G.Seg[0].PreA;
  for (size_t K = 0; K + 1 < CutPos.size(); ++K)
    G.SegSum[K] = PA[CutBd[0][K + 1]] - PA[CutBd[0][K]];
}

const StageAgg &Planner::stageAgg(Group &Gr, Config::Recompute Rc, unsigned P, unsigned V) {
  int R = Rc == Config::Recompute::Full ? 2 : Rc == Config::Recompute::Selective ? 1 : 0;
  std::array<unsigned, 3> Key{unsigned(R), P, V};
  auto Found = Gr.Aggs.find(Key);
  if (Found != Gr.Aggs.end())
    return Found->second;
  StageAgg &A = Gr.Aggs[Key];
  const ChunkEnds &CE = stageEnds(Gr, R, P * V);
  StageView S{Gr,
              R,
              P,
              V,
              CE,
              segSums(Gr, CE.Fine),
              Gr.TP->Seg[CE.Fine],
              R == 2 ? RecFull.data() : R == 1 ? RecSel.data() : nullptr};
  tiedCopies(S, A);
  for (unsigned Ch = 0; Ch < P * V; ++Ch) {
    size_t End = S.Ends[Ch];
    if (End < Pos.size() && Ch + 1 < P * V)
      A.MaxBoundary =
          std::max(A.MaxBoundary, LiveBytes[End].at(double(Gr.B)) * (Gr.SP ? 1.0 / Gr.T : 1.0));
  }
  slowestStage(S, S.Sums.Bounded[R], A);
  stageMemory(S, A);
  return A;
}

const ChunkEnds &Planner::stageEnds(Group &Gr, int R, unsigned Chunks) {
  // Pipeline stages: P*V chunks balanced by time; chunk c runs on stage c % P.
  auto EndsIt = Gr.Ends[R].find(Chunks);
  if (EndsIt != Gr.Ends[R].end())
    return EndsIt->second;
  ChunkEnds CE;
  std::vector<size_t> &Ends = CE.Ends;
  // Over the coarse segments while there are enough of them, else over
  // every position (the fine segmentation).
  CE.Fine = Opts.FineSegments || Boundaries.size() < Chunks;
  const SegSums &Sm = segSums(Gr, CE.Fine);
  if (Chunks > 1 && StackLayers >= Chunks) {
    // A stack of identical layers: Megatron-LM's partition, L/(p v) whole
    // layers per chunk, the embedding on the first chunk and the head (with
    // the loss) on the last; when L does not divide, the chunks after the
    // first take one more each, so that the first, which holds the
    // embedding, is not the one with extra work.
    size_t L = StackLayers, Q = L / Chunks, Extra = L % Chunks, Done = 0;
    for (unsigned C = 0; C + 1 < Chunks; ++C) {
      Done += Q + (C >= 1 && C <= Extra ? 1 : 0);
      Ends.push_back(Boundaries[Done - 1]);
    }
    Ends.push_back(Pos.size());
  } else if (Chunks > 1) {
    const std::vector<double> &Seg = Sm.Pre[R];
    double &MaxSeg = Gr.Seg[CE.Fine].MaxSeg[R];
    if (Sm.Bounded[R] && MaxSeg < 0)
      MaxSeg = maxSegment(Seg);
    const std::vector<size_t> &Allowed = CE.Fine ? AllBoundaries : Boundaries;
    // The host's launches bind only where all of them outlast the best
    // device-only bound (at least the largest segment and the mean chunk).
    double HostAll = Dev.asyncLaunch() ? Sm.LPre[R].back() * Dev.LaunchOverhead : 0;
    if (Sm.Bounded[R] && HostAll > std::max(MaxSeg, Seg.back() / Chunks)) {
      std::vector<double> Host(Seg.size());
      for (size_t K = 1; K < Host.size(); ++K)
        Host[K] = Sm.LPre[R][K] * Dev.LaunchOverhead;
      Ends = balanceStream(Seg, Host, Chunks, Allowed);
    } else {
      Ends = balance(Seg, Chunks, Allowed, Sm.Bounded[R], MaxSeg);
    }
  } else {
    Ends = {Pos.size()};
  }
  // Each end's boundary: in the fine segmentation the position itself; in
  // the coarse one its place among Boundaries, plus one.
  for (size_t E : Ends)
    CE.Bd.push_back(CE.Fine ? uint32_t(E)
                            : uint32_t(std::lower_bound(Boundaries.begin(), Boundaries.end(),
                                                        E) -
                                       Boundaries.begin() + 1));
  return Gr.Ends[R].emplace(Chunks, std::move(CE)).first->second;
}

void Planner::tiedCopies(const StageView &S, StageAgg &A) {
  // Shared weights whose readers land on several stages: a copy on each
  // stage but the owner's, their gradients all-reduced across them.
  unsigned P = S.P;
  const std::vector<size_t> &Ends = S.Ends;
  A.CopyParams.assign(P, 0);
  A.CopySplit.assign(P, 0);
  if (P == 1)
    return;
  for (const SharedParam &Sp : Shared) {
    auto StageOf = [&](uint32_t Q) {
      return unsigned(std::upper_bound(Ends.begin(), Ends.end(), size_t(Q)) - Ends.begin()) % P;
    };
    llvm::SmallVector<unsigned, 4> Stages;
    for (uint32_t Q : Sp.Readers)
      if (!llvm::is_contained(Stages, StageOf(Q)))
        Stages.push_back(StageOf(Q));
    if (Stages.size() < 2)
      continue;
    bool Split = S.Gr.TP->Sharding.SplitParams.count(Sp.V);
    for (size_t I = 1; I < Stages.size(); ++I)
      (Split ? A.CopySplit : A.CopyParams)[Stages[I]] += Sp.Elems;
    A.Tied.emplace_back(unsigned(Stages.size()), Split, Sp.Elems);
  }
}

void Planner::sumStagesExactly(const StageView &S, unsigned Sa, const unsigned *Sb,
                               StageSums &Xa, StageSums &Xb) {
  // Stages' sums segment by segment (each segment's its class's), two
  // stages at a time (independent chains of additions), each in its own
  // order.
  int R = S.R;
  unsigned P = S.P, V = S.V;
  const SegSums &Sm = S.Sums;
  if (P == 1 && S.Ends.back() == Pos.size()) { // stage 0 sums every segment in order
    Xa.T = Sm.Pre[R].back();
    Xa.B = Sm.TotBwd;
    Xa.TP = Sm.TotTP;
    Xa.Rec = Sm.TotRec[R];
    return;
  }
  const uint32_t *ClassOf = S.Cls.ClassOf.data();
  const ClassSum *Cls = Sm.Class.data();
  auto Add = [&](uint32_t Seg, StageSums &X) {
    const ClassSum &C = Cls[ClassOf[Seg]];
    X.T += C.T[R];
    X.B += C.Bwd;
    X.TP += C.TP;
    X.Rec += C.Rec[R];
  };
  // Sums segments [Q0, Q1) into X, and [R0, R0 + Q1 - Q0) into Y, with
  // local accumulators.
  auto Walk = [&](uint32_t Q0, uint32_t Q1, StageSums &X, const uint32_t *R0, StageSums &Y) {
    StageSums A = X;
    if (R0) {
      StageSums B = Y;
      for (uint32_t Q = Q0, Q2 = *R0; Q < Q1; ++Q, ++Q2) {
        Add(Q, A);
        Add(Q2, B);
      }
      Y = B;
    } else {
      for (uint32_t Q = Q0; Q < Q1; ++Q)
        Add(Q, A);
    }
    X = A;
  };
  for (unsigned C = 0; C < V; ++C) {
    unsigned Ca = Sa + C * P;
    uint32_t A0 = S.bd0(Ca), A1 = S.bd1(Ca);
    if (!Sb) {
      Walk(A0, A1, Xa, nullptr, Xa);
      continue;
    }
    unsigned Cb = *Sb + C * P;
    uint32_t B0 = S.bd0(Cb), B1 = S.bd1(Cb);
    uint32_t N = std::min(A1 - A0, B1 - B0);
    Walk(A0, A0 + N, Xa, &B0, Xb);
    Walk(A0 + N, A1, Xa, nullptr, Xa);
    uint32_t B2 = B0 + N;
    Walk(B2, B1, Xb, nullptr, Xb);
  }
}

std::vector<unsigned> Planner::slowestCandidates(const StageView &S) {
  // A stage's time from prefix sums is within Err of its sum segment by
  // segment (all terms non-negative), so only stages within 2 Err of the
  // largest can be the slowest.
  const std::vector<double> &Prefix = S.Sums.Pre[S.R];
  unsigned P = S.P, V = S.V;
  std::vector<double> Approx(P, 0), Host(P, 0);
  for (unsigned Ch = 0; Ch < P * V; ++Ch)
    Approx[Ch % P] += Prefix[S.bd1(Ch)] - Prefix[S.bd0(Ch)];
  // A stage takes max(its device time, its launches' host time); the
  // latter is exact, so the bound on the error stays the device's.
  for (unsigned St = 0; St < P; ++St) {
    Host[St] = stageSeconds(0, stageLaunches(S, St));
    Approx[St] = std::max(Approx[St], Host[St]);
  }
  double MaxA = *std::max_element(Approx.begin(), Approx.end());
  double Err = 1.5 * (2.0 * V + 2) * (double(Prefix.size()) + 1) * 0x1p-53 * Prefix.back();
  // A stage whose segments are of the classes of an earlier candidate's, in
  // order, sums to the same time and is not the first of the largest: it
  // need not be summed (a class fixes all that a stage's sums read of its
  // positions). Equal times from other classes are summed as any other
  // candidate; the first of equal times is still the one kept.
  const uint32_t *ClassOf = S.Cls.ClassOf.data();
  auto SameCosts = [&](unsigned S1, unsigned S2) {
    for (unsigned C = 0; C < V; ++C) {
      unsigned C1 = S1 + C * P, C2 = S2 + C * P;
      uint32_t B1 = S.bd0(C1), B2 = S.bd0(C2), L = S.bd1(C1) - B1;
      if (S.bd1(C2) - B2 != L ||
          std::memcmp(ClassOf + B1, ClassOf + B2, L * sizeof(*ClassOf)) != 0)
        return false;
    }
    return true;
  };
  std::vector<unsigned> Cands;
  for (unsigned St = 0; St < P; ++St) {
    if (Approx[St] < MaxA - 2 * Err)
      continue;
    bool Dup = false;
    for (unsigned C : Cands)
      if ((Dup = Host[C] == Host[St] && SameCosts(C, St)))
        break;
    if (!Dup)
      Cands.push_back(St);
  }
  return Cands;
}

void Planner::slowestStage(const StageView &S, bool Bounded, StageAgg &A) {
  // The slowest stage, and its times summed segment by segment: only the
  // candidates are summed, two at a time (with a cost not finite and
  // non-negative the prefix sums bound nothing: every stage is summed).
  std::vector<unsigned> Cands;
  if (Bounded) {
    Cands = slowestCandidates(S);
  } else {
    Cands.resize(S.P);
    std::iota(Cands.begin(), Cands.end(), 0u);
  }
  std::vector<StageSums> X(Cands.size());
  for (size_t I = 0; I < Cands.size(); I += 2)
    sumStagesExactly(S, Cands[I], I + 1 < Cands.size() ? &Cands[I + 1] : nullptr, X[I],
                     I + 1 < Cands.size() ? X[I + 1] : X[I]);
  // The first of the largest, as evaluate() took it, each stage as one
  // stream of its kernels.
  std::vector<double> Launches(Cands.size()), Stream(Cands.size());
  for (size_t I = 0; I < Cands.size(); ++I) {
    Launches[I] = stageLaunches(S, Cands[I]);
    Stream[I] = stageSeconds(X[I].T, Launches[I]);
  }
  size_t Best = 0;
  for (size_t I = 1; I < Cands.size(); ++I)
    if (Stream[I] > Stream[Best])
      Best = I;
  A.Slowest = Cands[Best];
  A.Time = X[Best].T;
  A.Bwd = X[Best].B;
  A.TP = X[Best].TP;
  A.Rec = X[Best].Rec;
  A.Launches = Launches[Best];
  A.HostStall = Stream[Best] - X[Best].T;
}

void Planner::stageMemory(const StageView &View, StageAgg &A) {
  const Group &Gr = View.Gr;
  const TPPlan &TP = *Gr.TP;
  int R = View.R;
  unsigned P = View.P, Chunks = View.P * View.V;
  double Mb = double(Gr.B);
  auto StartOf = [&](unsigned Ch) { return View.start(Ch); };
  const std::vector<size_t> &Ends = View.Ends;
  // Memory terms of every stage: from prefix sums where those are exact,
  // else position by position.
  A.Params.assign(P, 0);
  A.SplitParams.assign(P, 0);
  A.Act.assign(P, 0);
  A.Ckpt.assign(P, 0);
  A.SegMax.assign(P, 0);
  A.Frozen.assign(P, 0);
  A.LastReady.assign(P, 0);
  // The cool-down after stage S's last backward: the backwards of chunks
  // S-1 .. 0 (each stage's first), on the stages before it.
  A.CoolDown.assign(P, 0);
  const SegSums &Sm = View.Sums;
  for (unsigned S = 1; S < P; ++S)
    A.CoolDown[S] = A.CoolDown[S - 1] + Sm.PreB[View.bd1(S - 1)] - Sm.PreB[View.bd0(S - 1)];
  for (unsigned S = 0; S < P; ++S) {
    // Chunk S is stage S's first: its backward runs last.
    auto Q = std::lower_bound(ParamPos.begin(), ParamPos.end(), uint32_t(StartOf(S)));
    if (Q != ParamPos.end() && *Q < Ends[S])
      A.LastReady[S] = TP.PreOwn[*Q + 1] - TP.PreOwn[*Q] +
                       (TP.PreSplit[*Q + 1] - TP.PreSplit[*Q]) / Gr.T;
  }
  bool ParamsExact = TP.ParamsExact;
  bool ActExact = R == 0 ? Gr.AExact : R == 1 ? Gr.ASExact : Gr.AExact && Gr.CkExact;
  for (unsigned Ch = 0; Ch < Chunks; ++Ch) {
    unsigned S = Ch % P;
    size_t Start = StartOf(Ch), End = Ends[Ch];
    uint32_t Bd0 = View.bd0(Ch), Bd1 = View.bd1(Ch);
    if (!TP.PreFrozenOwn.empty())
      A.Frozen[S] += TP.PreFrozenOwn[End] - TP.PreFrozenOwn[Start] +
                     (TP.PreFrozenSplit[End] - TP.PreFrozenSplit[Start]) / Gr.T;
    if (ParamsExact) {
      A.Params[S] += TP.PreOwn[End] - TP.PreOwn[Start];
      A.SplitParams[S] += TP.PreSplit[End] - TP.PreSplit[Start];
    }
    if (ActExact) {
      if (R == 0) {
        A.Act[S] += Sm.PreA[Bd1] - Sm.PreA[Bd0];
      } else if (R == 1) {
        A.Act[S] += Sm.PreAS[Bd1] - Sm.PreAS[Bd0];
      } else {
        auto CkAt = [&](size_t Q) {
          return Gr.PreCk[std::lower_bound(CutPos.begin(), CutPos.end(), Q) - CutPos.begin()];
        };
        A.Ckpt[S] += CkAt(End) - CkAt(Start);
        if (Start < End) {
          // Segments between checkpoints: a partial one at each end of the
          // chunk, whole ones between (the cuts fall on the segmentation's
          // boundaries: CutBd).
          const std::vector<double> &PA = Sm.PreA;
          const std::vector<uint32_t> &CB = CutBd[View.CE.Fine];
          size_t I0 = std::lower_bound(CutPos.begin(), CutPos.end(), Start) - CutPos.begin();
          size_t I1 = std::lower_bound(CutPos.begin() + I0, CutPos.end(), End) - CutPos.begin();
          double M = A.SegMax[S];
          if (I0 == I1) {
            M = std::max(M, PA[Bd1] - PA[Bd0]);
          } else {
            M = std::max(M, PA[CB[I0]] - PA[Bd0]);
            for (size_t Kk = I0; Kk + 1 < I1; ++Kk)
              M = std::max(M, Gr.SegSum[Kk]);
            M = std::max(M, PA[Bd1] - PA[CB[I1 - 1]]);
          }
          A.SegMax[S] = M;
        }
      }
    }
    if (ParamsExact && ActExact)
      continue;
    double Segment = 0;
    size_t NextCut = std::lower_bound(CutPos.begin(), CutPos.end(), Start) - CutPos.begin();
    for (size_t Q = Start; Q < End; ++Q) {
      // With sequence parallelism the replicated regions are split too.
      double ActScale = (TP.SplitU8[Q] || Gr.SP) ? 1.0 / Gr.T : 1.0;
      if (!ParamsExact) {
        A.Params[S] += PosParams[Q] - TP.SplitParams[Q];
        A.SplitParams[S] += TP.SplitParams[Q];
      }
      if (ActExact)
        continue;
      if (R == 0)
        A.Act[S] += savedAff(Q).at(Mb) * ActScale;
      else if (R == 1)
        A.Act[S] += selAff(Q).at(Mb) * ActScale;
      else {
        if (Cut[Q]) {
          A.SegMax[S] = std::max(A.SegMax[S], Segment);
          Segment = 0;
          A.Ckpt[S] += CutCk[NextCut++].at(Mb) * ActScale;
        }
        Segment += savedAff(Q).at(Mb) * ActScale;
      }
    }
    if (!ActExact)
      A.SegMax[S] = std::max(A.SegMax[S], Segment);
  }
}

PlanEval Planner::evaluate(Workspace &W, const PlanConfig &PC, unsigned N) {
  PlanEval E;
  E.C = PC;
  Group &Gr = group(W, PC.MicroBatch, PC.T, PC.SP);
  const StageAgg &A = stageAgg(Gr, PC.Recomp, PC.P, PC.V);
  Links L = linksOf(PC);
  E.TPTier = tierName(1, PC.T);
  E.DPTier = tierName(PC.T, PC.D);
  E.PPTier = L.PPInter ? "inter-node" : "intra-node";
  E.TPCollectivesPerStep = Gr.TPCount;
  E.TPCollectivesPerStep *= PC.M;
  double Pipeline = evalPipeline(PC, A, L, E);
  evalMemory(PC, A, *Gr.TP, E);
  evalUpdate(PC, A, L, Pipeline, E);
  int R = PC.Recomp == Config::Recompute::Full ? 2 : PC.Recomp == Config::Recompute::Selective ? 1 : 0;
  E.ModelFlops = Gr.Seg[0].ModelFlops * PC.M * PC.D;
  E.MatrixFlops = Gr.Seg[0].MatrixFlops[R] * PC.M * PC.D;
  // Against the rate its matrix products run at, as analyze's MFU (a device
  // with no figure for the type: its vector rate; none at all: 0).
  double Peak = Dev.matrixPeak(Cfg.ComputeDType.value_or(DType::Float));
  E.MFU = E.StepSeconds > 0 && Peak > 0 ? E.ModelFlops / E.StepSeconds / N / Peak : 0;
  E.TFlopsPerDevice = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N : 0;
  return E;
}

Planner::Links Planner::linksOf(const PlanConfig &PC) const {
  Links L;
  L.TPInter = crossesNodes(1, PC.T);
  L.DPInter = crossesNodes(PC.T, PC.D);
  L.PPInter = PC.P > 1 && (uint64_t(PC.T) * PC.D >= K || crossesNodes(PC.T * PC.D, PC.P));
  return L;
}

double Planner::evalPipeline(const PlanConfig &PC, const StageAgg &A, const Links &L,
                             PlanEval &E) const {
  double MaxBoundary = A.MaxBoundary;
  // The stage's device time, or the host's to issue its kernels where
  // that is longer (Device::streamSeconds).
  double TStage = A.Time + A.HostStall;
  // Point-to-point: activation forward, gradient backward, at each of the
  // stage's v chunk boundaries.
  // With tensor parallelism each of the t ranks sends 1/t of the boundary
  // and the receivers all-gather it over the tensor-parallel link
  // (Narayanan et al. 2021, sec. 4.1, scatter/gather).
  double P2P = 0;
  if (PC.P > 1) {
    double Send = PC.T > 1 && !PC.SP ? MaxBoundary / PC.T : MaxBoundary;
    double Gather = PC.T > 1 && !PC.SP
                        ? collectiveSeconds(CollectiveKind::AllGather, MaxBoundary, PC.T,
                                            groupBandwidth(1, PC.T), linkLatency(L.TPInter))
                        : 0;
    P2P = 2.0 * PC.V * (linkLatency(L.PPInter) + Send / linkBandwidth(L.PPInter) + Gather);
  }
  double TMicro = TStage + P2P;
  double Slots = double(PC.M) + double(PC.P - 1) / PC.V;
  E.Bubble = PC.P > 1 ? double(PC.P - 1) / (PC.V * PC.M + PC.P - 1) : 0;
  E.BubbleSeconds = TMicro * double(PC.P - 1) / PC.V;
  E.ComputeSeconds = (A.Time - A.TP) * PC.M;
  E.HostStallSeconds = A.HostStall * PC.M;
  E.StageLaunches = A.Launches;
  E.RecomputeSeconds = A.Rec * PC.M;
  E.TPSeconds = A.TP * PC.M;
  E.P2PSeconds = P2P * PC.M;
  return TMicro * Slots;
}

double Planner::stageParamCount(const PlanConfig &PC, const StageAgg &A, unsigned S) const {
  return A.Params[S] + A.SplitParams[S] / PC.T + A.CopyParams[S] + A.CopySplit[S] / PC.T;
}

void Planner::evalMemory(const PlanConfig &PC, const StageAgg &A, const TPPlan &TP,
                         PlanEval &E) const {
  // Memory of the fullest stage.
  double WorstMem = 0, WorstParams = 0, WorstAct = 0;
  OptimizerCost O = optimizerCost(Cfg.Opt);
  double Master = Mixed ? 4 : 0;
  double PerParam = WBytes / (PC.Zero >= 3 ? PC.D : 1) + WBytes / (PC.Zero >= 2 ? PC.D : 1) +
                    (Master + O.StateBytesPerParam) / (PC.Zero >= 1 ? PC.D : 1);
  double Interleave = 1.0 + double(PC.P - 1) / (double(PC.P) * PC.V);
  bool FullRecomp = PC.Recomp == Config::Recompute::Full;
  for (unsigned S = 0; S < PC.P; ++S) {
    double P = stageParamCount(PC, A, S);
    // 1F1B: stage s holds p - s micro-batches in flight; interleaving adds
    // (p-1)/(p v) of a micro-batch's activations (Narayanan et al. 2021).
    double InFlight = double(PC.P - S);
    if (PC.V > 1)
      InFlight *= Interleave;
    double Act = FullRecomp ? A.Ckpt[S] * InFlight + A.SegMax[S] : A.Act[S] * InFlight;
    // Frozen weights: the working copy only, partitioned by ZeRO-3.
    double Frozen = A.Frozen[S] * WBytes / (PC.Zero >= 3 ? PC.D : 1);
    double Mem = P * PerParam + Frozen + Act;
    if (Mem > WorstMem) {
      WorstMem = Mem;
      WorstParams = P * PerParam + Frozen;
      WorstAct = Act;
    }
  }
  // ZeRO-3 holds a parameter whole only while it is used: the tensor in
  // use, the next one prefetched and the full gradient of one before its
  // reduce-scatter, each taken at the largest tensor's size (a 529.6B
  // GPT's h x 4h weight is 3.4 GB in fp16): 3 x its bytes.
  if (PC.Zero >= 3 && PC.D > 1) {
    E.GatheredBytes =
        3 * std::max(TP.MaxOwnElems, TP.MaxSplitElems / PC.T) * WBytes;
    WorstMem += E.GatheredBytes;
    WorstParams += E.GatheredBytes;
  }
  // What the device holds beside the tensors (Device::withReserve).
  bool Communicates = uint64_t(PC.D) * PC.T * PC.P > 1;
  E.ReserveBytes = Dev.withReserve(WorstMem, Communicates) - WorstMem;
  E.MemoryBytes = WorstMem + E.ReserveBytes;
  E.ParamBytes = WorstParams;
  E.ActivationBytes = WorstAct;
  if (E.MemoryBytes > Dev.MemCapacity) {
    E.Fits = false;
    E.Why = formatv("needs {0:F1} GB per device, {1:F1} GB over its {2:F0} GB (parameters "
                    "and optimizer {3:F1}{6}, activations {4:F1}, reserve {5:F1})",
                    E.MemoryBytes / 1e9, (E.MemoryBytes - Dev.MemCapacity) / 1e9,
                    Dev.MemCapacity / 1e9, WorstParams / 1e9, WorstAct / 1e9,
                    E.ReserveBytes / 1e9,
                    E.GatheredBytes > 0
                        ? formatv(" incl. ZeRO-3's gathered working set {0:F1}",
                                  E.GatheredBytes / 1e9)
                              .str()
                        : std::string());
  }
}

Planner::DataParallelComm Planner::dataParallelComm(const PlanConfig &PC, const Links &L,
                                                   double ParamCount) const {
  DataParallelComm C;
  if (PC.D <= 1)
    return C;
  double GradBytes = ParamCount * WBytes;
  double DPBw = groupBandwidth(PC.T, PC.D), DPLat = linkLatency(L.DPInter);
  if (PC.Zero >= 3) {
    // ZeRO-3 (DeepSpeed) gathers each parameter tensor before its module
    // runs, in the forward and again for the backward, and reduce-scatters
    // its gradient: per tensor 3 collectives of (d-1)/d of it (the volume of
    // 1.5 all-reduces), each call paying the ring's d-1 latency steps, in
    // every micro-batch (the parameters stay partitioned between them). They
    // are charged at one device's own link, not spread over a node's NICs
    // as a large all-reduce is: Megatron-LM's Table 2 measured ZeRO-3 at
    // about that rate (144 -> 88 -> 44 TFLOP/s as 384 -> 1536 GPUs share a
    // fixed batch), 8x below what a ring per NIC would move. An assumption
    // from measurement, not derived: see README's Table 2.
    double Tensors = double(ParamPos.size()) / PC.P;
    double Own = linkBandwidth(L.DPInter);
    C.PerMicroBatch =
        1.5 * collectiveSeconds(CollectiveKind::AllReduce, GradBytes, PC.D, Own, 0) +
        3 * Tensors * (PC.D - 1) * DPLat;
    C.Times = PC.M;
    return C;
  }
  if (PC.Zero >= 1) {
    // Sharded optimizer state: the gradients are reduce-scattered (ZeRO-1,
    // Megatron-LM's distributed optimizer: once a step; ZeRO-2 keeps only its
    // partition of them, so DeepSpeed reduces after every micro-batch's
    // backward), and after the update each rank's parameters are
    // all-gathered (no backward is left to hide that; the next step's
    // forward may: evalUpdate).
    C.PerMicroBatch =
        collectiveSeconds(CollectiveKind::ReduceScatter, GradBytes, PC.D, DPBw, DPLat);
    C.Times = PC.Zero >= 2 ? PC.M : 1;
    C.Tail = collectiveSeconds(CollectiveKind::AllGather, GradBytes, PC.D, DPBw, DPLat);
    return C;
  }
  C.PerMicroBatch = collectiveSeconds(CollectiveKind::AllReduce, GradBytes, PC.D, DPBw, DPLat);
  return C;
}

void Planner::evalUpdate(const PlanConfig &PC, const StageAgg &A, const Links &L,
                         double Pipeline, PlanEval &E) const {
  // Data parallel: each stage reduces its own gradients over d (a ring
  // all-reduce, or ZeRO's collectives: dataParallelComm), from when its
  // backward ends.
  // In 1F1B's cool-down the last micro-batch's backward leaves stage s
  // before stages s-1 .. 0 run theirs (their first chunks', with a send
  // before each), so stage s's reduction has that much head start on the
  // step's end (their backward kernels and tensor-parallel collectives;
  // recomputed forwards left out, so a lower bound); stage 0 has none.
  // Overlapped, each gradient's reduction starts when the last micro-
  // batch's backward has computed it: all but the share of the stage's
  // gradient ready last (its first weights: an embedding, or a whole
  // recurrent layer) can hide behind the backward that is left. The step
  // waits for the stage whose reduction ends last.
  double Send = PC.M > 0 ? E.P2PSeconds / PC.M / (2.0 * PC.V) : 0; // one boundary, one way
  double MostParams = 0;
  bool Found = false;
  double WorstEnd = 0;
  for (unsigned S = 0; S < PC.P; ++S) {
    double Count = stageParamCount(PC, A, S);
    MostParams = std::max(MostParams, Count);
    DataParallelComm Comm = dataParallelComm(PC, L, Count);
    double DP = Comm.total();
    double Share = Count > 0 ? std::min(1.0, A.LastReady[S] / Count) : 0.0;
    // Overlapped: the last micro-batch's reduction behind its backward (but
    // the last-ready share), any earlier ones behind the rest of the step's
    // compute while the link keeps up; the parameters' all-gather after the
    // update behind the next step's first forward with Megatron-LM's
    // distributed optimizer (ZeRO-1, --overlap-param-gather), never with
    // DeepSpeed's ZeRO-2.
    double Hidden = 0;
    if (Opts.OverlapGradReduce) {
      Hidden = std::min(Comm.PerMicroBatch * (1 - Share), A.Bwd);
      if (Comm.Times > 1)
        Hidden += std::min((Comm.Times - 1) * Comm.PerMicroBatch,
                           std::max(0.0, Pipeline - A.Bwd));
      if (PC.Zero == 1)
        Hidden += std::min(Comm.Tail, std::max(0.0, A.Time - A.Bwd - A.Rec - A.TP));
    }
    double HeadStart = A.CoolDown[S] + S * Send;
    double End = DP - Hidden - HeadStart;
    if (!Found || End > WorstEnd || (End == WorstEnd && DP > E.DPSeconds)) {
      Found = true;
      WorstEnd = End;
      E.DPSeconds = DP;
      E.DPLastReadyShare = Share;
      E.DPExposedSeconds = std::max(0.0, End);
      E.OverlapSlowdownSeconds = Hidden * Opts.OverlapSlowdown;
      E.DPStage = S;
      E.DPHeadStartSeconds = HeadStart;
    }
  }
  double WorstParamCount = MostParams;
  // Shared weights on several stages: their copies' gradients all-reduced
  // over those stages after the backward (Megatron's embedding all-reduce).
  for (auto &[Stages, Split, Elems] : A.Tied)
    E.TiedSyncSeconds += collectiveSeconds(CollectiveKind::AllReduce,
                                           Elems / (Split ? PC.T : 1) * WBytes, Stages,
                                           linkBandwidth(L.PPInter), linkLatency(L.PPInter));
  // Optimizer over the device's parameter share (ZeRO >= 1 shards it).
  OptimizerCost O = optimizerCost(Cfg.Opt);
  double UpdateBytes = WorstParamCount *
                       (2 * (Mixed ? 4 : WBytes) + WBytes + 2 * O.StateBytesPerParam +
                        (Mixed ? WBytes : 0)) /
                       (PC.Zero >= 1 ? PC.D : 1);
  double UpdateFlops = WorstParamCount * O.FlopsPerParam / (PC.Zero >= 1 ? PC.D : 1);
  // Behind a host-bound stream the host issues the update's kernels last,
  // so they wait for their launches (analyze's step counts them in the
  // same stream); behind a device-bound one the host is ahead and the
  // launches hide.
  PhaseTime Update =
      placeOnDevice(PhaseCost{UpdateFlops, 0, 0, UpdateBytes}, Dev, DType::Float, Cfg);
  E.OptimizerSeconds = E.HostStallSeconds > 0
                           ? std::max(Update.Seconds, Update.Launches * Dev.LaunchOverhead)
                           : Update.Seconds;
  // The input feed, host to device, prefetched behind the step's compute.
  double Mb = double(PC.MicroBatch);
  double Feed = Dev.HostLink.present()
                    ? InputBytes.at(Mb) * PC.M / (Dev.HostLink.Bandwidth) + Dev.HostLink.Latency
                    : 0;
  E.FeedExposedSeconds = std::max(0.0, Feed - Pipeline);
  E.StepSeconds = Pipeline + E.DPExposedSeconds + E.OverlapSlowdownSeconds +
                  E.TiedSyncSeconds + E.OptimizerSeconds + E.FeedExposedSeconds;
}

/// Evaluates Cs grouped by what they share (t, sp, micro-batch, then
/// recomputation and partition), returning the results in Cs's order.
std::vector<PlanEval> Planner::evaluateAll(const std::vector<Job> &Jobs) {
  std::vector<size_t> Order(Jobs.size());
  std::iota(Order.begin(), Order.end(), size_t(0));
  auto Key = [](const PlanConfig &C) {
    return std::make_tuple(C.T, C.SP, C.MicroBatch, int(C.Recomp), C.P * C.V, C.P, C.V);
  };
  std::stable_sort(Order.begin(), Order.end(),
                   [&](size_t A, size_t B) { return Key(Jobs[A].C) < Key(Jobs[B].C); });
  std::vector<PlanEval> Out(Jobs.size());
  // Two threads, each with its own workspace, take the groups (t, sp,
  // micro-batch) of the order one at a time, the next free one as each
  // finishes. A group's per-position tables cost more than its
  // configurations on a large graph, and groups differ: halves cut by
  // configuration count left one thread idle for a third of the 1M-node
  // search. Jobs of every device count share a group's tables (the single-
  // device baseline and a scaling study reuse the search's). What the
  // threads share is read only: the tensor-parallel plans are made first.
  // Each configuration's result does not depend on which workspace
  // evaluates it, nor on what else is evaluated.
  auto GroupOf = [&](size_t I) {
    return std::make_tuple(Jobs[I].C.T, Jobs[I].C.SP, Jobs[I].C.MicroBatch);
  };
  std::vector<size_t> Starts;
  for (size_t K = 0; K < Order.size(); ++K)
    if (K == 0 || GroupOf(Order[K]) != GroupOf(Order[K - 1]))
      Starts.push_back(K);
  Starts.push_back(Order.size());
  std::atomic<size_t> Next{0};
  auto Run = [&](Workspace &W) {
    for (size_t G = Next++; G + 1 < Starts.size(); G = Next++)
      for (size_t K = Starts[G]; K < Starts[G + 1]; ++K)
        Out[Order[K]] = evaluate(W, Jobs[Order[K]].C, Jobs[Order[K]].N);
  };
  // The tensor-parallel plans and their segments' classes first, on this
  // thread (the fine segmentation only if some partition has more chunks
  // than there are coarse segments).
  for (const Job &J : Jobs) {
    (void)tpPlan(J.C.T, J.C.SP);
    NeedFine |= Opts.FineSegments || size_t(J.C.P) * J.C.V > Boundaries.size();
  }
  for (auto &[Key, TP] : TPPlans)
    for (int Fine = 0; Fine <= int(NeedFine); ++Fine)
      segmentClasses(TP, Fine);
  std::thread Second;
  if (Starts.size() > 2 && Order.size() >= 64) {
    sizeWorkspace(Work[1]);
    try {
      Second = std::thread(Run, std::ref(Work[1]));
    } catch (const std::system_error &) {
    }
  }
  Run(Work[0]);
  if (Second.joinable())
    Second.join();
  return Out;
}

} // namespace ridge::plan
