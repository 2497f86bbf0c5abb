// SPDX-License-Identifier: MIT
// The all-gather prefetch pipeline. A schedule lists, stage by stage, which unit the compute
// needs. acquire(i) waits for stage i's unit and issues the gathers of stages i+1..i+k;
// release(i) frees the unit unless an already-issued later stage needs it. Past stage i+k it
// goes on issuing while the gathered units total at most k+1 largest units, so small units do
// not use up the depth. Either way the window never exceeds k+1 largest units (the prefetch
// depth is also the rate limiter).
#pragma once
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "fsdp/sharded_unit.hpp"
#include "io/trace.hpp"
#include "model/unit_params.hpp"

namespace fsdp {

struct CommTimes {
  double exposed_s = 0.0;  // time the compute waited on communication
  double total_s = 0.0;    // issue-to-completion time of every collective
  // Full-buffer bytes (as Handle::bytes) of the parameter all-gathers and gradient reductions.
  double gather_bytes = 0.0, reduce_bytes = 0.0;
  void clear() { *this = CommTimes{}; }
};

class GatherPipeline {
 public:
  // widener: non-null under fsdp.mixed_precision = bf16. Sharded units are then gathered as
  // bf16 (a cast of the float shard) and every unit is handed out as bf16 values.
  GatherPipeline(std::vector<ShardedUnit>& units, comm::Communicator& shard_comm,
                 MemoryTracker& tracker, Trace& trace, int depth, bool sharded, CommTimes& times,
                 ParamWidener* widener = nullptr);

  void begin(std::vector<int> schedule);
  UnitParams acquire(int stage);
  void release(int stage, bool keep = false);
  void finish();  // frees whatever is still gathered (kept across forward, or prefetched)
  // Across a step boundary: the units the first acquire() of `next` would gather, in stage
  // order. The optimizer issues each one's gather (carry) as soon as it has updated the unit,
  // so the next step's first gathers overlap the rest of the optimizer.
  std::vector<int> first_gathers(const std::vector<int>& next) const;
  void carry(int unit) { issue(unit); }
  int gathered_units() const;

 private:
  void issue(int unit);
  bool needed_soon(int stage) const;
  std::int64_t window_elements() const;  // of the units gathered or in flight

  std::vector<ShardedUnit>& units_;
  comm::Communicator& comm_;
  MemoryTracker& tracker_;
  Trace& trace_;
  int depth_;
  bool sharded_;
  CommTimes& times_;
  ParamWidener* widener_;
  std::int64_t largest_ = 0;  // padded elements of the largest unit
  std::vector<int> schedule_;
  int next_issue_ = 0;  // first stage whose gather has not been issued
};

}  // namespace fsdp
