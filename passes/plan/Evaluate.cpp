//===- Evaluate.cpp - The planner: one configuration's time and memory ----===//
#include "passes/plan/PlannerImpl.h"
#include <cstring>

using namespace ridge;

namespace ridge::plan {

void Planner::sizeWorkspace(Workspace &W) {
  size_t NPos = Pos.size(), NSlots = 4 * ClassRep.size();
  Group &G = W.G;
  G.TPT.resize(NPos);
  G.TPF.resize(NPos);
  for (auto *V : {&G.SlotTF, &G.SlotTB, &G.SlotLF, &G.SlotLB, &W.SlotMF, &W.SlotMM0, &W.SlotMM1})
    V->resize(NSlots);
  for (auto *V : {&G.Prefix[0], &G.Prefix[1], &G.Prefix[2], &G.PreA, &G.PreAS, &G.PreB})
    V->resize(NPos + 1);
  if (Dev.asyncLaunch()) {
    G.TPN.resize(NPos);
    G.TPNF.resize(NPos);
    for (auto &L : G.LPre)
      L.resize(NPos + 1);
  }
  G.PreCk.resize(CutPos.size() + 1);
  for (auto &C : G.Collapsed)
    C.resize(Boundaries.size() + 1);
  G.SegSum.resize(CutPos.empty() ? 0 : CutPos.size() - 1);
  W.CollSeconds.resize(CollCosts.size());
}

Group &Planner::group(Workspace &W, int64_t B, unsigned T, bool SP) {
  Group &G = W.G;
  if (G.Valid && G.B == B && G.T == T && G.SP == SP)
    return G;
  const TPPlan &TP = tpPlan(T, SP);
  const TPPlan *Last = G.Valid ? G.TP : nullptr; ///< whose collectives TPT holds
  G.Valid = true;
  G.B = B;
  G.T = T;
  G.SP = SP;
  G.TP = &TP;
  for (auto &E : G.Ends)
    E.clear();
  for (auto &M : G.MaxSeg)
    M[0] = M[1] = -1;
  G.Aggs.clear();
  sizeWorkspace(W);
  sumCollectives(W, Last);
  placeSlots(W);
  sumPositions(W);
  sumActivations(G);
  checkExactSums(G);
  return G;
}

void Planner::sumCollectives(Workspace &W, const TPPlan *Last) {
  // Tensor-parallel collectives, summed per position in their order.
  Group &G = W.G;
  const TPPlan &TP = *G.TP;
  bool Count = Dev.asyncLaunch();
  if (!Last) {
    G.TPT.assign(Pos.size(), 0);
    G.TPF.assign(Pos.size(), 0);
    if (Count) {
      G.TPN.assign(Pos.size(), 0);
      G.TPNF.assign(Pos.size(), 0);
    }
  } else {
    for (uint32_t P : Last->CollPos)
      G.TPT[P] = G.TPF[P] = 0;
    if (Count)
      for (uint32_t P : Last->CollPos)
        G.TPN[P] = G.TPNF[P] = 0;
  }
  bool TPInter = crossesNodes(1, G.T);
  double TPBw = groupBandwidth(1, G.T), TPLat = linkLatency(TPInter);
  for (uint32_t I : TP.UsedCosts) {
    double Bytes = CollCosts[I].Bytes.at(double(G.B));
    W.CollSeconds[I] = collectiveSeconds(CollCosts[I].Kind, Bytes, G.T, TPBw, TPLat);
  }
  double *TPTs = G.TPT.data(), *TPFs = G.TPF.data();
  const double *Sec = W.CollSeconds.data();
  for (size_t I = 0, E = TP.CollPos.size(); I < E; ++I) {
    TPTs[TP.CollPos[I]] += Sec[TP.CollCost[I]];
    if (TP.CollFwd[I])
      TPFs[TP.CollPos[I]] += Sec[TP.CollCost[I]];
  }
  if (Count)
    for (size_t I = 0, E = TP.CollPos.size(); I < E; ++I) {
      ++G.TPN[TP.CollPos[I]];
      G.TPNF[TP.CollPos[I]] += TP.CollFwd[I];
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
    W.SlotMF[Slot] = (XF.Flops.at(Mb) + XB.Flops.at(Mb)) * T * Scale;
    W.SlotMM0[Slot] = 2 * (XF.Macs.at(Mb) * 1 + XB.Macs.at(Mb)) * T * Scale;
    W.SlotMM1[Slot] = 2 * (XF.Macs.at(Mb) * 2 + XB.Macs.at(Mb)) * T * Scale;
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

void Planner::sumPositions(Workspace &W) {
  // Per position, in order, what evaluate() used to compute position by
  // position: forward and backward time (through the slots), the FLOP sums,
  // the time with each recomputation mode and its prefix sums; on an
  // asynchronous device the kernels launched too, in the same pass (a pass
  // of its own read the slots and flags again and cost 7% of a plan).
  Group &G = W.G;
  if (Dev.asyncLaunch())
    sumPositionsWith<true>(W);
  else
    sumPositionsWith<false>(W);
  // Every cost finite and non-negative: so are the slots' times and the
  // collectives (a cost adds at most four of them), and the total is finite.
  const TPPlan &TP = *G.TP;
  const double *STF = G.SlotTF.data(), *STB = G.SlotTB.data(), *TPTs = G.TPT.data();
  bool Bad = false;
  for (uint32_t I : TP.UsedSlots)
    Bad |= !(STF[I] >= 0 && STF[I] <= std::numeric_limits<double>::max()) ||
           !(STB[I] >= 0 && STB[I] <= std::numeric_limits<double>::max());
  for (uint32_t Q : TP.CollPos)
    Bad |= !(TPTs[Q] >= 0 && TPTs[Q] <= std::numeric_limits<double>::max());
  size_t NPos = Pos.size();
  for (int R = 0; R < 3; ++R)
    G.Bounded[R] = !Bad && G.Prefix[R][NPos] <= std::numeric_limits<double>::max();
}

template <bool Launches> void Planner::sumPositionsWith(Workspace &W) {
  // Two passes over the positions, each accumulator summed in position
  // order (so every sum is what one pass gave, bit for bit): the times
  // with their prefix sums first, then the FLOP sums and the launches. One
  // pass held 15 running sums, more than x86-64's 16 vector registers
  // leave room for beside the loads, and spilled them to the stack: 97
  // instructions a position, against 60 for the two passes together.
  Group &G = W.G;
  size_t NPos = Pos.size();
  for (int R = 0; R < 3; ++R)
    G.Prefix[R][0] = 0;
  const uint32_t *Slots = G.SlotOf;
  const uint8_t *Sel = RecSel.data(), *Full = RecFull.data();
  const double *STF = G.SlotTF.data(), *STB = G.SlotTB.data();
  const double *TPTs = G.TPT.data(), *TPFs = G.TPF.data();
  double *P0 = G.Prefix[0].data(), *P1 = G.Prefix[1].data(), *P2 = G.Prefix[2].data();
  double *PB = G.PreB.data();
  PB[0] = 0;
  // The prefixes at the stage boundaries are taken as they pass (gathered
  // after, they read the three prefix tables again, a cache line a read).
  for (auto &C : G.Collapsed)
    C[0] = 0;
  double *C0 = G.Collapsed[0].data(), *C1 = G.Collapsed[1].data(),
         *C2 = G.Collapsed[2].data();
  const size_t *Bd = Boundaries.data();
  size_t NextB = 0, NumB = Boundaries.size();
  double TotBwd = 0, TotTP = 0, Rec1 = 0, Rec2 = 0, PreBw = 0;
  double Pre0 = 0, Pre1 = 0, Pre2 = 0;
  for (size_t P = 0; P < NPos; ++P) {
    uint32_t Slot = Slots[P];
    double TF = STF[Slot], TB = STB[Slot], TPt = TPTs[P], TPf = TPFs[P];
    TotBwd += TB;
    TotTP += TPt;
    // Full recomputation replays a segment's forward, its tensor-parallel
    // collectives included (Megatron re-runs the layer's all-reduces).
    // (Group::cost() is this, position by position.)
    double Zero = 0, RS = Sel[P] ? TF : 0, RF = Full[P] ? TF + TPf : 0;
    Rec1 += RS;
    Rec2 += RF;
    double X0 = TF + TB + Zero, X1 = TF + TB + RS, X2 = TF + TB + RF;
    X0 += TPt;
    X1 += TPt;
    X2 += TPt;
    P0[P + 1] = Pre0 += X0;
    P1[P + 1] = Pre1 += X1;
    P2[P + 1] = Pre2 += X2;
    PB[P + 1] = PreBw += TB + (TPt - TPf);
    if (NextB < NumB && Bd[NextB] == P + 1) {
      C0[NextB + 1] = Pre0;
      C1[NextB + 1] = Pre1;
      C2[NextB + 1] = Pre2;
      ++NextB;
    }
  }
  // The model's FLOPs and, on an asynchronous device, the kernels the host
  // issues, per position in order: forward, backward and collectives; a
  // replay adds the forward's (and under full recomputation its forward
  // collectives). Whole numbers: every prefix difference is a stage's
  // exact count.
  const double *SMF = W.SlotMF.data(), *SM0 = W.SlotMM0.data(), *SM1 = W.SlotMM1.data();
  const uint32_t *N = G.TPN.data(), *NF = G.TPNF.data();
  const double *LF = G.SlotLF.data(), *LB = G.SlotLB.data();
  double *L0 = nullptr, *L1 = nullptr, *L2 = nullptr;
  if constexpr (Launches) {
    L0 = G.LPre[0].data(), L1 = G.LPre[1].data(), L2 = G.LPre[2].data();
    L0[0] = L1[0] = L2[0] = 0;
  }
  double La0 = 0, La1 = 0, La2 = 0;
  double ModelFlops = 0, M0 = 0, M1s = 0, M2s = 0;
  for (size_t P = 0; P < NPos; ++P) {
    uint32_t Slot = Slots[P];
    ModelFlops += SMF[Slot];
    M0 += SM0[Slot];
    M1s += Sel[P] ? SM1[Slot] : SM0[Slot];
    M2s += Full[P] ? SM1[Slot] : SM0[Slot];
    if constexpr (Launches) {
      double F = LF[Slot], X = F + LB[Slot] + N[P];
      L0[P + 1] = La0 += X;
      L1[P + 1] = La1 += X + (Sel[P] ? F : 0);
      L2[P + 1] = La2 += X + (Full[P] ? F + NF[P] : 0);
    }
  }
  G.ModelFlops = ModelFlops;
  G.MatrixFlops[0] = M0;
  G.MatrixFlops[1] = M1s;
  G.MatrixFlops[2] = M2s;
  G.TotBwd = TotBwd;
  G.TotTP = TotTP;
  G.TotRec[0] = 0;
  G.TotRec[1] = Rec1;
  G.TotRec[2] = Rec2;
  for (int R = 0; R < 3; ++R)
    for (size_t K = NextB; K < NumB; ++K) // boundaries the loop did not pass (none at 0)
      G.Collapsed[R][K + 1] = G.Prefix[R][Boundaries[K]];
}

double Planner::stageLaunches(const StageView &S, unsigned St) const {
  if (!Dev.asyncLaunch())
    return 0;
  const std::vector<double> &L = S.Gr.LPre[S.R];
  double Sum = 0;
  for (unsigned C = 0; C < S.V; ++C) {
    unsigned Ch = St + C * S.P;
    Sum += L[S.Ends[Ch]] - L[S.start(Ch)];
  }
  return Sum;
}

void Planner::sumActivations(Group &G) {
  // The activation terms' prefix sums: saved tensors with and without
  // selective recomputation, and checkpoints at the cuts only (summed over
  // every position, the zero terms between them changed nothing).
  const uint8_t *Split = G.TP->SplitU8.data();
  double Mb = double(G.B);
  G.PreA[0] = G.PreAS[0] = G.PreCk[0] = 0;
  double *PA = G.PreA.data(), *PAS = G.PreAS.data(), *PCk = G.PreCk.data();
  const BatchPoly *SA = SavedAff.data(), *SelA = SelAff.data();
  // With sequence parallelism the replicated regions are split too.
  const double Scales[2] = {1.0, 1.0 / G.T};
  unsigned SPBit = G.SP;
  double A = 0, AS = 0, Ck = 0;
  for (size_t P = 0, NPos = Pos.size(); P < NPos; ++P) {
    double ActScale = Scales[Split[P] | SPBit];
    PA[P + 1] = A += SA[P].at(Mb) * ActScale;
    PAS[P + 1] = AS += SelA[P].at(Mb) * ActScale;
  }
  for (size_t K = 0; K < CutPos.size(); ++K)
    PCk[K + 1] = Ck += CutCk[K].at(Mb) * Scales[Split[CutPos[K]] | SPBit];
}

void Planner::checkExactSums(Group &G) {
  // Whether the activation prefix sums are exact: whole-number terms scaled
  // by 1 or 1/t with t a power of two, else checked term by term.
  const TPPlan &TP = *G.TP;
  const uint8_t *Split = TP.SplitU8.data();
  double Mb = double(G.B);
  unsigned T = G.T;
  bool AnyScaled = G.SP || TP.AnySplit;
  int Shift = !AnyScaled ? 0 : (T & (T - 1)) == 0 ? __builtin_ctz(T) : -1;
  auto Check = [&](const IntegralTerms &I, const std::vector<BatchPoly> &Aff, bool OnlyCuts) {
    if (I.exactAt(Mb, Shift))
      return true;
    ExactSum X;
    for (size_t P = 0; P < Pos.size(); ++P)
      if (!OnlyCuts || Cut[P])
        X.add(Aff[P].at(Mb) * ((Split[P] || G.SP) ? 1.0 / T : 1.0));
    return X.exact();
  };
  G.AExact = Check(SavedInt, SavedAff, false);
  G.ASExact = Check(SelInt, SelAff, false);
  G.CkExact = Check(CkInt, CkAff, true);
  for (size_t K = 0; K + 1 < CutPos.size(); ++K)
    G.SegSum[K] = G.PreA[CutPos[K + 1]] - G.PreA[CutPos[K]];
}

const StageAgg &Planner::stageAgg(Group &Gr, Config::Recompute Rc, unsigned P, unsigned V) {
  int R = Rc == Config::Recompute::Full ? 2 : Rc == Config::Recompute::Selective ? 1 : 0;
  std::array<unsigned, 3> Key{unsigned(R), P, V};
  auto Found = Gr.Aggs.find(Key);
  if (Found != Gr.Aggs.end())
    return Found->second;
  StageAgg &A = Gr.Aggs[Key];
  StageView S{Gr, R, P, V, stageEnds(Gr, R, P * V),
              R == 2 ? RecFull.data() : R == 1 ? RecSel.data() : nullptr};
  tiedCopies(S, A);
  for (unsigned Ch = 0; Ch < P * V; ++Ch) {
    size_t End = S.Ends[Ch];
    if (End < Pos.size() && Ch + 1 < P * V)
      A.MaxBoundary =
          std::max(A.MaxBoundary, LiveBytes[End].at(double(Gr.B)) * (Gr.SP ? 1.0 / Gr.T : 1.0));
  }
  if (Gr.Bounded[R])
    slowestStageExact(S, A);
  else
    slowestStageDirect(S, A);
  stageMemory(S, A);
  return A;
}

const std::vector<size_t> &Planner::stageEnds(Group &Gr, int R, unsigned Chunks) {
  // Pipeline stages: P*V chunks balanced by time; chunk c runs on stage c % P.
  auto EndsIt = Gr.Ends[R].find(Chunks);
  if (EndsIt != Gr.Ends[R].end())
    return EndsIt->second;
  std::vector<size_t> Ends;
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
    // Over AllBoundaries (every position) the collapsed prefix is the
    // prefix itself.
    bool Few = Boundaries.size() >= Chunks;
    const std::vector<double> &Seg = Few ? Gr.Collapsed[R] : Gr.Prefix[R];
    double &MaxSeg = Gr.MaxSeg[R][Few];
    if (Gr.Bounded[R] && MaxSeg < 0)
      MaxSeg = maxSegment(Seg);
    const std::vector<size_t> &Allowed = Few ? Boundaries : AllBoundaries;
    // The host's launches bind only where all of them outlast the best
    // device-only bound (at least the largest segment and the mean chunk).
    double HostAll = Dev.asyncLaunch() ? Gr.LPre[R][Pos.size()] * Dev.LaunchOverhead : 0;
    if (Gr.Bounded[R] && HostAll > std::max(MaxSeg, Seg.back() / Chunks)) {
      std::vector<double> Host(Seg.size());
      for (size_t K = 1; K < Host.size(); ++K)
        Host[K] = Gr.LPre[R][Allowed[K - 1]] * Dev.LaunchOverhead;
      Ends = balanceStream(Seg, Host, Chunks, Allowed);
    } else {
      Ends = balance(Seg, Chunks, Allowed, Gr.Bounded[R], MaxSeg);
    }
  } else {
    Ends = {Pos.size()};
  }
  return Gr.Ends[R].emplace(Chunks, std::move(Ends)).first->second;
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
  // Stages' sums position by position, two stages at a time (independent
  // chains of additions), each in its own order.
  const Group &Gr = S.Gr;
  int R = S.R;
  unsigned P = S.P, V = S.V;
  const std::vector<size_t> &Ends = S.Ends;
  const uint8_t *Flag = S.Flag;
  size_t NPos = Pos.size();
  if (P == 1 && Ends.back() == NPos) { // stage 0 sums every position in order
    Xa.T = Gr.Prefix[R][NPos];
    Xa.B = Gr.TotBwd;
    Xa.TP = Gr.TotTP;
    Xa.Rec = Gr.TotRec[R];
    return;
  }
  const uint32_t *SlotOf = Gr.SlotOf;
  const double *STF = Gr.SlotTF.data(), *STB = Gr.SlotTB.data(), *TPTP = Gr.TPT.data(),
               *TPFP = Gr.TPF.data();
  // Position Q's terms added to X: Group::cost() inline (the same
  // additions in the same order), its backward, TP and recompute times
  // (the replay, its forward collectives included under full
  // recomputation, as the whole-graph sum TotRec counts it).
  auto Add = [&](auto HasFlag, size_t Q, StageSums &X) {
    uint32_t Sl = SlotOf[Q];
    double TF = STF[Sl], TB = STB[Sl], TPt = TPTP[Q];
    double Rec = !HasFlag || !Flag[Q] ? 0 : R == 1 ? TF : TF + TPFP[Q];
    double C = TF + TB + Rec;
    X.T += C += TPt;
    X.B += TB;
    X.TP += TPt;
    if (HasFlag)
      X.Rec += Rec;
  };
  // Sums Q in [Q0, Q1) into X, and Q in [R0, R0 + Q1 - Q0) into Y, with
  // local accumulators (independent chains).
  auto Walk = [&](auto HasFlag, size_t Q0, size_t Q1, StageSums &X, const size_t *R0,
                  StageSums &Y) {
    StageSums A = X;
    if (R0) {
      StageSums B = Y;
      for (size_t Q = Q0, Q2 = *R0; Q < Q1; ++Q, ++Q2) {
        Add(HasFlag, Q, A);
        Add(HasFlag, Q2, B);
      }
      Y = B;
    } else {
      for (size_t Q = Q0; Q < Q1; ++Q)
        Add(HasFlag, Q, A);
    }
    X = A;
  };
  auto Run = [&](auto HasFlag) {
    for (unsigned C = 0; C < V; ++C) {
      unsigned Ca = Sa + C * P;
      size_t A0 = S.start(Ca), A1 = Ends[Ca];
      if (!Sb) {
        Walk(HasFlag, A0, A1, Xa, nullptr, Xa);
        continue;
      }
      unsigned Cb = *Sb + C * P;
      size_t B0 = S.start(Cb), B1 = Ends[Cb];
      size_t N = std::min(A1 - A0, B1 - B0);
      Walk(HasFlag, A0, A0 + N, Xa, &B0, Xb);
      Walk(HasFlag, A0 + N, A1, Xa, nullptr, Xa);
      Walk(HasFlag, B0 + N, B1, Xb, nullptr, Xb);
    }
  };
  if (Flag)
    Run(std::true_type());
  else
    Run(std::false_type());
}

std::vector<unsigned> Planner::slowestCandidates(const StageView &S) {
  // A stage's time from prefix sums is within Err of the position-by-position
  // sum (all terms non-negative), so only stages within 2 Err of the largest
  // can be the slowest.
  const Group &Gr = S.Gr;
  const std::vector<double> &Prefix = Gr.Prefix[S.R];
  unsigned P = S.P, V = S.V;
  size_t NPos = Pos.size();
  std::vector<double> Approx(P, 0), Host(P, 0);
  for (unsigned Ch = 0; Ch < P * V; ++Ch)
    Approx[Ch % P] += Prefix[S.Ends[Ch]] - Prefix[S.start(Ch)];
  // A stage takes max(its device time, its launches' host time); the
  // latter is exact, so the bound on the error stays the device's.
  for (unsigned St = 0; St < P; ++St) {
    Host[St] = stageSeconds(0, stageLaunches(S, St));
    Approx[St] = std::max(Approx[St], Host[St]);
  }
  double MaxA = *std::max_element(Approx.begin(), Approx.end());
  double Err = 1.5 * (2.0 * V + 2) * (double(NPos) + 2) * 0x1p-53 * Prefix[NPos];
  // A stage whose costs are those of an earlier candidate, position by
  // position, sums to the same time and is not the first of the largest:
  // it need not be summed. Its costs are the same when what Group::cost()
  // reads of each position is: its slot and collectives, and under
  // recomputation its replay flag (and, full, its replayed collectives),
  // compared as memory (a cost made again per position and compared took
  // 18% of a 100k-node plan). Equal costs from other inputs are summed as
  // any other candidate; the first of equal times is still the one kept.
  auto SameRange = [](const auto *A, size_t B1, size_t B2, size_t L) {
    return std::memcmp(A + B1, A + B2, L * sizeof(*A)) == 0;
  };
  auto SameCosts = [&](unsigned S1, unsigned S2) {
    for (unsigned C = 0; C < V; ++C) {
      unsigned C1 = S1 + C * P, C2 = S2 + C * P;
      size_t B1 = S.start(C1), B2 = S.start(C2), L = S.Ends[C1] - B1;
      if (S.Ends[C2] - B2 != L)
        return false;
      if (!SameRange(Gr.SlotOf, B1, B2, L) || !SameRange(Gr.TPT.data(), B1, B2, L))
        return false;
      if (S.R != 0 && !SameRange(S.Flag, B1, B2, L))
        return false;
      if (S.R == 2 && !SameRange(Gr.TPF.data(), B1, B2, L))
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

void Planner::slowestStageExact(const StageView &S, StageAgg &A) {
  // The slowest stage, and its times summed position by position: only the
  // candidates are summed, two at a time.
  std::vector<unsigned> Cands = slowestCandidates(S);
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

void Planner::slowestStageDirect(const StageView &S, StageAgg &A) {
  // Costs not all finite and non-negative: every stage summed in order.
  const Group &Gr = S.Gr;
  int R = S.R;
  unsigned P = S.P;
  const uint8_t *Flag = S.Flag;
  std::vector<double> Time(P, 0), Bwd(P, 0), TPs(P, 0), Rec(P, 0);
  for (unsigned Ch = 0; Ch < P * S.V; ++Ch) {
    unsigned St = Ch % P;
    for (size_t Q = S.start(Ch); Q < S.Ends[Ch]; ++Q) {
      Time[St] += Gr.cost(R, Flag, Q);
      Bwd[St] += Gr.tb(Q);
      TPs[St] += Gr.TPT[Q];
      Rec[St] += !Flag || !Flag[Q] ? 0 : R == 1 ? Gr.tf(Q) : Gr.tf(Q) + Gr.TPF[Q];
    }
  }
  std::vector<double> Launches(P), Stream(P);
  for (unsigned St = 0; St < P; ++St) {
    Launches[St] = stageLaunches(S, St);
    Stream[St] = stageSeconds(Time[St], Launches[St]);
  }
  unsigned Slowest = 0;
  for (unsigned St = 1; St < P; ++St)
    if (Stream[St] > Stream[Slowest])
      Slowest = St;
  A.Slowest = Slowest;
  A.Time = Time[Slowest];
  A.Bwd = Bwd[Slowest];
  A.TP = TPs[Slowest];
  A.Rec = Rec[Slowest];
  A.Launches = Launches[Slowest];
  A.HostStall = Stream[Slowest] - Time[Slowest];
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
  for (unsigned S = 1; S < P; ++S)
    A.CoolDown[S] = A.CoolDown[S - 1] + Gr.PreB[Ends[S - 1]] - Gr.PreB[StartOf(S - 1)];
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
    if (!TP.PreFrozenOwn.empty())
      A.Frozen[S] += TP.PreFrozenOwn[End] - TP.PreFrozenOwn[Start] +
                     (TP.PreFrozenSplit[End] - TP.PreFrozenSplit[Start]) / Gr.T;
    if (ParamsExact) {
      A.Params[S] += TP.PreOwn[End] - TP.PreOwn[Start];
      A.SplitParams[S] += TP.PreSplit[End] - TP.PreSplit[Start];
    }
    if (ActExact) {
      if (R == 0) {
        A.Act[S] += Gr.PreA[End] - Gr.PreA[Start];
      } else if (R == 1) {
        A.Act[S] += Gr.PreAS[End] - Gr.PreAS[Start];
      } else {
        auto CkAt = [&](size_t Q) {
          return Gr.PreCk[std::lower_bound(CutPos.begin(), CutPos.end(), Q) - CutPos.begin()];
        };
        A.Ckpt[S] += CkAt(End) - CkAt(Start);
        if (Start < End) {
          // Segments between checkpoints: a partial one at each end of the
          // chunk, whole ones between.
          const std::vector<double> &PA = Gr.PreA;
          size_t I0 = std::lower_bound(CutPos.begin(), CutPos.end(), Start) - CutPos.begin();
          size_t I1 = std::lower_bound(CutPos.begin() + I0, CutPos.end(), End) - CutPos.begin();
          double M = A.SegMax[S];
          if (I0 == I1) {
            M = std::max(M, PA[End] - PA[Start]);
          } else {
            M = std::max(M, PA[CutPos[I0]] - PA[Start]);
            for (size_t Kk = I0; Kk + 1 < I1; ++Kk)
              M = std::max(M, Gr.SegSum[Kk]);
            M = std::max(M, PA[End] - PA[CutPos[I1 - 1]]);
          }
          A.SegMax[S] = M;
        }
      }
    }
    if (ParamsExact && ActExact)
      continue;
    double Segment = 0;
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
        A.Act[S] += SavedAff[Q].at(Mb) * ActScale;
      else if (R == 1)
        A.Act[S] += SelAff[Q].at(Mb) * ActScale;
      else {
        if (Cut[Q]) {
          A.SegMax[S] = std::max(A.SegMax[S], Segment);
          Segment = 0;
          A.Ckpt[S] += CkAff[Q].at(Mb) * ActScale;
        }
        Segment += SavedAff[Q].at(Mb) * ActScale;
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
  E.ModelFlops = Gr.ModelFlops * PC.M * PC.D;
  E.MatrixFlops = Gr.MatrixFlops[R] * PC.M * PC.D;
  double Peak = Dev.peak(Cfg.ComputeDType.value_or(DType::Float)).value_or(0);
  E.MFU = E.StepSeconds > 0 ? E.ModelFlops / E.StepSeconds / N / Peak : 0;
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
  std::thread Second;
  if (Starts.size() > 2 && Order.size() >= 64) {
    for (const Job &J : Jobs)
      (void)tpPlan(J.C.T, J.C.SP);
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
