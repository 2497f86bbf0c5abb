// SPDX-License-Identifier: MIT
// The one reduction kernel of every backend: n equally long float blocks summed in rank order
// (ReduceOp's contract), so the shared-memory and MPI paths agree bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>

#include "comm/communicator.hpp"

namespace fsdp::comm {

// dst[i] = ((src[0][i] + src[1][i]) + ...) + src[n-1][i], then / float(n) for Avg.
// dst must not alias any src (it is written before the later ranks are read).
void sum_in_rank_order(const float* const* src, int n, float* dst, std::size_t count, ReduceOp op);
// The two steps of the same sum for a dst that already holds the running sum (or the first
// block): dst[i] += src[i]; then, for Avg, dst[i] /= float(n).
void accumulate_floats(float* dst, const float* src, std::size_t count);
void finish_op(float* dst, int n, std::size_t count, ReduceOp op);
// The same over bf16 blocks: each element widened to float (exactly), then summed as above, so
// the result is the float sum of what was sent, never rounded back to bf16.
void sum_in_rank_order(const std::uint16_t* const* src, int n, float* dst, std::size_t count,
                       ReduceOp op);

}  // namespace fsdp::comm
