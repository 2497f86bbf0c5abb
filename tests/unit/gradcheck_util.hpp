// SPDX-License-Identifier: MIT
// Finite-difference helpers: central differences of a scalar loss, compared element by element
// with the analytic gradient. Tests run on the host (Serial/OpenMP), so views are host memory.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace fsdp::test {

inline FlatView random_view(const std::string& label, std::int64_t n, std::uint32_t seed,
                            float scale = 1.f) {
  FlatView v(label, n);
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, scale);
  for (std::int64_t i = 0; i < n; ++i) v(i) = d(g);
  return v;
}

// Views of a test's flat buffer as the kernels take them.
inline Mat M(const FlatView& v, int r, int c) { return Mat(v.data(), r, c); }
inline ConstMat CM(const FlatView& v, int r, int c) { return ConstMat(v.data(), r, c); }
inline Vec V(const FlatView& v) { return Vec(v.data(), v.extent(0)); }
inline ConstVec CV(const FlatView& v) { return ConstVec(v.data(), v.extent(0)); }

inline double dot(const FlatView& a, const FlatView& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.extent(0); ++i) s += double(a(i)) * double(b(i));
  return s;
}

struct GradCheckResult {
  int checked = 0, failed = 0;
  int jumps = 0;  // one_sided: elements whose step crossed a jump, checked on the smooth side
  double worst_rel = 0.0;
  std::string first_failure;
};

// Checks analytic[i] against d loss / d x[i] for up to max_checks elements of x. one_sided: a
// loss with jumps (mixtures of experts) may match on either side of the element instead.
inline GradCheckResult grad_check(const std::string& what, float* x, const float* analytic,
                                  std::int64_t n, const std::function<double()>& loss,
                                  float eps = 1e-2f, double rtol = 2e-2, double atol = 2e-4,
                                  int max_checks = 24, bool one_sided = false) {
  GradCheckResult r;
  const std::int64_t stride = std::max<std::int64_t>(1, n / max_checks);
  for (std::int64_t i = 0; i < n; i += stride) {
    const float old = x[i];
    x[i] = old + eps;
    const double lp = loss();
    x[i] = old - eps;
    const double lm = loss();
    x[i] = old;
    const double fd = (lp - lm) / (2.0 * eps);
    const double an = analytic[i];
    const double err = std::abs(fd - an);
    const double rel = err / std::max(1e-12, std::max(std::abs(fd), std::abs(an)));
    ++r.checked;
    const auto off = [&](double d) { return std::abs(d - an) > atol + rtol * std::max(std::abs(d), std::abs(an)); };
    if (off(fd) && one_sided) {
      // A jump (a router's top-k choice flipping inside the step) sits on one side only: the
      // other side's difference is the derivative.
      const double l0 = loss();
      if (!off((lp - l0) / eps) || !off((l0 - lm) / eps)) {
        ++r.jumps;
        continue;
      }
    }
    if (off(fd)) {
      if (r.failed++ == 0)
        r.first_failure = what + "[" + std::to_string(i) + "]: finite difference " +
                          std::to_string(fd) + " vs analytic " + std::to_string(an);
    }
    if (err > atol) r.worst_rel = std::max(r.worst_rel, rel);
  }
  return r;
}

// The check found no element out of bounds (and checked some).
inline void require_ok(const GradCheckResult& r) {
  INFO(r.first_failure);
  REQUIRE(r.checked > 0);
  REQUIRE(r.failed == 0);
}

}  // namespace fsdp::test
