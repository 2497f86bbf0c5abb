// SPDX-License-Identifier: MIT
// Linear layer with Hugging Face Conv1D layout: weight [IC, OC] input-major, so out = inp @ W + b.
// N = rows (B*T), IC = input channels, OC = output channels.
// Backward assigns dinp (=) and accumulates dW, db (+=).
#pragma once
#include <type_traits>

#include "core/types.hpp"
#include "model/gemm/gemm.hpp"

namespace fsdp::kernels {

// out's rows = b: what a GEMM with beta = 1 then adds the product to.
inline void linear_bias_init(const Mat& out, const ConstVec& b) {
  const int N = out.extent(0), OC = out.extent(1);
  Kokkos::parallel_for(
      "linear::bias", Kokkos::RangePolicy<ExecSpace>(0, N), KOKKOS_LAMBDA(const int i) {
        for (int o = 0; o < OC; ++o) out(i, o) = b(o);
      });
}

inline void linear_forward(const Mat& out, const ConstMat& inp, const ConstMat& w,
                           const ConstVec& b) {
  linear_bias_init(out, b);
  gemm("N", "N", 1.f, inp, w, 1.f, out);
}

// out = inp @ W without the bias: for a consumer that adds the bias as it reads out
// (residual_bias_forward, gelu_bias_forward), which saves a pass over out.
inline void linear_forward_no_bias(const Mat& out, const ConstMat& inp, const ConstMat& w) {
  gemm("N", "N", 1.f, inp, w, 0.f, out);
}

// db += the column sums of dout.
inline void linear_bias_grad(const Vec& db, const ConstMat& dout) {
  const int N = dout.extent(0), OC = dout.extent(1);
  // A block of output channels per thread, rows in order: deterministic without atomics. On a
  // CPU a 128-channel block is a contiguous, vectorized read of each row; on a GPU one channel
  // per thread makes neighbouring threads read neighbouring addresses.
  constexpr int CB = std::is_same_v<ExecSpace, HostExecSpace> ? 128 : 1;
  Kokkos::parallel_for(
      "linear::bias_grad", Kokkos::RangePolicy<ExecSpace>(0, (OC + CB - 1) / CB),
      KOKKOS_LAMBDA(const int blk) {
        const int o0 = blk * CB, no = OC - o0 < CB ? OC - o0 : CB;
        float acc[CB] = {};
        for (int i = 0; i < N; ++i) {
          const float* di = &dout(i, o0);
          for (int o = 0; o < no; ++o) acc[o] += di[o];
        }
        for (int o = 0; o < no; ++o) db(o0 + o) += acc[o];
      });
}

inline void linear_backward(const Mat& dinp, const Mat& dw, const Vec& db, const ConstMat& dout,
                            const ConstMat& inp, const ConstMat& w) {
  gemm("N", "T", 1.f, dout, w, 0.f, dinp);
  gemm("T", "N", 1.f, inp, dout, 1.f, dw);
  linear_bias_grad(db, dout);
}

}  // namespace fsdp::kernels
