// SPDX-License-Identifier: MIT
#include "model/head_outputs.hpp"

namespace fsdp {

double mean_losses(const TrackedBuffer& losses, int B, int T, std::vector<double>& per_sequence) {
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), losses.vec());
  double sum = 0.0;
  per_sequence.assign(std::size_t(B), 0.0);
  for (int b = 0; b < B; ++b) {
    double s = 0.0;
    for (int t = 0; t < T; ++t) s += host(b * T + t);
    per_sequence[std::size_t(b)] = s / T;
    sum += s;
  }
  return sum / (double(B) * T);
}

double scored_losses(const TrackedBuffer& losses, int B, int T, double scale,
                     std::vector<double>& per_sequence) {
  auto host = Kokkos::create_mirror_view_and_copy(HostSpace(), losses.vec());
  double sum = 0.0;
  per_sequence.assign(std::size_t(B), 0.0);
  for (int b = 0; b < B; ++b) {
    double s = 0.0;
    for (int t = 0; t < T; ++t) s += host(b * T + t);  // unscored tokens hold 0
    per_sequence[std::size_t(b)] = s;
    sum += s;
  }
  return sum * scale;
}

std::vector<float> logits_row(const TrackedBuffer& logits, int V, std::int64_t row) {
  std::vector<float> out(static_cast<std::size_t>(V));
  Kokkos::deep_copy(HostVec(out.data(), out.size()),
                    ConstVec(logits.cvec().data() + row * V, std::size_t(V)));
  return out;
}

}  // namespace fsdp
