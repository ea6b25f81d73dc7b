//===- Segments.cpp - The planner: segments and their classes -------------===//
//
// A stage's time is its segments' times summed in order, each segment's
// summed position by position from zero; segments that match position by
// position share a class, whose sums a group takes once (SegmentClasses).
//
//===----------------------------------------------------------------------===//
#include "passes/plan/PlannerImpl.h"

using namespace ridge;

namespace ridge::plan {

void Planner::segmentClasses(TPPlan &TP, int Fine) {
  SegmentClasses &SC = TP.Seg[Fine];
  if (SC.Made)
    return;
  SC.Made = true;
  const std::vector<size_t> &Ends = Fine ? AllBoundaries : Boundaries;
  // The collectives by position; at one position in the plan's order, the
  // order group sums add them in.
  std::vector<uint32_t> Order(TP.CollPos.size());
  std::iota(Order.begin(), Order.end(), uint32_t(0));
  std::stable_sort(Order.begin(), Order.end(),
                   [&](uint32_t A, uint32_t B) { return TP.CollPos[A] < TP.CollPos[B]; });
  const uint32_t *Slot = TP.SlotOf.data(), *Key = PosKey.data();
  // Segment [B0, E0) with collectives Order[C0 .. C1) against class C's
  // representative.
  auto Same = [&](size_t B0, size_t E0, size_t C0, size_t C1, uint32_t C) {
    size_t RB = SC.RepBegin[C], Len = E0 - B0;
    if (SC.RepEnd[C] - RB != Len || SC.ClassColl[C + 1] - SC.ClassColl[C] != C1 - C0)
      return false;
    if (std::memcmp(Slot + B0, Slot + RB, Len * sizeof(*Slot)) != 0 ||
        std::memcmp(Key + B0, Key + RB, Len * sizeof(*Key)) != 0)
      return false;
    for (size_t I = C0, J = SC.ClassColl[C]; I < C1; ++I, ++J) {
      uint32_t X = Order[I];
      if (TP.CollPos[X] - B0 != SC.CollAt[J] - RB || TP.CollCost[X] != SC.CollCost[J] ||
          TP.CollFwd[X] != SC.CollFwd[J])
        return false;
    }
    return true;
  };
  std::unordered_map<uint64_t, llvm::SmallVector<uint32_t, 1>> ByHash;
  SC.ClassOf.resize(Ends.size());
  SC.ClassColl.assign(1, 0);
  size_t Begin = 0, Next = 0;
  for (size_t S = 0; S < Ends.size(); ++S) {
    size_t End = Ends[S], C0 = Next;
    uint64_t H = FnvBasis ^ (End - Begin);
    for (size_t Q = Begin; Q < End; ++Q)
      H = hashWords(H, {(uint64_t(Slot[Q]) << 32) | Key[Q]});
    for (; Next < Order.size() && TP.CollPos[Order[Next]] < End; ++Next) {
      uint32_t X = Order[Next];
      H = hashWords(H, {uint64_t(TP.CollPos[X] - Begin), (uint64_t(TP.CollCost[X]) << 1) |
                                                             TP.CollFwd[X]});
    }
    llvm::SmallVector<uint32_t, 1> &Cands = ByHash[H];
    uint32_t Class = UINT32_MAX;
    for (uint32_t C : Cands)
      if (Same(Begin, End, C0, Next, C)) {
        Class = C;
        break;
      }
    if (Class == UINT32_MAX) {
      Class = uint32_t(SC.RepBegin.size());
      Cands.push_back(Class);
      SC.RepBegin.push_back(uint32_t(Begin));
      SC.RepEnd.push_back(uint32_t(End));
      for (size_t I = C0; I < Next; ++I) {
        uint32_t X = Order[I];
        SC.CollAt.push_back(TP.CollPos[X]);
        SC.CollCost.push_back(TP.CollCost[X]);
        SC.CollFwd.push_back(TP.CollFwd[X]);
      }
      SC.ClassColl.push_back(uint32_t(SC.CollAt.size()));
    }
    SC.ClassOf[S] = Class;
    Begin = End;
  }
}

void Planner::sumClasses(Group &G, int Fine) {
  // Each class's representative, position by position from zero: the terms
  // sumPositions used to add per position, in the same order (so with one
  // position a segment, every prefix and stage sum is the position-by-
  // position one, bit for bit). What it reads of a position (its slot, which
  // also says whether it is split; its collectives; its PosKey terms) is
  // what segmentClasses compares: a new input here must be compared there.
  const SegmentClasses &SC = G.TP->Seg[Fine];
  SegSums &Sm = G.Seg[Fine];
  size_t NC = SC.RepBegin.size();
  Sm.Class.assign(NC, ClassSum{});
  bool Launches = Dev.asyncLaunch();
  const uint32_t *Slots = G.SlotOf;
  const uint8_t *Split = G.TP->SplitU8.data();
  const double *STF = G.SlotTF.data(), *STB = G.SlotTB.data(), *Sec = G.CollSeconds.data();
  const double *SMF = G.SlotMF.data(), *SM0 = G.SlotMM0.data(), *SM1 = G.SlotMM1.data();
  const double *LF = G.SlotLF.data(), *LB = G.SlotLB.data();
  double Mb = double(G.B);
  // With sequence parallelism the replicated regions are split too.
  const double Scales[2] = {1.0, 1.0 / G.T};
  unsigned SPBit = G.SP;
  for (size_t C = 0; C < NC; ++C) {
    ClassSum X{};
    size_t K = SC.ClassColl[C], KEnd = SC.ClassColl[C + 1];
    for (size_t P = SC.RepBegin[C], E = SC.RepEnd[C]; P < E; ++P) {
      uint32_t Slot = Slots[P];
      double TF = STF[Slot], TB = STB[Slot];
      // The position's tensor-parallel collectives, and of which forward
      // (replayed by full recomputation: Megatron re-runs the layer's
      // all-reduces).
      double TPt = 0, TPf = 0;
      uint32_t N = 0, NF = 0;
      for (; K < KEnd && SC.CollAt[K] == P; ++K) {
        TPt += Sec[SC.CollCost[K]];
        ++N;
        if (SC.CollFwd[K]) {
          TPf += Sec[SC.CollCost[K]];
          ++NF;
        }
      }
      const PosTerms &Tm = KeyTerms[PosKey[P]];
      double Zero = 0, RS = Tm.RecSel ? TF : 0, RF = Tm.RecFull ? TF + TPf : 0;
      X.Bwd += TB;
      X.TP += TPt;
      X.Rec[1] += RS;
      X.Rec[2] += RF;
      double X0 = TF + TB + Zero, X1 = TF + TB + RS, X2 = TF + TB + RF;
      X0 += TPt;
      X1 += TPt;
      X2 += TPt;
      X.T[0] += X0;
      X.T[1] += X1;
      X.T[2] += X2;
      X.B += TB + (TPt - TPf);
      // The model's FLOPs; a replay adds the forward's matrix FLOPs.
      X.Flops += SMF[Slot];
      X.Matrix[0] += SM0[Slot];
      X.Matrix[1] += Tm.RecSel ? SM1[Slot] : SM0[Slot];
      X.Matrix[2] += Tm.RecFull ? SM1[Slot] : SM0[Slot];
      // The kernels the host issues: forward, backward and collectives; a
      // replay the forward's (and under full recomputation its forward
      // collectives). Whole numbers: every prefix difference is exact.
      if (Launches) {
        double F = LF[Slot], L = F + LB[Slot] + N;
        X.L[0] += L;
        X.L[1] += L + (Tm.RecSel ? F : 0);
        X.L[2] += L + (Tm.RecFull ? F + NF : 0);
      }
      double ActScale = Scales[Split[P] | SPBit];
      X.A += Tm.Saved.at(Mb) * ActScale;
      X.AS += Tm.Sel.at(Mb) * ActScale;
    }
    Sm.Class[C] = X;
  }
}

const SegSums &Planner::segSums(Group &G, int Fine) {
  SegSums &Sm = G.Seg[Fine];
  if (Sm.Made)
    return Sm;
  Sm.Made = true;
  sumClasses(G, Fine);
  const SegmentClasses &SC = G.TP->Seg[Fine];
  const uint32_t *ClassOf = SC.ClassOf.data();
  const ClassSum *Cls = Sm.Class.data();
  size_t NS = SC.ClassOf.size();
  for (auto *V : {&Sm.Pre[0], &Sm.Pre[1], &Sm.Pre[2], &Sm.PreB, &Sm.PreA, &Sm.PreAS})
    V->resize(NS + 1);
  // The running sums, segment by segment, in passes of a few sums each (one
  // pass held more sums than x86-64's vector registers, beside the loads):
  // the costs and the backward; the activations; the launches; the totals.
  double *P0 = Sm.Pre[0].data(), *P1 = Sm.Pre[1].data(), *P2 = Sm.Pre[2].data();
  double *PB = Sm.PreB.data();
  P0[0] = P1[0] = P2[0] = PB[0] = 0;
  double Pre0 = 0, Pre1 = 0, Pre2 = 0, PreBw = 0;
  for (size_t S = 0; S < NS; ++S) {
    const ClassSum &X = Cls[ClassOf[S]];
    P0[S + 1] = Pre0 += X.T[0];
    P1[S + 1] = Pre1 += X.T[1];
    P2[S + 1] = Pre2 += X.T[2];
    PB[S + 1] = PreBw += X.B;
  }
  double *PA = Sm.PreA.data(), *PAS = Sm.PreAS.data();
  PA[0] = PAS[0] = 0;
  double A = 0, AS = 0;
  for (size_t S = 0; S < NS; ++S) {
    const ClassSum &X = Cls[ClassOf[S]];
    PA[S + 1] = A += X.A;
    PAS[S + 1] = AS += X.AS;
  }
  if (Dev.asyncLaunch()) {
    for (auto &L : Sm.LPre)
      L.resize(NS + 1);
    double *L0 = Sm.LPre[0].data(), *L1 = Sm.LPre[1].data(), *L2 = Sm.LPre[2].data();
    L0[0] = L1[0] = L2[0] = 0;
    double La0 = 0, La1 = 0, La2 = 0;
    for (size_t S = 0; S < NS; ++S) {
      const ClassSum &X = Cls[ClassOf[S]];
      L0[S + 1] = La0 += X.L[0];
      L1[S + 1] = La1 += X.L[1];
      L2[S + 1] = La2 += X.L[2];
    }
  }
  double TotBwd = 0, TotTP = 0, Rec1 = 0, Rec2 = 0, Flops = 0, M0 = 0, M1 = 0, M2 = 0;
  for (size_t S = 0; S < NS; ++S) {
    const ClassSum &X = Cls[ClassOf[S]];
    TotBwd += X.Bwd;
    TotTP += X.TP;
    Rec1 += X.Rec[1];
    Rec2 += X.Rec[2];
    Flops += X.Flops;
    M0 += X.Matrix[0];
    M1 += X.Matrix[1];
    M2 += X.Matrix[2];
  }
  Sm.TotBwd = TotBwd;
  Sm.TotTP = TotTP;
  Sm.TotRec[0] = 0;
  Sm.TotRec[1] = Rec1;
  Sm.TotRec[2] = Rec2;
  Sm.ModelFlops = Flops;
  Sm.MatrixFlops[0] = M0;
  Sm.MatrixFlops[1] = M1;
  Sm.MatrixFlops[2] = M2;
  for (int R = 0; R < 3; ++R)
    Sm.Bounded[R] = G.TermsFinite && Sm.Pre[R][NS] <= std::numeric_limits<double>::max();
  return Sm;
}

} // namespace ridge::plan
