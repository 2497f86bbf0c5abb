// SPDX-License-Identifier: MIT
#include "model/moe/experts.hpp"

#include "model/gemm.hpp"
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

ExpertWeights ExpertWeights::of(const ExpertTensors& t, int C, int F) {
  ExpertWeights w;
  w.gu = [&t, C, F](int e) { return ConstMat(t.gu[std::size_t(e)], std::size_t(2 * F), std::size_t(C)); };
  w.down = [&t, C, F](int e) { return ConstMat(t.down[std::size_t(e)], std::size_t(C), std::size_t(F)); };
  return w;
}

void experts_forward(const Mat& ye, const Mat& gu_act, const Mat& h, const ConstMat& xe,
                     const std::vector<std::int64_t>& offsets, const ExpertWeights& w, int /*F: h's width*/) {
  for (std::size_t e = 0; e + 1 < offsets.size(); ++e) {
    const std::int64_t a = offsets[e], b = offsets[e + 1];
    if (a == b) continue;
    const Mat gu = rows(gu_act, a, b), he = rows(h, a, b);
    gemm("N", "T", 1.f, rows(xe, a, b), w.gu(int(e)), 0.f, gu);
    swiglu_forward(he, gu);
    gemm("N", "T", 1.f, he, w.down(int(e)), 0.f, rows(ye, a, b));
  }
}

void experts_backward(const Mat& dxe, const Mat& dgu, const Mat& dh, const ConstMat& dye,
                      const ConstMat& xe, const ConstMat& gu_act, const ConstMat& h,
                      const std::vector<std::int64_t>& offsets, const ExpertWeights& w,
                      const ExpertTensors& grads, int F) {
  const std::int64_t C = std::int64_t(xe.extent(1));
  for (std::size_t e = 0; e + 1 < offsets.size(); ++e) {
    const std::int64_t a = offsets[e], b = offsets[e + 1];
    if (a == b) continue;
    const ConstMat dy = rows(dye, a, b), x = rows(xe, a, b);
    const Mat dhe = rows(dh, a, b), dg = rows(dgu, a, b);
    gemm("N", "N", 1.f, dy, w.down(int(e)), 0.f, dhe);                       // dh = dy down
    gemm("T", "N", 1.f, dy, rows(h, a, b), 1.f,
         Mat(grads.down[e], std::size_t(C), std::size_t(F)));                // d down += dy^T h
    swiglu_backward(dg, dhe, rows(gu_act, a, b));
    gemm("T", "N", 1.f, dg, x, 1.f, Mat(grads.gu[e], std::size_t(2 * F), std::size_t(C)));
    gemm("N", "N", 1.f, dg, w.gu(int(e)), 0.f, rows(dxe, a, b));             // dx = dgu W_gu
  }
}

}  // namespace fsdp::kernels
