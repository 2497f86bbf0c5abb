// SPDX-License-Identifier: MIT
#include "fsdp/optimizer_step.hpp"

#include <algorithm>
#include <cmath>

#include "optim/adamw.hpp"
#include "optim/lr_schedule.hpp"

namespace fsdp {

double ShardedOptimizer::norm2() {
  double n2 = 0.0;
  for (int u = 0; u < int(state_.units().size()); ++u) n2 += optim::sum_squares(state_.grad_shard(u));
  return state_.shard_comm().all_reduce_sum(n2);
}

std::string ShardedOptimizer::first_nonfinite_unit() {
  std::vector<ShardedUnit>& units = state_.units();
  std::vector<double> bad(units.size(), 0.0);
  for (std::size_t u = 0; u < units.size(); ++u)
    bad[u] = std::isfinite(optim::sum_squares(state_.grad_shard(int(u)))) ? 0.0 : 1.0;
  state_.shard_comm().all_reduce_sum(bad.data(), int(bad.size()));
  for (std::size_t u = 0; u < units.size(); ++u)
    if (bad[u] > 0.0) return units[u].layout->name;
  return "";
}

OptimizerResult ShardedOptimizer::step(int step, double norm2, double loss, bool zero_full_grads,
                                       const std::function<void(int)>& updated) {
  OptimizerResult r;
  r.grad_norm = std::sqrt(norm2);
  r.lr = optim::learning_rate(train_, step);
  if (!std::isfinite(r.grad_norm) || !std::isfinite(loss)) {
    r.nonfinite_unit = first_nonfinite_unit();
    const std::string what =
        "step " + std::to_string(step + 1) + ": non-finite " +
        (std::isfinite(loss) ? "" : "loss (" + std::to_string(loss) + ") and ") +
        "gradient norm (" + std::to_string(r.grad_norm) +
        "); first unit with non-finite gradients: " +
        (r.nonfinite_unit.empty() ? "none (the loss alone)" : r.nonfinite_unit);
    if (train_.on_nonfinite != "skip_step") throw NonFiniteError(what);
    r.skipped = true;  // parameters and optimizer state stay as they were
    return r;
  }
  const double clip = train_.grad_clip;
  optim::AdamWStep s;
  s.lr = float(r.lr);
  s.beta1 = float(train_.beta1);
  s.beta2 = float(train_.beta2);
  s.eps = float(train_.eps);
  s.weight_decay = float(train_.weight_decay);
  s.t = state_.next_optimizer_step();
  s.grad_scale = (clip > 0.0 && r.grad_norm > clip) ? float(clip / (r.grad_norm + 1e-6)) : 1.f;
  for (int u = 0; u < int(state_.units().size()); ++u) {
    ShardedUnit& su = state_.units()[std::size_t(u)];
    const Vec p = state_.param_shard(u), g = state_.grad_shard(u);
    const std::int64_t b = su.shard_begin, e = std::min(su.shard_begin + su.shard, su.numel);
    for (const auto& t : su.layout->tensors) {
      const std::int64_t lo = std::max(b, t.offset), hi = std::min(e, t.offset + t.numel);
      if (lo >= hi) continue;
      const std::int64_t o = lo - b, n = hi - lo;
      optim::adamw_update(subvec(p, o, n), subvec(g, o, n), su.exp_avg.vec(o, n),
                          su.exp_avg_sq.vec(o, n), s, t.decay, zero_full_grads);
    }
    updated(u);
  }
  return r;
}

}  // namespace fsdp
