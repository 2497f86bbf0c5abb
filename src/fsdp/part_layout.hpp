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

// A part divided by expert parallelism (model/placement.hpp: slices > 1) is stored whole (padded:
// every slice, each padded alike) but gathered and reduced one slice at a time: its region of the
// unit's flat buffer is flat() = padded / slices elements, slice j's on the ranks computing it.
struct UnitPart {
  int placement = 0;
  std::int64_t base = 0;    // first element in the unit's flat (gathered) buffer
  std::int64_t store = 0;   // first element in the unit's whole (stored) buffer
  std::int64_t numel = 0;   // real parameters
  std::int64_t padded = 0;  // numel under the placement's padding rule
  int slices = 1;           // expert parallelism's P where the part is divided
  int shard_group = 1;      // ranks one copy (of a slice) is sharded over (RunSetup::part_shard_group)
  int replicate_group = 1;  // copies
  // Trained, or frozen (an adapter run's base): no gradient, reduction or optimizer state. A
  // unit's frozen parts come before its trained ones.
  bool trainable = true;
  std::int64_t flat() const { return padded / slices; }
  std::int64_t shard() const { return flat() / shard_group; }
};

struct RunLayout {
  // Per unit: the tensors at their offsets in the flat buffer of all parts (what the model
  // reads), the unit's parts in placement order, and each part's tensors at offsets within the
  // part (what a checkpoint slices).
  // A divided part's tensors share their slice's offsets in `units` (each rank reads its own
  // slice's experts there); `stored` lists every tensor at its place in the whole buffer.
  std::vector<UnitLayout> units;
  std::vector<std::vector<UnitPart>> parts;
  std::vector<std::vector<UnitLayout>> part_units;
  std::vector<UnitLayout> stored;
  // The flat buffer of unit u (all parts, padded; a divided part's one slice), the whole buffer
  // (every slice), and this rank's shard of it (all parts).
  std::int64_t padded(int u) const;
  std::int64_t whole(int u) const;
  std::int64_t shard(int u) const;
};

RunLayout place_units(const RunSetup& s, const std::vector<UnitLayout>& units);

// Where rank `rank` of the world sits in placement p's groups: its position in the part's shard
// group (the slice of the part it owns) and in the part's replicate group (ordered by world
// rank). Ranks r with the same r / shard_group() share a shard group; inside it a part is
// sharded over consecutive positions. A divided part: `position` is the piece of the whole part
// the rank stores ((q % P) S/P + q / P at shard-group position q), `gather` its place in its
// slice's group (q / P), `slice` its slice (q % P).
struct PartRank {
  int position = 0, replica = 0, gather = 0, slice = 0;
};
PartRank part_rank(const RunSetup& s, int p, int rank);

}  // namespace fsdp
