// SPDX-License-Identifier: MIT
// AdamW on one unit's shard (its slice of every part), tensor by tensor (weight decay is per
// tensor): the one update every placement of the optimizer state runs (fsdp/optimizer_step.cpp, fsdp/optimizer_nvme.cpp).
#pragma once
#include <algorithm>
#include <cstdint>

#include "fsdp/sharded_unit.hpp"
#include "optim/adamw.hpp"

namespace fsdp {

// p, g, m, v: views of elements [lo, lo + p.extent(0)) of unit su's shard (the whole shard by
// default, a piece of it when the optimizer streams from disk), all where Exec runs. AdamW is
// elementwise, so a shard updated piece by piece gets the same bits as updated whole.
template <class Exec, class V>
void update_unit(const ShardedUnit& su, const V& p, const V& g, const V& m, const V& v,
                 const optim::AdamWStep& s, bool zero_grads, std::int64_t lo_in_shard = 0) {
  const std::int64_t hi_in_shard = lo_in_shard + std::int64_t(p.extent(0));
  for (const PartShard& part : su.parts) {
    // The piece's elements in this part's slice, as flat elements [b, e) of the unit.
    const std::int64_t a = std::max(lo_in_shard, part.shard_offset);
    const std::int64_t z = std::min(hi_in_shard, part.shard_offset + part.shard);
    if (a >= z) continue;
    const std::int64_t b = part.flat_begin() + (a - part.shard_offset), e = b + (z - a);
    for (const auto& t : su.layout->tensors) {
      const std::int64_t lo = std::max(b, t.offset), hi = std::min(e, t.offset + t.numel);
      if (lo >= hi) continue;
      const std::int64_t o = (a - lo_in_shard) + (lo - b), n = hi - lo;
      const auto in = [&](const V& x) { return V(x.data() + o, n); };
      optim::adamw_update_in<Exec>(in(p), in(g), in(m), in(v), s, t.decay, zero_grads);
    }
  }
}

}  // namespace fsdp
