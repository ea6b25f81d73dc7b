//===- Timing.cpp - Wall time per loader phase, pass and analysis ---------===//
#include "analyzer/Timing.h"
#include "analyzer/symbolic/EngineProfile.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Timer.h"
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <unistd.h>

using namespace ridge;

namespace {
/// Phases the sampler can tell apart; a phase opened after these keeps its
/// whole time (ridge opens about 20).
constexpr unsigned MaxSampled = 64;

Timing::Times now() {
  llvm::TimeRecord R = llvm::TimeRecord::getCurrentTime(/*Start=*/true);
  return {R.getWallTime(), R.getUserTime(), R.getSystemTime()};
}
} // namespace

Timing::Times &Timing::Times::operator+=(const Times &O) {
  Wall += O.Wall;
  User += O.User;
  System += O.System;
  return *this;
}

struct Timing::Phase {
  std::string Name;
  Times Total, Since;
  bool Running = false;
};

/// The counts the tick adds to, and the POSIX timer that ticks: a
/// CLOCK_MONOTONIC timer whose signal goes to the thread that made it (the
/// main thread), so the tick reads that thread's engine mark.
class Timing::Sampler {
public:
  explicit Sampler(bool WithTimer) {
    if (!WithTimer) {
      Why = "no timer asked for";
      return;
    }
    struct sigaction SA = {};
    SA.sa_handler = onTick;
    SA.sa_flags = SA_RESTART; // a read or a wait the tick interrupts goes on
    sigemptyset(&SA.sa_mask);
    Sampler *None = nullptr;
    if (!Active.compare_exchange_strong(None, this)) {
      Why = "another timing table is sampling";
      return;
    }
    struct sigevent SE = {};
    SE.sigev_notify = SIGEV_THREAD_ID;
    SE.sigev_signo = SIGPROF;
    SE._sigev_un._tid = gettid();
    struct itimerspec Every = {};
    Every.it_interval.tv_nsec = Every.it_value.tv_nsec = SampleMicros * 1000;
    if (sigaction(SIGPROF, &SA, nullptr) != 0 || timer_create(CLOCK_MONOTONIC, &SE, &Id) != 0) {
      Why = std::string("no timer: ") + std::strerror(errno);
      Active = nullptr;
      return;
    }
    Armed = Ticked = true;
    if (timer_settime(Id, 0, &Every, nullptr) != 0) {
      Why = std::string("no timer: ") + std::strerror(errno);
      stop();
      Ticked = false;
    }
  }
  ~Sampler() { stop(); }

  /// Stops the ticks. The handler stays installed (a tick already pending
  /// then finds no sampler and does nothing, where the default action of
  /// SIGPROF would end the process).
  void stop() {
    if (!Armed)
      return;
    Active = nullptr;
    timer_delete(Id);
    Armed = false;
  }

  void tick() {
    std::sig_atomic_t P = Current;
    if (P < 0 || P >= std::sig_atomic_t(MaxSampled))
      return;
    All[P].fetch_add(1, std::memory_order_relaxed);
    if (sym::insideEngine())
      InEngine[P].fetch_add(1, std::memory_order_relaxed);
  }

  /// The running phase's index (-1: none); written by the main thread,
  /// read by its tick.
  volatile std::sig_atomic_t Current = -1;
  std::array<std::atomic<uint64_t>, MaxSampled> All{}, InEngine{};
  /// Why there is no timer, when there is none (the table says).
  std::string Why;
  /// Whether the timer ticked this run (its ticks are what samples()
  /// holds).
  bool timed() const { return Ticked; }

private:
  static std::atomic<Sampler *> Active;
  timer_t Id{};
  bool Armed = false, Ticked = false;
  static void onTick(int) {
    int SavedErrno = errno;
    if (Sampler *S = Active.load(std::memory_order_relaxed))
      S->tick();
    errno = SavedErrno;
  }
};

std::atomic<Timing::Sampler *> Timing::Sampler::Active{nullptr};

Timing::Timing(bool Enabled, bool SampleTimer) : Enabled(Enabled) {
  if (!Enabled)
    return;
  // Before any thread starts: the engine's entry points mark their thread.
  sym::profile::Enabled = true;
  Sampling = std::make_unique<Sampler>(SampleTimer);
}

Timing::~Timing() {
  if (!Enabled)
    return;
  Sampling->stop();
  sym::profile::Enabled = false;
  std::vector<std::pair<std::string, Times>> Own;
  for (const auto &P : Phases)
    Own.emplace_back(P->Name, P->Total);
  std::vector<Samples> S = samples();
  uint64_t N = 0, E = 0;
  for (const Samples &X : S) {
    N += X.All;
    E += X.InEngine;
  }
  std::string Note;
  llvm::raw_string_ostream NS(Note);
  NS << "  " << EngineRow << ": running at " << E << " of " << N << " ticks (one every "
     << SampleMicros << " us of wall time, on the main thread); each row above gave up the "
     << "share of its ticks that found the engine running";
  if (!Sampling->timed())
    NS << " (not sampled: " << Sampling->Why << ")";
  print(rows(Own, S), Note, llvm::errs());
}

