// SPDX-License-Identifier: MIT
#include "fsdp/part_layout.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fsdp {

std::int64_t RunLayout::padded(int u) const {
  std::int64_t n = 0;
  for (const UnitPart& p : parts[std::size_t(u)]) n += p.flat();
  return n;
}

std::int64_t RunLayout::whole(int u) const {
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

UnitPart make_part(const RunSetup& s, int p, std::int64_t base, std::int64_t store, std::int64_t numel) {
  UnitPart up;
  up.placement = p;
  up.base = base;
  up.store = store;
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
  // A by_expert placement that is not divided joins placement 0 (model/placement.hpp).
  const auto placed_in = [&](const TensorSpec& t) { return s.part_merged(t.part) ? 0 : t.part; };
  for (const UnitLayout& unit : units) {
    std::vector<bool> used(std::size_t(P), false);
    for (const TensorSpec& t : unit.tensors) {
      if (t.part < 0 || t.part >= P)
        throw std::invalid_argument("tensor " + t.name + ": placement " + std::to_string(t.part) +
                                    " of an architecture with " + std::to_string(P));
      used[std::size_t(placed_in(t))] = true;
    }
    // Trained and frozen tensors never share a part, and frozen parts come first: a unit's
    // gradients are then one range, from its first trained part on (fsdp/sharded_unit.hpp).
    std::vector<int> trained(std::size_t(P), -1);
    for (const TensorSpec& t : unit.tensors) {
      int& k = trained[std::size_t(placed_in(t))];
      if (k >= 0 && k != int(t.trainable))
        throw std::invalid_argument("unit " + unit.name + ": tensor " + t.name + " is " +
                                    (t.trainable ? "trained" : "frozen") + " in a part that is not");
      k = int(t.trainable);
    }
    for (int p = 1; p < P; ++p)
      for (int q = 0; q < p; ++q)
        if (trained[std::size_t(q)] == 1 && trained[std::size_t(p)] == 0)
          throw std::invalid_argument("unit " + unit.name + ": a frozen part after a trained one");
    const int n_used = int(std::count(used.begin(), used.end(), true));
    if (n_used <= 1) {  // one part: the unit exactly as the architecture lists it
      const int p = unit.tensors.empty() ? 0 : placed_in(unit.tensors.front());
      out.units.push_back(unit);
      out.parts.push_back({make_part(s, p, 0, 0, unit.numel)});
      out.parts.back().back().trainable = unit.tensors.empty() || unit.tensors.front().trainable;
      if (s.part_slices(p) > 1)
        throw std::invalid_argument("unit " + unit.name + ": only divided tensors (a unit of experts alone)");
      out.part_units.push_back({unit});
      out.stored.push_back(unit);
      continue;
    }
    // Several: each placement's tensors side by side, in the order listed, parts in placement
    // order, each padded for its own groups.
    UnitLayout placed = unit, stored = unit;
    placed.tensors.clear();
    stored.tensors.clear();
    std::vector<UnitPart> parts;
    std::vector<UnitLayout> part_units;
    std::int64_t base = 0, store = 0;
    for (int p = 0; p < P; ++p) {
      if (!used[std::size_t(p)]) continue;
      UnitLayout part = unit;
      part.tensors.clear();
      part.numel = 0;
      for (const TensorSpec& t : unit.tensors)
        if (placed_in(t) == p) {
          TensorSpec local = t;
          local.offset = part.numel;
          part.numel += t.numel;
          part.tensors.push_back(local);
        }
      const int k = s.part_slices(p);
      UnitPart up = make_part(s, p, base, store, part.numel);
      up.trainable = trained[std::size_t(p)] != 0;
      if (k > 1) {
        // Divided: k slices of equally many tensors and elements, each padded alike; a tensor
        // of slice j at j * slice + its offset in the slice (stored), its slice's offset for
        // the model (placed).
        const std::size_t n = part.tensors.size(), per = n / std::size_t(k);
        const std::int64_t slice_numel = part.numel / k;
        if (n % std::size_t(k) != 0 || part.numel % k != 0)
          throw std::invalid_argument("unit " + unit.name + ": its '" + s.placements[std::size_t(p)].name +
                                      "' tensors do not divide into " + std::to_string(k) + " equal slices");
        const std::int64_t slice = s.padded_numel(slice_numel, p);
        up.slices = k;
        up.padded = slice * k;
        for (std::size_t i = 0; i < n; ++i) {
          TensorSpec& t = part.tensors[i];
          const std::int64_t j = std::int64_t(i / per), local = t.offset - j * slice_numel;
          if (local < 0 || local + t.numel > slice_numel)
            throw std::invalid_argument("unit " + unit.name + ": tensor " + t.name + " straddles the slices of its '" +
                                        s.placements[std::size_t(p)].name + "' part");
          TensorSpec at_model = t;
          at_model.offset = base + local;
          placed.tensors.push_back(at_model);
          t.offset = j * slice + local;
          TensorSpec at_store = t;
          at_store.offset += store;
          stored.tensors.push_back(at_store);
        }
      } else {
        for (const TensorSpec& t : part.tensors) {
          TensorSpec a = t;
          a.offset += base;
          placed.tensors.push_back(a);
          a.offset = t.offset + store;
          stored.tensors.push_back(a);
        }
      }
      parts.push_back(up);
      base += up.flat();
      store += up.padded;
      part_units.push_back(std::move(part));
    }
    out.units.push_back(std::move(placed));
    out.stored.push_back(std::move(stored));
    out.parts.push_back(std::move(parts));
    out.part_units.push_back(std::move(part_units));
  }
  return out;
}

PartRank part_rank(const RunSetup& s, int p, int rank) {
  const int S = s.shard_group(), in_group = rank % S, r = rank / S;
  const int k = s.part_slices(p);
  if (k > 1) {  // divided: slice q % k, position q / k in its group, piece (q % k) S/k + q / k
    const int Sp = S / k;
    return {(in_group % k) * Sp + in_group / k, r, in_group / k, in_group % k};
  }
  const int Sp = s.part_shard_group(p), split = S / Sp;
  // Members of one part replicate group: the same position, ordered by world rank, which is
  // (replicate index, slice of the shard group) in lexicographic order.
  return {in_group % Sp, r * split + in_group / Sp, in_group % Sp, 0};
}

}  // namespace fsdp
