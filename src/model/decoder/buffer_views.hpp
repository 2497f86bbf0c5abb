// SPDX-License-Identifier: MIT
// The skeleton's shorthand for views of its buffers and of a unit's gradient buffer.
#pragma once
#include <cstdint>

#include "core/memory.hpp"
#include "core/types.hpp"

namespace fsdp::skeleton_views {

inline Mat m(const TrackedBuffer& b, std::int64_t rows, std::int64_t cols) {
  return Mat(b.data(), rows, cols);
}
inline ConstMat cm(const TrackedBuffer& b, std::int64_t rows, std::int64_t cols) {
  return ConstMat(b.data(), rows, cols);
}
// A tensor of a unit's gradient buffer g, at flat offset off.
inline Mat gm(Vec g, std::int64_t off, std::int64_t rows, std::int64_t cols) {
  return Mat(g.data() + off, rows, cols);
}
inline Vec gv(Vec g, std::int64_t off, std::int64_t n) { return Vec(g.data() + off, n); }

}  // namespace fsdp::skeleton_views