void Timing::start(unsigned P) {
  Phases[P]->Since = now();
  Phases[P]->Running = true;
  if (P < MaxSampled)
    Sampling->Current = std::sig_atomic_t(P);
}

void Timing::stop(unsigned P) {
  Sampling->Current = -1;
  Times T = now();
  Phase &Ph = *Phases[P];
  Ph.Total += Times{T.Wall - Ph.Since.Wall, T.User - Ph.Since.User, T.System - Ph.Since.System};
  Ph.Running = false;
}

Timing::Scope::Scope(Timing *T, llvm::StringRef Name) {
  if (!T || !T->Enabled)
    return;
  auto [It, New] = T->Index.try_emplace(Name, T->Phases.size());
  if (New) {
    T->Phases.push_back(std::make_unique<Phase>());
    T->Phases.back()->Name = Name.str();
  }
  unsigned P = It->second;
  // A phase that re-enters itself (recursion) keeps one running timer.
  if (T->Phases[P]->Running)
    return;
  Owner = T;
  if (!T->Open.empty())
    T->stop(T->Open.back());
  T->Open.push_back(P);
  T->start(P);
}

Timing::Scope::~Scope() {
  if (!Owner)
    return;
  Owner->stop(Owner->Open.back());
  Owner->Open.pop_back();
  if (!Owner->Open.empty())
    Owner->start(Owner->Open.back());
}

std::optional<double> Timing::wallSeconds(llvm::StringRef Name) const {
  auto It = Index.find(Name);
  if (It == Index.end())
    return std::nullopt;
  return Phases[It->second]->Total.Wall;
}

std::vector<Timing::Samples> Timing::samples() const {
  std::vector<Samples> S(Phases.size());
  if (!Sampling)
    return S;
  for (size_t P = 0; P < Phases.size() && P < MaxSampled; ++P)
    S[P] = {Sampling->All[P].load(), Sampling->InEngine[P].load()};
  return S;
}

void Timing::sampleNow() {
  if (Sampling)
    Sampling->tick();
}

std::vector<Timing::Row> Timing::rows(llvm::ArrayRef<std::pair<std::string, Times>> Phases,
                                      llvm::ArrayRef<Samples> PhaseSamples) {
  std::vector<Row> R;
  Times Engine;
  bool Seen = false;
  for (size_t P = 0; P < Phases.size(); ++P) {
    Times T = Phases[P].second;
    if (P < PhaseSamples.size() && PhaseSamples[P].All && PhaseSamples[P].InEngine) {
      double Share = double(PhaseSamples[P].InEngine) / double(PhaseSamples[P].All);
      Engine += T.scaled(Share);
      T = T.scaled(1 - Share);
      Seen = true;
    }
    R.push_back({Phases[P].first, T});
  }
  if (Seen)
    R.push_back({EngineRow, Engine});
  std::stable_sort(R.begin(), R.end(),
                   [](const Row &A, const Row &B) { return A.T.Wall > B.T.Wall; });
  return R;
}

void Timing::print(llvm::ArrayRef<Row> Rows, llvm::StringRef Note, llvm::raw_ostream &OS) {
  Times Total;
  for (const Row &R : Rows)
    Total += R.T;
  auto Val = [&](double V, double Of) {
    if (Of < 1e-7)
      OS << "        -----     ";
    else
      OS << llvm::format("  %7.4f (%5.1f%%)", V, V * 100 / Of);
  };
  auto Line = [&](const Times &T, llvm::StringRef Name) {
    if (Total.User)
      Val(T.User, Total.User);
    if (Total.System)
      Val(T.System, Total.System);
    if (Total.User + Total.System)
      Val(T.User + T.System, Total.User + Total.System);
    Val(T.Wall, Total.Wall);
    OS << "  " << Name << '\n';
  };
  llvm::StringRef Title = "ridge phase, pass and analysis timing";
  OS << "===" << std::string(73, '-') << "===\n";
  OS.indent((80 - Title.size()) / 2) << Title << '\n';
  OS << "===" << std::string(73, '-') << "===\n";
  OS << llvm::format("  Total Execution Time: %5.4f seconds (%5.4f wall clock)\n\n",
                     Total.User + Total.System, Total.Wall);
  if (Total.User)
    OS << "   ---User Time---";
  if (Total.System)
    OS << "   --System Time--";
  if (Total.User + Total.System)
    OS << "   --User+System--";
  OS << "   ---Wall Time---  --- Name ---\n";
  for (const Row &R : Rows)
    Line(R.T, R.Name);
  Line(Total, "Total");
  OS << '\n' << Note << "\n\n";
  OS.flush();
}
