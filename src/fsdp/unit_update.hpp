// SPDX-License-Identifier: MIT
// AdamW on one unit's shard, tensor by tensor (weight decay is per tensor): the one update every
// placement of the optimizer state runs (fsdp/optimizer_step.cpp, fsdp/optimizer_nvme.cpp).
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
  const std::int64_t b = su.shard_begin + lo_in_shard;
  const std::int64_t e = std::min(b + std::int64_t(p.extent(0)), su.numel);
  for (const auto& t : su.layout->tensors) {
    const std::int64_t lo = std::max(b, t.offset), hi = std::min(e, t.offset + t.numel);
    if (lo >= hi) continue;
    const std::int64_t o = lo - b, n = hi - lo;
    const auto in = [&](const V& x) { return V(x.data() + o, n); };
    optim::adamw_update_in<Exec>(in(p), in(g), in(m), in(v), s, t.decay, zero_grads);
  }
}

}  // namespace fsdp
