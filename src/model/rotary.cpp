// SPDX-License-Identifier: MIT
#include "model/rotary.hpp"

#include <cmath>

namespace fsdp::kernels {

std::vector<double> rope_inv_freq(const ModelConfig& m) {
  const int D = m.head_dim(), half = D / 2;
  std::vector<double> f(std::size_t(half), 0.0);
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < half; ++i) {
    double inv = std::pow(m.rope_theta, -2.0 * i / D);
    if (m.rope_scaling == "llama3") {
      // Llama 3.1: wavelengths longer than the original context / low_freq_factor are
      // stretched by the factor, shorter than context / high_freq_factor kept, and the ones
      // between mixed linearly in context / wavelength.
      const double wavelen = 2.0 * pi / inv, ctx = m.rope_original_context;
      const double low_wl = ctx / m.rope_low_freq_factor, high_wl = ctx / m.rope_high_freq_factor;
      if (wavelen > low_wl) {
        inv /= m.rope_factor;
      } else if (wavelen >= high_wl) {
        const double smooth = (ctx / wavelen - m.rope_low_freq_factor) /
                              (m.rope_high_freq_factor - m.rope_low_freq_factor);
        inv = (1.0 - smooth) * inv / m.rope_factor + smooth * inv;
      }
    }
    f[std::size_t(i)] = inv;
  }
  return f;
}

RopeTable::RopeTable(MemoryTracker& tracker, const ModelConfig& m, int T) {
  const int half = m.head_dim() / 2;
  const std::int64_t n = std::int64_t(T) * half;
  cos_ = TrackedBuffer(tracker, "rope::cos", n, MemCategory::Activations);
  sin_ = TrackedBuffer(tracker, "rope::sin", n, MemCategory::Activations);
  if (tracker.counting()) return;  // counted, not made (the planner's run)
  const std::vector<double> inv = rope_inv_freq(m);
  std::vector<float> c(static_cast<std::size_t>(n)), s(static_cast<std::size_t>(n));
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < half; ++i) {
      const double a = double(t) * inv[std::size_t(i)];
      c[std::size_t(t) * half + i] = float(std::cos(a));
      s[std::size_t(t) * half + i] = float(std::sin(a));
    }
  Kokkos::deep_copy(cos_.vec(), HostConstVec(c.data(), c.size()));
  Kokkos::deep_copy(sin_.vec(), HostConstVec(s.data(), s.size()));
}

}  // namespace fsdp::kernels
