// SPDX-License-Identifier: MIT
// Device-callable math that builds against Kokkos 3.4 (Kokkos::Experimental::) and 4.x (Kokkos::),
// plus exp, sqrt and row reductions written so that compilers vectorize them on CPUs.
#pragma once
#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstring>

namespace fsdp::kmath {
#if KOKKOS_VERSION >= 40000
using Kokkos::exp;
using Kokkos::log;
using Kokkos::sqrt;
using Kokkos::tanh;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sqrt;
using Kokkos::Experimental::tanh;
#endif

namespace detail {
KOKKOS_INLINE_FUNCTION float bits_to_float(std::int32_t i) {
  float f;
  memcpy(&f, &i, sizeof f);  // a bit cast that every compiler and device folds away
  return f;
}
KOKKOS_INLINE_FUNCTION std::int32_t float_to_bits(float f) {
  std::int32_t i;
  memcpy(&i, &f, sizeof i);
  return i;
}
}  // namespace detail

// c ? a : b with both sides evaluated, as a bit blend. Under the default -ftrapping-math a plain
// ?: lets the compiler thread a branch through the arithmetic (or sink one side's arithmetic
// under it), and a loop with such a branch does not vectorize; a blend leaves nothing to move.
KOKKOS_INLINE_FUNCTION float select(bool c, float a, float b) {
  const std::int32_t m = -static_cast<std::int32_t>(c);
  return detail::bits_to_float((detail::float_to_bits(a) & m) | (detail::float_to_bits(b) & ~m));
}

// e^x to about 1 ulp for x in [-87.3, 88.3] (callers clamp), branch-free so a loop of them
// vectorizes (libm's expf is a call per value). Cephes expf: x = n ln2 + r with |r| <= ln2/2
// (ln2 split in two so n ln2 is exact), e^r by a degree-6 polynomial, 2^n built in the exponent.
KOKKOS_INLINE_FUNCTION float exp_fast_in_range(float x) {
  // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a libm call.
  constexpr float round_magic = 12582912.f;
  const float n = (x * 1.44269504088896341f + round_magic) - round_magic;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  return p * detail::bits_to_float((static_cast<std::int32_t>(n) + 127) << 23);
}

// e^x for any x, saturating at the normal-float range: 0 below e^-87.3, 1.4 * 2^127 above
// e^88.4.
KOKKOS_INLINE_FUNCTION float exp_fast(float x) {
  constexpr float lo = -87.3365448f, hi = 88.3762626f;
  const float e = exp_fast_in_range(select(x < lo, lo, select(x > hi, hi, x)));
  return select(x < lo, 0.f, e);
}

// sqrt for x >= 0 (0 for x <= 0) to within 1 ulp. libm's sqrtf must set errno for x < 0, and
// that check stops vectorization unless -fno-math-errno. Newton on 1/sqrt from the classic
// bit-level first guess, then one Heron step on sqrt itself; values below 2^-63 are scaled by
// 2^64 first so the guess stays finite.
KOKKOS_INLINE_FUNCTION float sqrt_fast(float x) {
  const bool tiny = x < 1.08420217e-19f;
  const float xs = select(tiny, x * 1.84467441e19f, x);
  float y = detail::bits_to_float(0x5f375a86 - (detail::float_to_bits(xs) >> 1));
  y = y * (1.5f - 0.5f * xs * y * y);
  y = y * (1.5f - 0.5f * xs * y * y);
  float s = xs * y;
  s = s + 0.5f * (xs - s * s) * y;
  s = select(tiny, s * 2.32830644e-10f, s);
  return select(x > 0.f, s, 0.f);
}

// a * b + c rounded once. Written out because the build is ISO C++ (no FP contraction), and a
// plain a * b + c in a register-tiled loop does not even vectorize under GCC; the fused form
// does, at about 20 times the rate.
KOKKOS_INLINE_FUNCTION float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return ::fmaf(a, b, c);
#else
  return __builtin_fmaf(a, b, c);
#endif
}

// Fixed-order sums: eight interleaved partials, combined pairwise. A single running sum is a
// serial chain the compiler may not reorder; eight independent partials fill one vector
// register, and every run adds in the same order. term(i) gives the i-th addend, i < n.
constexpr int kLanes = 8;

template <class Term>
KOKKOS_INLINE_FUNCTION float lane_sum(int n, const Term& term) {
  float acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += term(i + l);
  for (int l = 0; i + l < n; ++l) acc[l] += term(i + l);
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

// The same in double, for sums whose float rounding would show (norms, partition functions).
template <class Term>
KOKKOS_INLINE_FUNCTION double lane_sum_double(int n, const Term& term) {
  double acc[kLanes] = {};
  int i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += static_cast<double>(term(i + l));
  for (int l = 0; i + l < n; ++l) acc[l] += static_cast<double>(term(i + l));
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

// Largest of x[0..n), n >= 1, x without NaNs. Compared as integers: flipping the magnitude bits
// of negative floats orders their bit patterns like their values, and an integer max is a
// reduction compilers vectorize (a float max is not, short of -ffinite-math-only). Exact, so the
// order does not matter.
KOKKOS_INLINE_FUNCTION std::int32_t ordered_bits(float f) {
  const std::int32_t b = detail::float_to_bits(f);
  return b ^ ((b >> 31) & 0x7fffffff);  // an involution: it also maps the key back
}

KOKKOS_INLINE_FUNCTION float row_max(const float* x, int n) {
  std::int32_t m = ordered_bits(x[0]);
  for (int i = 1; i < n; ++i) {
    const std::int32_t k = ordered_bits(x[i]);
    m = k > m ? k : m;
  }
  return detail::bits_to_float(ordered_bits(detail::bits_to_float(m)));
}

}  // namespace fsdp::kmath
