// SPDX-License-Identifier: MIT
#include "model/layers/adapted_linear.hpp"

#include <utility>

#include "model/gemm/gemm.hpp"

namespace fsdp {
namespace k = kernels;

namespace {
// Columns [c, c + n) of a row-major matrix, keeping its row stride (the GEMMs take windows).
template <class M>
M columns(const M& m, int c, int n) {
  return Kokkos::subview(m, Kokkos::ALL, std::make_pair(std::size_t(c), std::size_t(c + n)));
}
Mat rows_of(const Mat& scratch, std::int64_t rows, int r) { return Mat(scratch.data(), rows, r); }
}  // namespace

AdaptedLinear::AdaptedLinear(std::unique_ptr<Linear> base, int rank, float scale,
                             std::vector<Adapter> adapters, Mat h, Mat dh)
    : LinearLayer(base->in(), base->out()),
      base_(std::move(base)),
      r_(rank),
      scale_(scale),
      adapters_(std::move(adapters)),
      h_(h),
      dh_(dh) {}

void AdaptedLinear::forward(const Mat& y, const ConstMat& x, const UnitParams& p,
                            k::Bf16Gemms* bf16) const {
  base_->forward(y, x, p, bf16);
  const std::int64_t N = x.extent(0);
  const Mat h = rows_of(h_, N, r_);
  for (const Adapter& a : adapters_) {
    k::gemm("N", "T", 1.f, x, p.table(a.a, r_, in()), 0.f, h);
    k::gemm("N", "T", scale_, h, p.table(a.b, a.cols, r_), 1.f, columns(y, a.col, a.cols));
  }
}

void AdaptedLinear::backward(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x,
                             const UnitParams& p, k::Bf16Gemms* bf16) const {
  base_->backward(dx, g, dy, x, p, bf16);  // frozen: dx = dy W^T alone
  const std::int64_t N = x.extent(0);
  const Mat h = rows_of(h_, N, r_), dh = rows_of(dh_, N, r_);
  for (const Adapter& a : adapters_) {
    const ConstMat dyc = columns(dy, a.col, a.cols);
    k::gemm("N", "T", 1.f, x, p.table(a.a, r_, in()), 0.f, h);
    k::gemm("T", "N", scale_, dyc, h, 1.f, Mat(g.data() + a.grad_b, a.cols, r_));
    k::gemm("N", "N", scale_, dyc, p.table(a.b, a.cols, r_), 0.f, dh);
    k::gemm("T", "N", 1.f, dh, x, 1.f, Mat(g.data() + a.grad_a, r_, in()));
    k::gemm("N", "N", 1.f, dh, p.table(a.a, r_, in()), 1.f, dx);
  }
}

LayerFlops AdaptedLinear::flops(std::int64_t rows) const {
  LayerFlops f = base_->flops(rows);
  for (const Adapter& a : adapters_) f += param_flops(double(r_) * (in() + a.cols), double(rows));
  return f;
}

}  // namespace fsdp
