// SPDX-License-Identifier: MIT
// Learning rate: linear warm-up to lr over warmup_steps, then cosine decay to min_lr at `steps`.
#pragma once
#include <algorithm>
#include <cmath>

#include "config/run_config.hpp"

namespace fsdp::optim {

inline double learning_rate(const TrainConfig& t, int step /*0-based*/) {
  if (step < t.warmup_steps) return t.lr * (step + 1) / t.warmup_steps;
  const int decay_steps = std::max(1, t.steps - t.warmup_steps);
  const double progress = std::min(1.0, double(step - t.warmup_steps) / decay_steps);
  return t.min_lr + 0.5 * (t.lr - t.min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace fsdp::optim
