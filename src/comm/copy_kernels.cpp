// SPDX-License-Identifier: MIT
// SSE2 is enough for the streaming loops: they run at memory speed, not instruction speed.
#include "comm/copy_kernels.hpp"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace fsdp::comm {

void copy_floats(float* dst, const float* src, std::size_t n) {
  if (n > 0 && dst != src) std::memcpy(dst, src, n * sizeof(float));
}

#if defined(__SSE2__)

namespace {
// Elements to copy plainly before dst reaches the 16-byte alignment streaming stores need.
std::size_t head(const float* dst, std::size_t n) {
  const std::size_t h = ((16 - (reinterpret_cast<std::uintptr_t>(dst) & 15)) & 15) / sizeof(float);
  return h < n ? h : n;
}
}  // namespace

void stream_floats(float* dst, const float* src, std::size_t n) {
  std::size_t i = head(dst, n);
  copy_floats(dst, src, i);
  for (; i + 8 <= n; i += 8) {
    const __m128 x = _mm_loadu_ps(src + i), y = _mm_loadu_ps(src + i + 4);
    _mm_stream_ps(dst + i, x);
    _mm_stream_ps(dst + i + 4, y);
  }
  copy_floats(dst + i, src + i, n - i);
  _mm_sfence();  // streaming stores are weakly ordered: publish them before anyone syncs
}

void copy_and_stream(float* a, float* b, const float* src, std::size_t n) {
  std::size_t i = head(b, n);
  copy_floats(a, src, i);
  copy_floats(b, src, i);
  for (; i + 8 <= n; i += 8) {
    const __m128 x = _mm_loadu_ps(src + i), y = _mm_loadu_ps(src + i + 4);
    _mm_storeu_ps(a + i, x);
    _mm_storeu_ps(a + i + 4, y);
    _mm_stream_ps(b + i, x);
    _mm_stream_ps(b + i + 4, y);
  }
  copy_floats(a + i, src + i, n - i);
  copy_floats(b + i, src + i, n - i);
  _mm_sfence();
}

#else

void stream_floats(float* dst, const float* src, std::size_t n) { copy_floats(dst, src, n); }
void copy_and_stream(float* a, float* b, const float* src, std::size_t n) {
  copy_floats(a, src, n);
  copy_floats(b, src, n);
}

#endif

}  // namespace fsdp::comm
