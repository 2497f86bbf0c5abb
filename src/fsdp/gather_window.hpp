// SPDX-License-Identifier: MIT
// The all-gather pipeline's window policy, on its own and pure (no buffers, no communication):
// which unit's gather to issue when, and when a gathered unit may be freed. The engine's
// GatherPipeline and the planner's step replay both run this object, so their windows cannot
// drift apart. For a schedule of stages (the unit each needs) and prefetch depth k: when stage
// i is needed its own gather is issued if it was not yet, then the gathers of stages up to
// i + k; past that, more while the gathered units total at most k + 1 largest units (small
// units such as a final norm would otherwise use up the depth). A unit is freed after its stage unless
// an already issued later stage needs it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace fsdp {

class GatherWindow {
 public:
  // padded: each unit's padded elements; depth: fsdp.prefetch.
  GatherWindow(std::vector<std::int64_t> padded, int depth)
      : padded_(std::move(padded)), depth_(depth) {
    for (std::int64_t p : padded_) largest_ = std::max(largest_, p);
  }

  void begin(std::vector<int> schedule) {
    schedule_ = std::move(schedule);
    next_ = 0;
  }
  int unit(int stage) const { return schedule_[std::size_t(stage)]; }
  int stages() const { return int(schedule_.size()); }
  int issued() const { return next_; }  // stages whose gathers were issued: [0, issued())

  // Stage `stage` is needed: whether its own gather is still to be issued (the caller issues it).
  bool claim(int stage) {
    if (next_ > stage) return false;
    next_ = stage + 1;
    return true;
  }
  // After stage's unit is ready: issue(u) for each gather to start now, in order.
  // is_gathered(u): the unit is gathered or in flight.
  template <class IsGathered, class Issue>
  void prefetch(int stage, IsGathered&& is_gathered, Issue&& issue) {
    const int last = std::min(stage + depth_, stages() - 1);
    for (; next_ <= last; ++next_) issue(unit(next_));
    if (depth_ == 0) return;
    for (; next_ < stages(); ++next_) {
      const int v = unit(next_);
      if (!is_gathered(v) && window(is_gathered) + padded_[std::size_t(v)] > bound()) break;
      issue(v);
    }
  }
  // Whether an already issued later stage needs stage's unit (then it stays gathered).
  bool needed_soon(int stage) const {
    for (int s = stage + 1; s < next_; ++s)
      if (unit(s) == unit(stage)) return true;
    return false;
  }
  // Across a step boundary: the units the first claim + prefetch of `next` would gather with
  // nothing gathered, in stage order (the optimizer issues them as it finishes each unit).
  std::vector<int> first_gathers(const std::vector<int>& next) const {
    std::vector<int> units;
    std::int64_t window = 0;
    for (int stage = 0; stage < int(next.size()); ++stage) {
      const int u = next[std::size_t(stage)];
      if (std::find(units.begin(), units.end(), u) != units.end()) continue;
      if (stage > depth_ && (depth_ == 0 || window + padded_[std::size_t(u)] > bound())) break;
      units.push_back(u);
      window += padded_[std::size_t(u)];
    }
    return units;
  }

 private:
  std::int64_t bound() const { return std::int64_t(depth_ + 1) * largest_; }
  template <class IsGathered>
  std::int64_t window(IsGathered&& is_gathered) const {
    std::int64_t n = 0;
    for (std::size_t u = 0; u < padded_.size(); ++u) n += is_gathered(int(u)) ? padded_[u] : 0;
    return n;
  }

  std::vector<std::int64_t> padded_;
  int depth_;
  std::int64_t largest_ = 0;
  std::vector<int> schedule_;
  int next_ = 0;  // first stage whose gather has not been issued
};

}  // namespace fsdp
