// SPDX-License-Identifier: MIT
// The experts' SwiGLU MLPs on their rows (model/experts/dispatch.hpp groups them by expert): per
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

// An expert's two linear layers as the kernels call them, which = 0 its gate|up [2F, C], 1 its
// down [C, F] (nn.Linear's [out, in]): forward y = x W^T; backward dx = dy W (assigned) and
// dW += dy^T x into the expert's gradient. The model supplies them (fp32 GEMMs on its weights,
// or bf16 GEMMs on a bf16 unit: model/gemm/bf16_gemm.hpp), so a weight is read only inside its call.
struct ExpertLinear {
  std::function<void(int e, int which, const Mat& y, const ConstMat& x)> forward;
  std::function<void(int e, int which, const Mat& dx, const ConstMat& dy, const ConstMat& x)> backward;
  // fp32 GEMMs on plain float tensors (the weights and the gradients they accumulate into).
  static ExpertLinear of(const ExpertTensors& w, const ExpertTensors& grads, int C, int F);
};

// rows [offsets[e], offsets[e + 1]) of xe [R, C] are expert e's; gu_act [R, 2F] and h [R, F]
// keep the gate/up outputs and the gated product for backward; ye [R, C] is assigned.
void experts_forward(const Mat& ye, const Mat& gu_act, const Mat& h, const ConstMat& xe,
                     const std::vector<std::int64_t>& offsets, const ExpertLinear& lin);
// dxe [R, C] assigned (it may be dye itself: each expert reads its rows of dye before it writes
// its rows of dxe); dgu [R, 2F] and dh [R, F] are scratch; the weights' gradients accumulate.
void experts_backward(const Mat& dxe, const Mat& dgu, const Mat& dh, const ConstMat& dye,
                      const ConstMat& xe, const ConstMat& gu_act, const ConstMat& h,
                      const std::vector<std::int64_t>& offsets, const ExpertLinear& lin);

}  // namespace fsdp::kernels
