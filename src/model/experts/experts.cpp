// SPDX-License-Identifier: MIT
#include "model/experts/experts.hpp"

#include "model/gemm/gemm.hpp"
#include "model/swiglu.hpp"

namespace fsdp::kernels {
namespace {

// Rows [a, b) of a row-major matrix as its own.
Mat rows(const Mat& m, std::int64_t a, std::int64_t b) {
  return Mat(m.data() + a * std::int64_t(m.extent(1)), std::size_t(b - a), m.extent(1));
}
ConstMat rows(const ConstMat& m, std::int64_t a, std::int64_t b) {
  return ConstMat(m.data() + a * std::int64_t(m.extent(1)), std::size_t(b - a), m.extent(1));
}

}  // namespace

ExpertLinear ExpertLinear::of(const ExpertTensors& w, const ExpertTensors& grads, int C, int F) {
  const auto mat = [C, F](const ExpertTensors& t, int e, int which) {
    return which == 0 ? Mat(t.gu[std::size_t(e)], std::size_t(2 * F), std::size_t(C))
                      : Mat(t.down[std::size_t(e)], std::size_t(C), std::size_t(F));
  };
  ExpertLinear lin;
  lin.forward = [&w, mat](int e, int which, const Mat& y, const ConstMat& x) {
    gemm("N", "T", 1.f, x, mat(w, e, which), 0.f, y);
  };
  lin.backward = [&w, &grads, mat](int e, int which, const Mat& dx, const ConstMat& dy, const ConstMat& x) {
    gemm("N", "N", 1.f, dy, mat(w, e, which), 0.f, dx);
    gemm("T", "N", 1.f, dy, x, 1.f, mat(grads, e, which));
  };
  return lin;
}

void experts_forward(const Mat& ye, const Mat& gu_act, const Mat& h, const ConstMat& xe,
                     const std::vector<std::int64_t>& offsets, const ExpertLinear& lin) {
  for (std::size_t e = 0; e + 1 < offsets.size(); ++e) {
    const std::int64_t a = offsets[e], b = offsets[e + 1];
    if (a == b) continue;
    const Mat gu = rows(gu_act, a, b), he = rows(h, a, b);
    lin.forward(int(e), 0, gu, rows(xe, a, b));
    swiglu_forward(he, gu);
    lin.forward(int(e), 1, rows(ye, a, b), he);
  }
}

void experts_backward(const Mat& dxe, const Mat& dgu, const Mat& dh, const ConstMat& dye,
                      const ConstMat& xe, const ConstMat& gu_act, const ConstMat& h,
                      const std::vector<std::int64_t>& offsets, const ExpertLinear& lin) {
  for (std::size_t e = 0; e + 1 < offsets.size(); ++e) {
    const std::int64_t a = offsets[e], b = offsets[e + 1];
    if (a == b) continue;
    const Mat dhe = rows(dh, a, b), dg = rows(dgu, a, b);
    lin.backward(int(e), 1, dhe, rows(dye, a, b), rows(h, a, b));  // dh = dy down; d down += dy^T h
    swiglu_backward(dg, dhe, rows(gu_act, a, b));
    lin.backward(int(e), 0, rows(dxe, a, b), dg, rows(xe, a, b));  // dx = dgu W_gu; d W_gu += dgu^T x
  }
}

}  // namespace fsdp::kernels
