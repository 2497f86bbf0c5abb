// SPDX-License-Identifier: MIT
#include "fsdp/gather_pipeline.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/check.hpp"

namespace fsdp {

GatherPipeline::GatherPipeline(std::vector<ShardedUnit>& units, comm::Communicator& shard_comm,
                               MemoryTracker& tracker, Trace& trace, int depth, bool sharded,
                               CommTimes& times, ParamWidener* widener)
    : units_(units),
      comm_(shard_comm),
      tracker_(tracker),
      trace_(trace),
      depth_(depth),
      sharded_(sharded),
      times_(times),
      widener_(widener) {
  for (const auto& su : units_) largest_ = std::max(largest_, su.padded);
}

void GatherPipeline::begin(std::vector<int> schedule) {
  schedule_ = std::move(schedule);
  next_issue_ = 0;
}

// Test-only fault injection: FSDP_TEST_SKIP_GATHER=<unit>@<world rank> makes that rank skip the
// unit's first all-gather, as a rank with diverging control flow would (debug.check_collectives
// must catch it).
static bool skip_for_test(const std::string& unit) {
  static const char* spec = std::getenv("FSDP_TEST_SKIP_GATHER");
  static bool used = false;
  if (!spec || used) return false;
  const std::string s(spec);
  const auto at = s.find('@');
  if (at == std::string::npos || s.substr(0, at) != unit ||
      std::atoi(s.c_str() + at + 1) != world_rank())
    return false;
  used = true;
  return true;
}

void GatherPipeline::issue(int u) {
  ShardedUnit& su = units_[u];
  if (su.gathered.allocated()) return;  // already gathered or in flight
  const bool bf16 = widener_ != nullptr;
  su.gathered = TrackedBuffer(tracker_, su.layout->name + "::gathered", su.padded,
                              MemCategory::GatheredParams, MemSpace::Device,
                              bf16 ? Dtype::BF16 : Dtype::F32, Fill::None);
  if (skip_for_test(su.layout->name)) return;
  FSDP_COMM_SITE("all_gather " + su.layout->name);
  // bf16: the cast of this rank's shard goes straight into its block, gathered in place.
  const Bf16Vec own(su.gathered.bf16().data() + su.shard_begin, bf16 ? su.shard : 0);
  if (bf16) cast_to_bf16(su.params.cvec(), own);
  Kokkos::fence();  // the shard must be final before the collective reads it
  // A CPU transport may move the data inside the issue call (and wait there for late peers):
  // that time is communication the compute did not overlap.
  const double t0 = now_s();
  if (bf16)
    su.gather = comm_.iall_gather(ConstBf16Vec(own.data(), su.shard), su.gathered.bf16());
  else
    su.gather = comm_.iall_gather(su.params.cvec(), su.gathered.vec());
  times_.exposed_s += now_s() - t0;
  times_.gather_bytes += double(su.gather.bytes());
  su.gather_in_flight = true;
}

UnitParams GatherPipeline::acquire(int stage) {
  const int u = schedule_[stage];
  ShardedUnit& su = units_[u];
  if (!sharded_) {
    const ConstVec full(su.params.data(), su.padded);
    if (widener_) return UnitParams::rounded(full, *su.layout, *widener_);
    return full;
  }
  if (next_issue_ <= stage) {
    issue(u);
    next_issue_ = stage + 1;
  }
  if (su.gather_in_flight) {
    const double t0 = now_s();
    su.gather.wait();
    const double t1 = now_s();
    su.gather_in_flight = false;
    times_.exposed_s += t1 - t0;
    times_.total_s += su.gather.completion_time() - su.gather.issue_time();
    if (trace_.enabled()) trace_.add("wait all_gather " + su.layout->name, "wait", t0, t1, 0);
    if (trace_.enabled())
      trace_.add("all_gather " + su.layout->name, "comm", su.gather.issue_time(),
                 su.gather.completion_time(), 1);
  }
  const int last = std::min<int>(stage + depth_, int(schedule_.size()) - 1);
  for (; next_issue_ <= last; ++next_issue_) issue(schedule_[next_issue_]);
  // Small units (ln_f, a small embedding) would otherwise use up the depth and leave the next
  // large unit's gather no compute to hide behind: keep issuing while the gathered window stays
  // within (k + 1) of the largest unit, the bound the depth promises anyway.
  if (depth_ > 0)
    for (; next_issue_ < int(schedule_.size()); ++next_issue_) {
      const ShardedUnit& next = units_[schedule_[next_issue_]];
      if (!next.gathered.allocated() &&
          window_elements() + next.padded > std::int64_t(depth_ + 1) * largest_)
        break;
      issue(schedule_[next_issue_]);
    }
  if (widener_) return UnitParams::from_bf16(su.gathered.cbf16(), *su.layout, *widener_);
  return ConstVec(su.gathered.data(), su.padded);
}

bool GatherPipeline::needed_soon(int stage) const {
  for (int s = stage + 1; s < next_issue_; ++s)
    if (schedule_[s] == schedule_[stage]) return true;
  return false;
}

void GatherPipeline::release(int stage, bool keep) {
  if (!sharded_ || keep || needed_soon(stage)) return;
  units_[schedule_[stage]].gathered.reset();
}

void GatherPipeline::finish() {
  for (auto& su : units_) {
    if (su.gather_in_flight) {
      su.gather.wait();
      su.gather_in_flight = false;
    }
    su.gathered.reset();
  }
}

std::vector<int> GatherPipeline::first_gathers(const std::vector<int>& next) const {
  // acquire(0) with nothing gathered: stage 0, stages up to the depth, then more while the
  // window stays within k + 1 largest units.
  std::vector<int> units;
  if (!sharded_) return units;
  std::int64_t window = 0;
  for (int stage = 0; stage < int(next.size()); ++stage) {
    const int u = next[std::size_t(stage)];
    if (std::find(units.begin(), units.end(), u) != units.end()) continue;
    if (stage > depth_ && (depth_ == 0 || window + units_[u].padded >
                                              std::int64_t(depth_ + 1) * largest_))
      break;
    units.push_back(u);
    window += units_[u].padded;
  }
  return units;
}

std::int64_t GatherPipeline::window_elements() const {
  std::int64_t n = 0;
  for (const auto& su : units_) n += su.gathered.allocated() ? su.padded : 0;
  return n;
}

int GatherPipeline::gathered_units() const {
  int n = 0;
  for (const auto& su : units_) n += su.gathered.allocated() ? 1 : 0;
  return n;
}

}  // namespace fsdp
