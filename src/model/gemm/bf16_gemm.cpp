// SPDX-License-Identifier: MIT
#include "model/gemm/bf16_gemm.hpp"

#include <algorithm>
#include <string>

#include "core/bf16.hpp"
#include "core/check.hpp"
#include "model/gemm/cublas_gemm.hpp"
#include "model/gemm/gemm.hpp"
#include "model/gemm/gemm_paths.hpp"
#include "model/gemm/onednn_matmul.hpp"

namespace fsdp::kernels {

namespace {

gemm_paths::Shape shape_of(const char* ta, const char* tb, const ConstBf16Mat& a, const Mat& c) {
  return {*ta, *tb, std::int64_t(c.extent(0)), std::int64_t(c.extent(1)),
          std::int64_t(*ta == 'N' ? a.extent(1) : a.extent(0)), true};
}

}  // namespace

#if !defined(KOKKOS_ENABLE_CUDA)
namespace {

// A row-major operand's row stride (a one-row view may carry any stride).
std::int64_t ld(const ConstBf16Mat& m) {
  return m.extent(0) > 1 ? std::int64_t(m.stride(0)) : std::int64_t(m.extent(1));
}

// Where oneDNN has no bf16 kernel: both operands widened into scratch that grows to the largest
// operand seen (the tied head's weights, V x C) and stays, then the fp32 GEMM.
ConstMat widened(const ConstBf16Mat& m, FlatView& scratch, const char* which) {
  if (m.extent(0) > 1 && m.stride(0) != m.extent(1))
    fatal(std::string("gemm_bf16 (widening): operand ") + which +
          " is a window of a wider matrix; the widening path takes whole matrices");
  const std::int64_t n = std::int64_t(m.extent(0)) * std::int64_t(m.extent(1));
  if (std::int64_t(scratch.extent(0)) < n)
    scratch = FlatView(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gemm_bf16::widened"), n);
  widen_bf16(ConstBf16Vec(m.data(), n), Vec(scratch.data(), n));
  return ConstMat(scratch.data(), m.extent(0), m.extent(1));
}

bool use_onednn() { return onednn::support(onednn::Inputs::BF16).fast; }

}  // namespace

void gemm_bf16(const char* ta, const char* tb, float alpha, const ConstBf16Mat& a,
               const ConstBf16Mat& b, float beta, const Mat& c, GemmRows rows) {
  const gemm_paths::Shape shape = shape_of(ta, tb, a, c);
  if (use_onednn()) {
    static const std::string& fixed =
        gemm_paths::intern("oneDNN " + onednn::support(onednn::Inputs::BF16).impl);
    static const std::string& ragged = []() -> const std::string& {
      const onednn::Support& r = onednn::ragged_support(onednn::Inputs::BF16);
      if (!r.fast) return fixed;  // onednn::matmul makes a primitive per row count then
      return gemm_paths::intern("oneDNN " + r.impl + " (rows at run time)");
    }();
    const gemm_paths::Scope logged(shape, rows == GemmRows::Ragged ? ragged : fixed);
#if defined(FSDP_SPACE_CHECK)
    const space_check::KernelScope on_device;  // oneDNN reads the emulated device's memory
#endif
    onednn::matmul(onednn::Inputs::BF16, shape.ta, shape.tb, shape.M, shape.N, shape.K, alpha,
                   a.data(), ld(a), b.data(), ld(b), beta, c.data(), std::int64_t(c.stride(0)), rows);
    return;
  }
  static const std::string& path = gemm_paths::intern("widened to fp32, " + gemm_paths::fp32_path());
  const gemm_paths::Scope logged(shape, path);
  Kokkos::Profiling::pushRegion("gemm_bf16::widened");
  static FlatView first, second;
  static const bool hooked = [] {  // a View must not outlive Kokkos::finalize
    Kokkos::push_finalize_hook([] { first = second = FlatView(); });
    return true;
  }();
  (void)hooked;
  const ConstMat wa = widened(a, first, "A"), wb = widened(b, second, "B");
  gemm(ta, tb, alpha, wa, wb, beta, c);  // inside this call's Scope: logged as the bf16 call
  Kokkos::Profiling::popRegion();
}

bool gemm_bf16_computes() { return use_onednn(); }

std::string gemm_bf16_path() {
  const onednn::Support& s = onednn::support(onednn::Inputs::BF16);
  if (s.fast) return "bf16 inputs, fp32 accumulation: oneDNN matmul " + s.impl;
  return "bf16 inputs, fp32 accumulation: widened to fp32 (oneDNN bf16 matmul: " + s.impl + ")";
}
#else
void gemm_bf16(const char* ta, const char* tb, float alpha, const ConstBf16Mat& a,
               const ConstBf16Mat& b, float beta, const Mat& c, GemmRows) {
  static const std::string& path = gemm_paths::intern("cuBLAS GemmEx bf16 tensor cores");
  const gemm_paths::Scope logged(shape_of(ta, tb, a, c), path);
  cublas_gemm_bf16(ta, tb, alpha, a, b, beta, c);
}

bool gemm_bf16_computes() { return true; }

std::string gemm_bf16_path() { return "bf16 inputs, fp32 accumulation: cuBLAS tensor cores"; }
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
  if (!dw.data()) return;  // a frozen weight: its gradient GEMM is skipped
  const ConstBf16Mat x = cast(second_, inp.data(), inp.extent(0), inp.extent(1));
  gemm_bf16("T", "N", 1.f, x, d, 1.f, dw);
}

void Bf16Gemms::head_forward(const Mat& logits, const ConstMat& x, const ConstBf16Mat& emb,
                             GemmRows row_kind) {
  const ConstBf16Mat xb = cast(first_, x.data(), x.extent(0), x.extent(1));
  gemm_bf16("N", "T", 1.f, xb, emb, 0.f, logits, row_kind);
}

void Bf16Gemms::head_backward(const Mat& dx, const Mat& demb, const ConstMat& dlogits,
                              const ConstMat& x, const ConstBf16Mat& emb, GemmRows row_kind) {
  const std::int64_t rows = dlogits.extent(0), V = dlogits.extent(1), C = x.extent(1);
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min(rows, elements_ / V));
  for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::int64_t n = std::min(chunk, rows - r0);
    const ConstBf16Mat d = cast(first_, dlogits.data() + r0 * V, n, V);
    gemm_bf16("N", "N", 1.f, d, emb, 0.f, Mat(dx.data() + r0 * C, n, C), row_kind);
    if (!demb.data()) continue;  // a frozen table
    const ConstBf16Mat xb = cast(second_, x.data() + r0 * C, n, C);
    gemm_bf16("T", "N", 1.f, d, xb, 1.f, demb, row_kind);
  }
}

}  // namespace fsdp::kernels
