// SPDX-License-Identifier: MIT
// What every decoder's head_forward reports, from its per-token losses and logits buffers: the
// micro-batch's mean loss and each sequence's, summed on the host in token order (so the
// reported loss is deterministic), and one position's logits for sampling.
#pragma once
#include <vector>

#include "core/memory.hpp"

namespace fsdp {

// losses: B*T per-token losses. Fills per_sequence (B means) and returns the mean over all.
double mean_losses(const TrackedBuffer& losses, int B, int T, std::vector<double>& per_sequence);
// Scored tokens (TokenLayout::loss_scale > 0; unscored ones hold 0): per_sequence gets B sums,
// and the return is the sum over all times scale.
double scored_losses(const TrackedBuffer& losses, int B, int T, double scale,
                     std::vector<double>& per_sequence);

// Row `row` of logits [rows, V], copied to the host.
std::vector<float> logits_row(const TrackedBuffer& logits, int V, std::int64_t row);

}  // namespace fsdp
