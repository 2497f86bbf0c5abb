// SPDX-License-Identifier: MIT
#include "fsdp/part_layout.hpp"

namespace fsdp {

std::int64_t RunLayout::padded(int u) const {
  std::int64_t n = 0;
  for (const UnitPart& p : parts[std::size_t(u)]) n += p.padded;
  return n;
}

std::int64_t RunLayout::shard(int u) const {
  std::int64_t n = 0;
  for (const UnitPart& p : parts[std::size_t(u)]) n += p.shard();
  return n;
}

RunLayout place_units(const RunSetup& s, const std::vector<UnitLayout>& units) {
  RunLayout out;
  const int P = int(s.placements.size());
  for (const UnitLayout& unit : units) {
    UnitLayout placed = unit;
    placed.tensors.clear();
    std::vector<UnitPart> parts;
    std::vector<UnitLayout> part_units;
    std::int64_t base = 0;
    for (int p = 0; p < P; ++p) {
      UnitLayout part = unit;
      part.tensors.clear();
      part.numel = 0;
      for (const TensorSpec& t : unit.tensors) {
        if (t.part != p) continue;
        TensorSpec local = t;
        local.offset = part.numel;
        part.numel += t.numel;
        part.tensors.push_back(local);
        local.offset += base;
        placed.tensors.push_back(local);
      }
      // A unit keeps its one part even when empty; other placements only where used.
      if (part.tensors.empty() && !(p == 0 && parts.empty() && unit.tensors.empty())) continue;
      UnitPart up;
      up.placement = p;
      up.base = base;
      up.numel = part.numel;
      up.padded = s.padded_numel(part.numel, p);
      up.shard_group = s.part_shard_group(p);
      up.replicate_group = s.part_replicate_group(p);
      base += up.padded;
      parts.push_back(up);
      part_units.push_back(std::move(part));
    }
    for (const TensorSpec& t : unit.tensors)
      if (t.part < 0 || t.part >= P)
        throw std::invalid_argument("tensor " + t.name + ": placement " + std::to_string(t.part) +
                                    " of an architecture with " + std::to_string(P));
    out.units.push_back(std::move(placed));
    out.parts.push_back(std::move(parts));
    out.part_units.push_back(std::move(part_units));
  }
  return out;
}

PartRank part_rank(const RunSetup& s, int p, int rank) {
  const int S = s.shard_group(), Sp = s.part_shard_group(p), k = S / Sp;
  const int in_group = rank % S, r = rank / S;
  // Members of one part replicate group: the same position, ordered by world rank, which is
  // (replicate index, slice of the shard group) in lexicographic order.
  return {in_group % Sp, r * k + in_group / Sp};
}

}  // namespace fsdp
