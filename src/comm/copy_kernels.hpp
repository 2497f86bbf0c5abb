// SPDX-License-Identifier: MIT
// The copies of the shared-memory path: plain, where the destination is read again soon (a
// peer's staging slot, a small result), or streaming (non-temporal stores) for results too big
// to stay in cache, which saves the read-for-ownership of every destination line.
#pragma once
#include <cstddef>

namespace fsdp::comm {

void copy_floats(float* dst, const float* src, std::size_t n);
void stream_floats(float* dst, const float* src, std::size_t n);
// One pass over src into a (kept in cache) and b (streamed): src is read once, not twice.
void copy_and_stream(float* a, float* b, const float* src, std::size_t n);

}  // namespace fsdp::comm
