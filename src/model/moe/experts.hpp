// SPDX-License-Identifier: MIT
// The experts' SwiGLU MLPs on their rows (model/moe/dispatch.hpp groups them by expert): per
// expert with rows, one GEMM for gate and up together (its gate_proj [F, C] and up_proj [F, C]
// stored adjacent, as Llama's MLP), the gate (model/swiglu.hpp), and down_proj [C, F]. An expert
// no token chose costs nothing. Backward assigns dxe and accumulates the weights' gradients.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/types.hpp"

namespace fsdp::kernels {

// Expert e's weights and gradients: gate and up at gu[e] ([2F, C]), down at down[e] ([C, F]).
struct ExpertTensors {
  std::vector<float*> gu, down;
};
// Expert e's weights as the kernels read them: each view may be valid only until the next call
// (a bf16 unit widens one weight at a time: model/unit_params.hpp), so the kernels ask for each
// just before its GEMM.
struct ExpertWeights {
  std::function<ConstMat(int e)> gu, down;
  static ExpertWeights of(const ExpertTensors& t, int C, int F);  // plain float tensors
};

// rows [offsets[e], offsets[e + 1]) of xe [R, C] are expert e's; gu_act [R, 2F] and h [R, F]
// keep the gate/up outputs and the gated product for backward; ye [R, C] is assigned.
void experts_forward(const Mat& ye, const Mat& gu_act, const Mat& h, const ConstMat& xe,
                     const std::vector<std::int64_t>& offsets, const ExpertWeights& w, int F);
// dxe [R, C] assigned; dgu [R, 2F] and dh [R, F] are scratch; grads accumulate (+=).
void experts_backward(const Mat& dxe, const Mat& dgu, const Mat& dh, const ConstMat& dye,
                      const ConstMat& xe, const ConstMat& gu_act, const ConstMat& h,
                      const std::vector<std::int64_t>& offsets, const ExpertWeights& w,
                      const ExpertTensors& grads, int F);

}  // namespace fsdp::kernels
