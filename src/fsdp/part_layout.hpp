// SPDX-License-Identifier: MIT
// The run's layout of every unit as parts (DESIGN.md, "Parallel layout"): the tensors of one
// placement (TensorSpec::part) side by side in a flat buffer of their own, padded under the
// padding rule of that placement's groups (config/run_setup.hpp), and the parts one after the
// other in the unit's gathered buffer. The engine shards, gathers, reduces, checkpoints and
// offloads each part over its own groups; the planner replays the same description. A unit with
// one part is laid out exactly as the architecture lists it (every offset unchanged).
#pragma once
#include <cstdint>
#include <vector>

#include "config/run_setup.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

struct UnitPart {
  int placement = 0;
  std::int64_t base = 0;    // first element in the unit's flat (gathered) buffer
  std::int64_t numel = 0;   // real parameters
  std::int64_t padded = 0;  // numel under the placement's padding rule
  int shard_group = 1;      // ranks one copy is sharded over (RunSetup::part_shard_group)
  int replicate_group = 1;  // copies
  std::int64_t shard() const { return padded / shard_group; }
};

struct RunLayout {
  // Per unit: the tensors at their offsets in the flat buffer of all parts (what the model
  // reads), the unit's parts in placement order, and each part's tensors at offsets within the
  // part (what a checkpoint slices).
  std::vector<UnitLayout> units;
  std::vector<std::vector<UnitPart>> parts;
  std::vector<std::vector<UnitLayout>> part_units;
  // The flat buffer of unit u (all parts, padded) and this rank's shard of it (all parts).
  std::int64_t padded(int u) const;
  std::int64_t shard(int u) const;
};

RunLayout place_units(const RunSetup& s, const std::vector<UnitLayout>& units);

// Where rank `rank` of the world sits in placement p's groups: its position in the part's shard
// group (the slice of the part it owns) and in the part's replicate group (ordered by world
// rank). Ranks r with the same r / shard_group() share a shard group; inside it a part is
// sharded over consecutive positions.
struct PartRank {
  int position = 0, replica = 0;
};
PartRank part_rank(const RunSetup& s, int p, int rank);

}  // namespace fsdp
