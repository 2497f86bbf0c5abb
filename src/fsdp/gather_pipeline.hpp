// SPDX-License-Identifier: MIT
// The all-gather prefetch pipeline: the window policy of fsdp/gather_window.hpp run on the
// units' buffers, one all-gather per part over the part's shard group (sharded_unit.hpp). A schedule lists, stage by stage, which
// unit the compute needs; all_gather(i) waits for stage i's unit and issues the next gathers;
// release(i) frees it unless an already issued later stage needs it. The window never exceeds
// k+1 largest units (the prefetch depth is also the rate limiter).
#pragma once
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "core/offload_file.hpp"
#include "fsdp/gather_window.hpp"
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
  GatherPipeline(std::vector<ShardedUnit>& units, MemoryTracker& tracker, Trace& trace,
                 int depth, bool sharded, CommTimes& times, ParamWidener* widener = nullptr);
  ~GatherPipeline();  // waits for the disk reads still in flight into its buffers

  void begin(std::vector<int> schedule);
  // Stage i's unit, gathered (waiting for its all-gather); issues the next stages' gathers.
  UnitParams all_gather(int stage);
  void release(int stage, bool keep = false);
  void finish();  // frees whatever is still gathered (kept across forward, or prefetched)
  // Across a step boundary: the units the first all_gather() of `next` would gather, in stage
  // order. The optimizer issues each one's gather (all_gather_next_step) as soon as it has
  // updated the unit, so the next step's first gathers overlap the rest of the optimizer.
  std::vector<int> first_gathers(const std::vector<int>& next) const;
  void all_gather_next_step(int unit) { issue(unit); }
  int gathered_units() const;

 private:
  void issue(int unit);

  // Parameter shards on disk (fsdp.offload = nvme, offload.params): each is read into a slot
  // ahead of its gather, the next depth + 1 units in the schedule's order beyond the gathers
  // already issued, and the slot is held until that gather completes (the copy out of it may
  // be asynchronous). 2 (depth + 1) slots of the largest shard; a window of many small units may
  // add a few more.
  struct ReadSlot {
    enum State { Free, Reading, Held } state = Free;
    int unit = -1;
    OffloadFile::Ticket ticket = 0;
    IoBuffer buf;
  };
  ReadSlot* find_slot(ReadSlot::State state, int unit = -1);  // unit -1: any
  void post_read(ReadSlot& slot, int unit);
  ReadSlot& slot_for(int unit);  // the slot with unit's read, waited for (read now if none)
  void read_ahead();
  void release_slot(int unit);   // its gather completed
  void drain_reads();

  std::vector<ShardedUnit>& units_;
  MemoryTracker& tracker_;
  Trace& trace_;
  int depth_;
  bool sharded_;
  CommTimes& times_;
  ParamWidener* widener_;
  GatherWindow window_;
  std::vector<ReadSlot> slots_;  // empty unless the parameter shards are on disk
  std::int64_t slot_floats_ = 0;
};

}  // namespace fsdp
