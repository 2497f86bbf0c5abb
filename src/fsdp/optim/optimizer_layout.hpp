// SPDX-License-Identifier: MIT
// Which update rule owns each element of a rank's shard of a unit, and where its optimizer state
// lies. The shard (its slice of every part, fsdp/sharded_unit.hpp) is cut into segments, each a
// run of one tensor's elements: AdamW's (two moments) or, under train.optimizer = muon, a hidden
// matrix's (Muon's momentum only). The first state buffer (exp_avg, or Muon's momentum) holds an
// element at its own shard position; the second (exp_avg_sq) holds AdamW's elements only,
// packed in shard order, when `packed` (Muon in memory: the matrices' half of AdamW's state is
// never allocated), else at their shard positions too. The engine, the checkpoint and the
// planner all read this one description.
#pragma once
#include <cstdint>
#include <vector>

#include "fsdp/part_layout.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

struct StateSegment {
  const TensorSpec* tensor = nullptr;  // at its offset within its part (RunLayout::part_units)
  int part = 0;                        // the part's index in the unit
  std::int64_t at = 0;  // first element in the trained range of the rank's shard buffers
  std::int64_t n = 0;
  std::int64_t first = 0;  // its first element within the tensor
  bool muon = false;
  std::int64_t sq_at = 0;  // AdamW: its first second moment in exp_avg_sq
};

struct UnitOptimizerLayout {
  std::vector<StateSegment> segments;  // in shard order
  std::int64_t shard = 0;              // the trained range's length (padding included)
  std::int64_t sq_size = 0;            // exp_avg_sq's length
  std::int64_t muon_elements = 0;      // of the shard
  bool packed() const { return sq_size < shard; }
};

// Unit u of `layout` as the rank at `positions[k]` of part k's shard group holds it.
UnitOptimizerLayout optimizer_layout(const RunLayout& layout, int u,
                                     const std::vector<int>& positions, bool muon, bool packed);

}  // namespace fsdp
