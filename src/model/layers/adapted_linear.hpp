// SPDX-License-Identifier: MIT
// A frozen projection with low-rank adapters (LoRA, Hu et al. 2021; PEFT's LoraLayer): y = x W^T
// (+ b) + scale * (x A^T) B^T on the columns each adapter covers. One GEMM of the base may hold
// several Hugging Face modules side by side (Llama's q | k | v, gate | up): each module's
// adapter adds to its own columns of the output. The base's weight gradient is never computed
// (its part has no gradient buffer); backward passes dy through W and through each adapter to
// dx and accumulates the adapters' gradients:
//   h = x A^T (recomputed: r columns, cheaper than keeping one per layer),
//   dB += scale dy_c^T h,   dh = scale dy_c B,   dA += dh^T x,   dx += dh A.
// The adapters' GEMMs are fp32 whatever fsdp.gemm_dtype says: r is small, and the adapters'
// own values are the master weights.
#pragma once
#include <memory>
#include <vector>

#include "model/layers/linear_layer.hpp"

namespace fsdp {

class AdaptedLinear final : public LinearLayer {
 public:
  struct Adapter {
    std::int64_t a = -1, b = -1;            // A [r, in], B [cols, r]: offsets in the unit's parameters
    std::int64_t grad_a = -1, grad_b = -1;  // ... and in its gradient buffer
    int col = 0, cols = 0;                  // the output columns it adds to
  };
  // h, dh: the skeleton's scratch, [rows, r] each, shared by every adapted layer (one runs at a
  // time).
  AdaptedLinear(std::unique_ptr<Linear> base, int rank, float scale, std::vector<Adapter> adapters,
                Mat h, Mat dh);

  void forward(const Mat& y, const ConstMat& x, const UnitParams& p,
               kernels::Bf16Gemms* bf16) const override;
  void backward(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x, const UnitParams& p,
                kernels::Bf16Gemms* bf16) const override;
  std::int64_t bias_for_consumer() const override { return base_->bias_for_consumer(); }
  LayerFlops flops(std::int64_t rows) const override;

 private:
  std::unique_ptr<Linear> base_;
  int r_;
  float scale_;
  std::vector<Adapter> adapters_;
  Mat h_, dh_;
};

}  // namespace fsdp
