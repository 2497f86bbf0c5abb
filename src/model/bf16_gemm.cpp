// SPDX-License-Identifier: MIT
#include "model/bf16_gemm.hpp"

#include <algorithm>
#include <string>

#include "core/bf16.hpp"
#include "core/check.hpp"
#include "model/cublas_gemm.hpp"
#include "model/gemm.hpp"

namespace fsdp::kernels {

#if !defined(KOKKOS_ENABLE_CUDA)
namespace {

// The reference's widened operand: a fresh fp32 copy (a reference, so no cache).
FlatView widened(const ConstBf16Mat& m, const char* which) {
  if (m.extent(0) > 1 && m.stride(0) != m.extent(1))
    fatal(std::string("gemm_bf16 (reference): operand ") + which +
          " is a window of a wider matrix; the reference takes whole matrices");
  const std::int64_t n = std::int64_t(m.extent(0)) * std::int64_t(m.extent(1));
  FlatView out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gemm_bf16::widened"), n);
  widen_bf16(ConstBf16Vec(m.data(), n), Vec(out.data(), n));
  return out;
}

}  // namespace

void gemm_bf16(const char* ta, const char* tb, float alpha, const ConstBf16Mat& a,
               const ConstBf16Mat& b, float beta, const Mat& c) {
  Kokkos::Profiling::pushRegion("gemm_bf16::widened_reference");
  const FlatView wa = widened(a, "A"), wb = widened(b, "B");
  gemm(ta, tb, alpha, ConstMat(wa.data(), a.extent(0), a.extent(1)),
       ConstMat(wb.data(), b.extent(0), b.extent(1)), beta, c);
  Kokkos::Profiling::popRegion();
}

const char* gemm_bf16_path() {
  return "bf16 inputs, fp32 accumulation: the widening reference (fp32 GEMMs on this CPU)";
}
#else
void gemm_bf16(const char* ta, const char* tb, float alpha, const ConstBf16Mat& a,
               const ConstBf16Mat& b, float beta, const Mat& c) {
  cublas_gemm_bf16(ta, tb, alpha, a, b, beta, c);
}

const char* gemm_bf16_path() { return "bf16 inputs, fp32 accumulation: cuBLAS tensor cores"; }
#endif

Bf16Gemms::Bf16Gemms(MemoryTracker& tracker, std::int64_t elements)
    : first_(tracker, "bf16_gemm::cast_a", elements, MemCategory::Activations, MemSpace::Device,
             Dtype::BF16, Fill::None),
      second_(tracker, "bf16_gemm::cast_b", elements, MemCategory::Activations, MemSpace::Device,
              Dtype::BF16, Fill::None),
      elements_(elements) {}

ConstBf16Mat Bf16Gemms::cast(const TrackedBuffer& into, const float* rows, std::int64_t n,
                             std::int64_t cols) {
  if (n * cols > elements_)
    fatal("bf16 GEMM scratch holds " + std::to_string(elements_) + " elements, a " +
          std::to_string(n) + "x" + std::to_string(cols) + " operand does not fit");
  const Bf16Vec dst(into.bf16().data(), n * cols);
  cast_to_bf16(ConstVec(rows, n * cols), dst);
  return ConstBf16Mat(dst.data(), n, cols);
}

void Bf16Gemms::forward(const Mat& out, const ConstMat& inp, const ConstBf16Mat& w, float beta) {
  const ConstBf16Mat x = cast(first_, inp.data(), inp.extent(0), inp.extent(1));
  gemm_bf16("N", "N", 1.f, x, w, beta, out);
}

void Bf16Gemms::backward(const Mat& dinp, const Mat& dw, const ConstMat& dout, const ConstMat& inp,
                         const ConstBf16Mat& w) {
  const ConstBf16Mat d = cast(first_, dout.data(), dout.extent(0), dout.extent(1));
  gemm_bf16("N", "T", 1.f, d, w, 0.f, dinp);
  const ConstBf16Mat x = cast(second_, inp.data(), inp.extent(0), inp.extent(1));
  gemm_bf16("T", "N", 1.f, x, d, 1.f, dw);
}

void Bf16Gemms::head_forward(const Mat& logits, const ConstMat& x, const ConstBf16Mat& wte) {
  const ConstBf16Mat xb = cast(first_, x.data(), x.extent(0), x.extent(1));
  gemm_bf16("N", "T", 1.f, xb, wte, 0.f, logits);
}

void Bf16Gemms::head_backward(const Mat& dx, const Mat& dwte, const ConstMat& dlogits,
                              const ConstMat& x, const ConstBf16Mat& wte) {
  const std::int64_t rows = dlogits.extent(0), V = dlogits.extent(1), C = x.extent(1);
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min(rows, elements_ / V));
  for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::int64_t n = std::min(chunk, rows - r0);
    const ConstBf16Mat d = cast(first_, dlogits.data() + r0 * V, n, V);
    gemm_bf16("N", "N", 1.f, d, wte, 0.f, Mat(dx.data() + r0 * C, n, C));
    const ConstBf16Mat xb = cast(second_, x.data() + r0 * C, n, C);
    gemm_bf16("T", "N", 1.f, d, xb, 1.f, dwte);
  }
}

}  // namespace fsdp::kernels
