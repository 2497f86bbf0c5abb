// SPDX-License-Identifier: MIT
#include "model/experts/dispatch.hpp"

#include "core/check.hpp"

namespace fsdp::kernels {

DispatchPlan dispatch_plan(const std::int32_t* top, std::int64_t N, int k, int experts,
                           std::int64_t capacity) {
  DispatchPlan p;
  p.experts = experts;
  p.k = k;
  p.counts.assign(std::size_t(experts), 0);
  std::vector<char> kept(std::size_t(N * k), 1);
  for (std::int64_t c = 0; c < N * k; ++c) {
    if (top[c] < 0 || top[c] >= experts)
      fatal("moe: token " + std::to_string(c / k) + " routed to expert " + std::to_string(top[c]) +
            " of " + std::to_string(experts));
    if (capacity > 0 && p.counts[std::size_t(top[c])] >= capacity) {
      kept[std::size_t(c)] = 0;
      ++p.dropped;
      continue;
    }
    ++p.counts[std::size_t(top[c])];
  }
  p.offsets.assign(std::size_t(experts) + 1, 0);
  for (int e = 0; e < experts; ++e) p.offsets[std::size_t(e) + 1] = p.offsets[std::size_t(e)] + p.counts[std::size_t(e)];
  // A counting sort, stable: within an expert, choices in token order.
  std::vector<std::int64_t> next(p.offsets.begin(), p.offsets.end() - 1);
  p.row_of.assign(std::size_t(N * k), -1);
  p.choice.resize(std::size_t(p.offsets.back()));
  for (std::int64_t c = 0; c < N * k; ++c) {
    if (!kept[std::size_t(c)]) continue;
    const std::int64_t r = next[std::size_t(top[c])]++;
    p.row_of[std::size_t(c)] = std::int32_t(r);
    p.choice[std::size_t(r)] = std::int32_t(c);
  }
  return p;
}

void moe_gather(const Mat& xe, const ConstMat& x, const Rows& choice, int k) {
  const int R = int(xe.extent(0)), C = int(xe.extent(1));
  Kokkos::parallel_for(
      "moe::gather", Kokkos::RangePolicy<ExecSpace>(0, R), KOKKOS_LAMBDA(const int r) {
        const float* src = &x(choice(r) / k, 0);
        float* dst = &xe(r, 0);
        for (int c = 0; c < C; ++c) dst[c] = src[c];
      });
}

void moe_gather_backward(const Mat& dx, const ConstMat& dxe, const Rows& row_of, int k) {
  const int N = int(dx.extent(0)), C = int(dx.extent(1));
  Kokkos::parallel_for(
      "moe::gather_backward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int t) {
        float* d = &dx(t, 0);
        for (int c = 0; c < C; ++c) d[c] = 0.f;
        for (int j = 0; j < k; ++j) {
          if (row_of(t * k + j) < 0) continue;
          const float* s = &dxe(row_of(t * k + j), 0);
          for (int c = 0; c < C; ++c) d[c] += s[c];
        }
      });
}

void moe_combine(const Mat& y, const ConstMat& ye, const ConstMat& w, const Rows& row_of) {
  const int N = int(y.extent(0)), C = int(y.extent(1)), k = int(w.extent(1));
  Kokkos::parallel_for(
      "moe::combine", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int t) {
        float* out = &y(t, 0);
        for (int c = 0; c < C; ++c) out[c] = 0.f;
        for (int j = 0; j < k; ++j) {
          if (row_of(t * k + j) < 0) continue;
          const float wj = w(t, j);
          const float* s = &ye(row_of(t * k + j), 0);
          for (int c = 0; c < C; ++c) out[c] += wj * s[c];
        }
      });
}

void moe_combine_backward(const Mat& dye, const Mat& dw, const ConstMat& dy, const ConstMat& ye,
                          const ConstMat& w, const Rows& row_of) {
  const int N = int(dy.extent(0)), C = int(dy.extent(1)), k = int(w.extent(1));
  Kokkos::parallel_for(
      "moe::combine_backward", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int t) {
        const float* d = &dy(t, 0);
        for (int j = 0; j < k; ++j) {
          const int r = row_of(t * k + j);
          if (r < 0) {
            dw(t, j) = 0.f;
            continue;
          }
          const float wj = w(t, j);
          const float* s = &ye(r, 0);
          float* de = &dye(r, 0);
          float acc = 0.f;
          for (int c = 0; c < C; ++c) {
            de[c] = wj * d[c];
            acc += d[c] * s[c];
          }
          dw(t, j) = acc;
        }
      });
}

void router_balance_sums(const ConstMat& probs, const ConstExpertIds& top, std::int64_t* counts,
                         double* psum) {
  const auto p = Kokkos::create_mirror_view_and_copy(HostSpace(), probs);
  const auto t = Kokkos::create_mirror_view_and_copy(HostSpace(), top);
  for (std::size_t i = 0; i < p.extent(0); ++i) {
    for (std::size_t e = 0; e < p.extent(1); ++e) psum[e] += double(p(i, e));
    for (std::size_t j = 0; j < t.extent(1); ++j) ++counts[t(i, j)];
  }
}

}  // namespace fsdp::kernels
