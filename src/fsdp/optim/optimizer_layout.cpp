// SPDX-License-Identifier: MIT
#include "fsdp/optim/optimizer_layout.hpp"

#include <algorithm>

namespace fsdp {

UnitOptimizerLayout optimizer_layout(const RunLayout& layout, int u,
                                     const std::vector<int>& positions, bool muon, bool packed) {
  UnitOptimizerLayout out;
  const std::vector<UnitPart>& parts = layout.parts[std::size_t(u)];
  // The part's slice in the trained range of the shard buffers; packed moments so far.
  std::int64_t offset = 0, sq = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (!parts[k].trainable) continue;  // frozen: no state (and before every trained part)
    const std::int64_t shard = parts[k].shard(), lo = std::int64_t(positions[k]) * shard;
    for (const TensorSpec& t : layout.part_units[std::size_t(u)][k].tensors) {
      const std::int64_t a = std::max(lo, t.offset), z = std::min(lo + shard, t.offset + t.numel);
      if (a >= z) continue;
      StateSegment s;
      s.tensor = &t;
      s.part = int(k);
      s.at = offset + (a - lo);
      s.n = z - a;
      s.first = a - t.offset;
      s.muon = muon && muon_matrix(t);
      if (s.muon) {
        out.muon_elements += s.n;
      } else {
        s.sq_at = packed ? sq : s.at;
        sq += s.n;
      }
      out.segments.push_back(s);
    }
    offset += shard;
  }
  out.shard = offset;
  // Packing only where it saves something: an AdamW run keeps every buffer at the shard's length
  // (and so every allocation as it always was).
  if (!packed || out.muon_elements == 0) {
    for (StateSegment& s : out.segments) s.sq_at = s.at;
    out.sq_size = offset;
  } else {
    out.sq_size = sq;
  }
  return out;
}

}  // namespace fsdp
