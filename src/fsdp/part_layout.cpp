// SPDX-License-Identifier: MIT
#include "fsdp/part_layout.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

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

namespace {

UnitPart make_part(const RunSetup& s, int p, std::int64_t base, std::int64_t numel) {
  UnitPart up;
  up.placement = p;
  up.base = base;
  up.numel = numel;
  up.padded = s.padded_numel(numel, p);
  up.shard_group = s.part_shard_group(p);
  up.replicate_group = s.part_replicate_group(p);
  return up;
}

}  // namespace

RunLayout place_units(const RunSetup& s, const std::vector<UnitLayout>& units) {
  RunLayout out;
  const int P = int(s.placements.size());
  for (const UnitLayout& unit : units) {
    std::vector<bool> used(std::size_t(P), false);
    for (const TensorSpec& t : unit.tensors) {
      if (t.part < 0 || t.part >= P)
        throw std::invalid_argument("tensor " + t.name + ": placement " + std::to_string(t.part) +
                                    " of an architecture with " + std::to_string(P));
      used[std::size_t(t.part)] = true;
    }
    const int n_used = int(std::count(used.begin(), used.end(), true));
    if (n_used <= 1) {  // one part: the unit exactly as the architecture lists it
      const int p = unit.tensors.empty() ? 0 : unit.tensors.front().part;
      out.units.push_back(unit);
      out.parts.push_back({make_part(s, p, 0, unit.numel)});
      out.part_units.push_back({unit});
      continue;
    }
    // Several: each placement's tensors side by side, in the order listed, parts in placement
    // order, each padded for its own groups.
    UnitLayout placed = unit;
    placed.tensors.clear();
    std::vector<UnitPart> parts;
    std::vector<UnitLayout> part_units;
    std::int64_t base = 0;
    for (int p = 0; p < P; ++p) {
      if (!used[std::size_t(p)]) continue;
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
      parts.push_back(make_part(s, p, base, part.numel));
      base += parts.back().padded;
      part_units.push_back(std::move(part));
    }
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
