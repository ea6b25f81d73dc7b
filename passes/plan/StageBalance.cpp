//===- StageBalance.cpp - The planner: pipeline stages balanced by time ---===//
#include "passes/plan/PlannerImpl.h"

using namespace ridge;

namespace ridge::plan {

/// The largest single segment of a prefix sum (the smallest feasible bound).
double maxSegment(const std::vector<double> &Prefix) {
  double Lo = 0;
  for (size_t I = 0; I + 1 < Prefix.size(); ++I)
    Lo = std::max(Lo, Prefix[I + 1] - Prefix[I]);
  return Lo;
}

/// The smallest bound in [Lo, Hi] (bisection) for which a greedy fill packs
/// the N positions into at most Chunks ranges, and that fill's range ends,
/// padded with N to Chunks entries. The fill starts each range where the
/// last ended; NextEnd(Start, K, Bound) gives range K's end (> Start).
template <typename EndFn>
static std::vector<size_t> bisectBound(double Lo, double Hi, size_t N, unsigned Chunks,
                                EndFn &&NextEnd) {
  auto Fill = [&](double Bound, std::vector<size_t> *Cuts) {
    size_t Start = 0;
    unsigned Used = 0;
    while (Start < N) {
      if (++Used > Chunks)
        return false;
      size_t End = NextEnd(Start, Used - 1, Bound);
      if (Cuts)
        Cuts->push_back(End);
      Start = End;
    }
    return true;
  };
  for (int It = 0; It < 40 && Hi - Lo > 1e-12 * std::max(1.0, Hi); ++It) {
    double Mid = (Lo + Hi) / 2;
    if (Fill(Mid, nullptr))
      Hi = Mid;
    else
      Lo = Mid;
  }
  std::vector<size_t> Ends;
  Fill(Hi, &Ends);
  while (Ends.size() < Chunks) // fewer segments than chunks: empty chunks
    Ends.push_back(N);
  return Ends;
}

/// The last end E > Start with Prefix[E] - Prefix[Start] <= Bound (Start
/// when even one position passes it).
static size_t segmentEnd(const std::vector<double> &Prefix, size_t Start, double Bound) {
  return size_t(std::upper_bound(Prefix.begin() + Start + 1, Prefix.end(),
                                 Prefix[Start] + Bound) -
                Prefix.begin() - 1);
}

/// Segment ends (over the collapsed prefix) as positions: segment k ends
/// at Allowed[k].
static std::vector<size_t> toPositions(const std::vector<size_t> &SegEnds,
                                       const std::vector<size_t> &Allowed) {
  std::vector<size_t> Ends;
  for (size_t E : SegEnds)
    Ends.push_back(E == 0 ? 0 : Allowed[std::min(E, Allowed.size()) - 1]);
  return Ends;
}

/// Splits positions [0, N) into Chunks contiguous ranges minimizing the
/// largest sum (binary search on the bound, greedy fill over prefix sums).
static std::vector<size_t> balanceSegments(const std::vector<double> &Prefix, unsigned Chunks) {
  size_t N = Prefix.size() - 1;
  return bisectBound(maxSegment(Prefix), Prefix.back(), N, Chunks,
                     [&](size_t Start, unsigned, double Bound) {
                       return std::max(segmentEnd(Prefix, Start, Bound), Start + 1);
                     });
}

/// balanceSegments() for a non-decreasing Prefix (non-negative costs) whose
/// largest single segment is MaxSeg: the same bisection and greedy fills,
/// each fill's search for a chunk's end starting from where the previous
/// fill's same chunk ended (in a sorted array the first element above a
/// value is the same however it is found).
static std::vector<size_t> balanceSorted(const std::vector<double> &Prefix, unsigned Chunks,
                                  double MaxSeg) {
  size_t N = Prefix.size() - 1;
  const double *S = Prefix.data();
  std::vector<size_t> Hint(Chunks);
  for (unsigned K = 0; K < Chunks; ++K)
    Hint[K] = size_t(double(N) * (K + 1) / Chunks);
  // The first index in [From, N] whose prefix exceeds X (N + 1 if none).
  auto UpperBound = [&](size_t From, size_t Guess, double X) -> size_t {
    size_t G = std::min(std::max(Guess, From), N);
    if (S[G] <= X) {
      size_t L = G, Step = 1, H;
      for (;;) {
        if (L + Step > N) {
          H = N + 1;
          break;
        }
        if (S[L + Step] > X) {
          H = L + Step;
          break;
        }
        L += Step;
        Step *= 2;
      }
      return std::upper_bound(S + L + 1, S + H, X) - S;
    }
    size_t H = G, Step = 1, L;
    for (;;) {
      if (H < From + Step) {
        L = From;
        break;
      }
      if (S[H - Step] <= X) {
        L = H - Step + 1;
        break;
      }
      H -= Step;
      Step *= 2;
    }
    return std::upper_bound(S + L, S + H, X) - S;
  };
  return bisectBound(MaxSeg, Prefix.back(), N, Chunks,
                     [&](size_t Start, unsigned K, double Bound) {
                       size_t I = UpperBound(Start + 1, Hint[K], S[Start] + Bound);
                       Hint[K] = I;
                       return std::max(I - 1, Start + 1);
                     });
}

/// Boundaries may only fall where Allowed says (Allowed[N] must be true);
/// positions between two allowed boundaries move together. Seg is the
/// prefix sum collapsed to the allowed boundaries: segment k ends at
/// Allowed[k], Seg[k + 1] = Prefix[Allowed[k]].
/// Sorted: Seg is non-decreasing and its largest segment is MaxSeg.
std::vector<size_t> balance(const std::vector<double> &Seg, unsigned Chunks,
                            const std::vector<size_t> &Allowed, bool Sorted, double MaxSeg) {
  return toPositions(Sorted ? balanceSorted(Seg, Chunks, MaxSeg) : balanceSegments(Seg, Chunks),
                     Allowed);
}

std::vector<size_t> balanceStream(const std::vector<double> &Seg,
                                  const std::vector<double> &Host, unsigned Chunks,
                                  const std::vector<size_t> &Allowed) {
  // A chunk's stream takes max(device time, host time) (laws.md: the host
  // and the device pipeline); the smallest bound that holds both sums of
  // every chunk, by the same bisection: a greedy fill ends each chunk
  // where either sum would pass the bound.
  size_t N = Seg.size() - 1;
  std::vector<size_t> SegEnds = bisectBound(
      std::max(maxSegment(Seg), maxSegment(Host)), std::max(Seg.back(), Host.back()), N,
      Chunks, [&](size_t Start, unsigned, double Bound) {
        return std::max(std::min(segmentEnd(Seg, Start, Bound), segmentEnd(Host, Start, Bound)),
                        Start + 1);
      });
  return toPositions(SegEnds, Allowed);
}

} // namespace ridge::plan
