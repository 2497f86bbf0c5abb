// SPDX-License-Identifier: MIT
#include "model/layers/linear_layer.hpp"

#include <stdexcept>

#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"
#include "model/linear.hpp"

namespace fsdp {
namespace k = kernels;

namespace {
Mat grad_mat(Vec g, std::int64_t off, std::int64_t rows, std::int64_t cols) {
  return Mat(g.data() + off, rows, cols);
}
}  // namespace

Linear::Linear(int in, int out, Where at, Bias bias) : LinearLayer(in, out), at_(at), bias_(bias) {
  // The bf16 GEMM of an [out, in] weight has no beta to start from a bias; no architecture
  // with that layout has biases (Qwen2's q|k|v would be the first).
  if (!at_.input_major && at_.bias >= 0)
    throw std::logic_error("Linear: a bias on an [out, in] weight is not implemented");
}

// Input-major weights (GPT-2) run the linear kernels, with the bias in the GEMM's beta;
// nn.Linear weights run y = x W^T.
void Linear::forward(const Mat& y, const ConstMat& x, const UnitParams& p,
                     k::Bf16Gemms* bf16) const {
  const int I = in(), O = out();
  if (!at_.input_major) {
    if (bf16) return bf16->head_forward(y, x, p.weight_bf16(at_.weight, O, I));
    return k::gemm("N", "T", 1.f, x, p.weight(at_.weight, O, I), 0.f, y);
  }
  const bool bias = at_.bias >= 0 && bias_ == Bias::InForward;
  if (!bf16) {
    if (bias) k::linear_forward(y, x, p.weight(at_.weight, I, O), p.vec(at_.bias, O));
    else k::linear_forward_no_bias(y, x, p.weight(at_.weight, I, O));
    return;
  }
  if (bias) k::linear_bias_init(y, p.vec(at_.bias, O));
  bf16->forward(y, x, p.weight_bf16(at_.weight, I, O), bias ? 1.f : 0.f);
}

void Linear::backward(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x,
                      const UnitParams& p, k::Bf16Gemms* bf16) const {
  const int I = in(), O = out();
  if (at_.frozen) {  // dx alone (Bf16Gemms skips an empty weight gradient)
    if (!at_.input_major) {
      if (bf16) return bf16->head_backward(dx, Mat(), dy, x, p.weight_bf16(at_.weight, O, I));
      return k::gemm("N", "N", 1.f, dy, p.weight(at_.weight, O, I), 0.f, dx);
    }
    if (bf16) return bf16->backward(dx, Mat(), dy, x, p.weight_bf16(at_.weight, I, O));
    return k::gemm("N", "T", 1.f, dy, p.weight(at_.weight, I, O), 0.f, dx);
  }
  if (!at_.input_major) {
    const Mat dw = grad_mat(g, at_.weight, O, I);
    if (bf16) return bf16->head_backward(dx, dw, dy, x, p.weight_bf16(at_.weight, O, I));
    k::gemm("N", "N", 1.f, dy, p.weight(at_.weight, O, I), 0.f, dx);
    return k::gemm("T", "N", 1.f, dy, x, 1.f, dw);
  }
  const Mat dw = grad_mat(g, at_.weight, I, O);
  const Vec db = at_.bias >= 0 ? Vec(g.data() + at_.bias, std::size_t(O)) : Vec();
  if (!bf16) {
    if (at_.bias >= 0) return k::linear_backward(dx, dw, db, dy, x, p.weight(at_.weight, I, O));
    k::gemm("N", "T", 1.f, dy, p.weight(at_.weight, I, O), 0.f, dx);
    return k::gemm("T", "N", 1.f, x, dy, 1.f, dw);
  }
  bf16->backward(dx, dw, dy, x, p.weight_bf16(at_.weight, I, O));
  if (at_.bias >= 0) k::linear_bias_grad(db, dy);
}

void Linear::backward_adding(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x,
                             const UnitParams& p) const {
  if (at_.input_major || at_.bias >= 0)
    throw std::logic_error("Linear::backward_adding: an [out, in] weight without a bias only");
  const int I = in(), O = out();
  k::gemm("N", "N", 1.f, dy, p.weight(at_.weight, O, I), 1.f, dx);
  k::gemm("T", "N", 1.f, dy, x, 1.f, grad_mat(g, at_.weight, O, I));
}

LayerFlops Linear::flops(std::int64_t rows) const {
  const double params = double(in()) * out() + (at_.bias >= 0 ? out() : 0);
  return at_.frozen ? frozen_flops(params, double(rows)) : param_flops(params, double(rows));
}

}  // namespace fsdp
