// SPDX-License-Identifier: MIT
#include "io/checkpoint_staging.hpp"

#include "core/check.hpp"

namespace fsdp {

void StagedState::allocate(CheckpointedState& live) {
  if (!units_.empty()) return;
  for (const UnitShard& s : live.unit_shards()) {
    Unit u;
    u.meta = {s.layout, s.shard_begin, s.shard, {}, {}, {}, s.placement, s.writes, s.muon, s.sq_shift};
    if (s.writes) {
      const std::string tag = "checkpoint_staging::" + s.layout->name;
      const auto buffer = [&](const ShardVec& v, const char* part) {
        return ShardBuffer(tracker_, tag + part, v.size(), MemCategory::CheckpointStaging,
                           MemSpace::Host);
      };
      u.params = buffer(s.params, "::params");
      u.exp_avg = buffer(s.exp_avg, "::exp_avg");
      u.exp_avg_sq = buffer(s.exp_avg_sq, "::exp_avg_sq");
      for (const ShardBuffer* b : {&u.params, &u.exp_avg, &u.exp_avg_sq}) b->view().fill(0.f);
    }
    units_.push_back(std::move(u));
  }
}

void StagedState::stage(CheckpointedState& live) {
  allocate(live);
  const std::vector<UnitShard> shards = live.unit_shards();
  shard_group_size_ = live.shard_group_size();
  optimizer_steps_ = live.optimizer_steps();
  if (units_.size() != shards.size()) fatal("checkpoint staging: the state's units changed");
  ExecSpace().fence();  // the shards are final before they are copied
  for (std::size_t i = 0; i < shards.size(); ++i) {
    if (!shards[i].writes) continue;
    shards[i].params.copy_to(units_[i].params.host().data());
    shards[i].exp_avg.copy_to(units_[i].exp_avg.host().data());
    shards[i].exp_avg_sq.copy_to(units_[i].exp_avg_sq.host().data());
  }
}

std::int64_t StagedState::bytes() const {
  std::int64_t n = 0;
  for (const Unit& u : units_)
    if (u.params.allocated()) n += 4 * (u.params.size() + u.exp_avg.size() + u.exp_avg_sq.size());
  return n;
}

std::vector<UnitShard> StagedState::unit_shards() {
  std::vector<UnitShard> out;
  for (const Unit& u : units_) {
    UnitShard s = u.meta;
    if (u.params.allocated()) {
      s.params = u.params.view();
      s.exp_avg = u.exp_avg.view();
      s.exp_avg_sq = u.exp_avg_sq.view();
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace fsdp
