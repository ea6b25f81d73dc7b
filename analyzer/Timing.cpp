//===- Timing.cpp - Wall time per loader phase, pass and analysis ---------===//
#include "analyzer/Timing.h"

using namespace ridge;

Timing::Timing(bool Enabled) {
  if (Enabled)
    Group = std::make_unique<llvm::TimerGroup>("ridge", "ridge phase, pass and analysis timing");
}

Timing::~Timing() {
  Timers.clear(); // timers report into the group before it prints
  Group.reset();
}

Timing::Scope::Scope(Timing *T, llvm::StringRef Name) {
  if (!T || !T->Group)
    return;
  auto &Slot = T->Timers[Name];
  if (!Slot)
    Slot = std::make_unique<llvm::Timer>(Name, Name, *T->Group);
  Tm = Slot.get();
  Owner = T;
  // A phase that re-enters itself (recursion) keeps one running timer.
  if (Tm->isRunning()) {
    Tm = nullptr;
    return;
  }
  if (!T->Open.empty())
    T->Open.back()->stopTimer();
  T->Open.push_back(Tm);
  Tm->startTimer();
}

Timing::Scope::~Scope() {
  if (!Tm)
    return;
  Tm->stopTimer();
  Owner->Open.pop_back();
  if (!Owner->Open.empty())
    Owner->Open.back()->startTimer();
}

std::optional<double> Timing::wallSeconds(llvm::StringRef Name) const {
  auto It = Timers.find(Name);
  if (It == Timers.end())
    return std::nullopt;
  return It->second->getTotalTime().getWallTime();
}
