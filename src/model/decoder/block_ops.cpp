// SPDX-License-Identifier: MIT
// The skeleton's layers: norms, linear layers in either weight layout, the attention
// sub-layer (q|k|v projection, q/k norms, rotation, either attention kernel, output
// projection) and the MLP sub-layer (GELU or SwiGLU), forward and backward.
#include "model/attention.hpp"
#include "model/decoder/buffer_views.hpp"
#include "model/decoder/skeleton.hpp"
#include "model/gelu.hpp"
#include "model/gemm/gemm.hpp"
#include "model/head_rmsnorm.hpp"
#include "model/layernorm.hpp"
#include "model/linear.hpp"
#include "model/residual.hpp"
#include "model/rmsnorm.hpp"
#include "model/swiglu.hpp"

namespace fsdp {
namespace k = kernels;

using namespace skeleton_views;

void DecoderSkeleton::norm_fwd(const Mat& out, const Vec& mean, const Vec& rstd, const ConstMat& x,
                               const UnitParams& p, std::int64_t w, std::int64_t b) {
  const int C = C_;
  if (s_.norm == NormKind::LayerNorm)
    k::layernorm_forward(out, mean, rstd, x, p.vec(w, C), p.vec(b, C));
  else
    k::rmsnorm_forward(out, rstd, x, p.vec(w, C), s_.eps);
}

void DecoderSkeleton::norm_bwd(const Mat& dx, Vec g, const ConstMat& dout, const ConstMat& x,
                               const UnitParams& p, std::int64_t w, std::int64_t b,
                               const TrackedBuffer& mean, const TrackedBuffer& rstd) {
  const int C = C_;
  if (s_.norm == NormKind::LayerNorm)
    k::layernorm_backward(dx, gv(g, w, C), gv(g, b, C), dout, x, p.vec(w, C), mean.cvec(),
                          rstd.cvec());
  else
    k::rmsnorm_backward(dx, gv(g, w, C), dout, x, p.vec(w, C), rstd.cvec());
}

// Input-major weights (GPT-2) run the linear kernels, with the bias in the GEMM when b >= 0;
// nn.Linear weights run y = x W^T (no biases on the architectures that use them).
void DecoderSkeleton::linear_fwd(const Mat& y, const ConstMat& x, const UnitParams& p,
                                 std::int64_t w, std::int64_t b, int in, int out) {
  if (!s_.input_major) {
    if (bf16_) return bf16_->head_forward(y, x, p.weight_bf16(w, out, in));
    return k::gemm("N", "T", 1.f, x, p.weight(w, out, in), 0.f, y);
  }
  if (!bf16_) {
    if (b >= 0) k::linear_forward(y, x, p.weight(w, in, out), p.vec(b, out));
    else k::linear_forward_no_bias(y, x, p.weight(w, in, out));
    return;
  }
  if (b >= 0) k::linear_bias_init(y, p.vec(b, out));
  bf16_->forward(y, x, p.weight_bf16(w, in, out), b >= 0 ? 1.f : 0.f);
}

void DecoderSkeleton::linear_bwd(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x,
                                 const UnitParams& p, std::int64_t w, std::int64_t b, int in,
                                 int out) {
  if (!s_.input_major) {
    const Mat dw = gm(g, w, out, in);
    if (bf16_) return bf16_->head_backward(dx, dw, dy, x, p.weight_bf16(w, out, in));
    k::gemm("N", "N", 1.f, dy, p.weight(w, out, in), 0.f, dx);
    return k::gemm("T", "N", 1.f, dy, x, 1.f, dw);
  }
  const Mat dw = gm(g, w, in, out);
  if (!bf16_) return k::linear_backward(dx, dw, gv(g, b, out), dy, x, p.weight(w, in, out));
  bf16_->backward(dx, dw, dy, x, p.weight_bf16(w, in, out));
  k::linear_bias_grad(gv(g, b, out), dy);
}

void DecoderSkeleton::attn_compute(int l, const UnitParams& p, const Vec& res2_out) {
  const int BT = B_ * T_, C = C_;
  const LayerOffsets& o = off_[std::size_t(l)];
  LayerActivations& a = acts(l);
  const ConstMat x_in = cm(residual_[std::size_t(l)], BT, C);
  norm_fwd(m(a.ln1, BT, C), a.ln1_mean.vec(), a.ln1_rstd.vec(), x_in, p, o.n1_w, o.n1_b);
  // One GEMM for q | k | v (fp32 even when the attention reads bf16), then q and k's norms and
  // rotation in place.
  const TrackedBuffer& q32 = qkv_bf16_ ? qkv32_ : a.qkv;
  linear_fwd(m(q32, BT, QKV_), cm(a.ln1, BT, C), p, o.qkv_w, o.qkv_b, C, QKV_);
  if (s_.qk_norm)
    k::head_rmsnorm_forward(m(q32, BT, QKV_), a.qk_raw.vec(), a.qk_rstd.vec(), p.vec(o.qn, D_),
                            p.vec(o.kn, D_), H_, KV_, D_, s_.eps);
  if (s_.positions == Positions::Rotary)
    k::rope_apply(m(q32, BT, QKV_), T_, 0, H_ + KV_, D_, rope_, false, doc_positions());
  attention_core_fwd(a);
  linear_fwd(m(tmp_, BT, C), cm(a.atty, BT, QW_), p, o.o_w, -1, QW_, C);
  if (o.o_b >= 0) k::residual_bias_forward(res2_out, residual_[std::size_t(l)].cvec(), tmp_.cvec(), p.vec(o.o_b, C));
  else k::residual_forward(res2_out, residual_[std::size_t(l)].cvec(), tmp_.cvec());
}

void DecoderSkeleton::attention_core_fwd(LayerActivations& a) {
  const k::AttnDims dims{B_, T_, H_, KV_, D_, doc_starts()};
  const std::int64_t kv = std::int64_t(KV_) * D_;
  const k::HeadRows out{a.atty.data(), QW_};
  if (qkv_bf16_) {
    cast_to_bf16(qkv32_.cvec(), a.qkv.bf16());
    const std::uint16_t* q = a.qkv.bf16().data();
    k::flash_attention_forward(dims, k::QkvRows<std::uint16_t>{q, q + QW_, q + QW_ + kv, QKV_, QKV_, QKV_},
                               out, a.att.data(), flash_);
  } else if (attention_ == AttentionPath::Fused) {
    const float* q = a.qkv.data();
    k::flash_attention_forward(dims, k::QkvRows<float>{q, q + QW_, q + QW_ + kv, QKV_, QKV_, QKV_}, out,
                               a.att.data(), flash_);
  } else {
    k::attention_forward(m(a.atty, B_ * T_, QW_), Att3(a.att.data(), B_ * H_, T_, T_),
                         cm(a.qkv, B_ * T_, QKV_), B_, T_, H_, KV_, doc_starts());
  }
}

void DecoderSkeleton::attention_core_bwd(LayerActivations& a) {
  const int BT = B_ * T_;
  const k::AttnDims dims{B_, T_, H_, KV_, D_, doc_starts()};
  const std::int64_t kv = std::int64_t(KV_) * D_;
  float* dq = d_qkv_.data();
  const k::QkvGrads grads{dq, dq + QW_, dq + QW_ + kv, QKV_, QKV_, QKV_};
  const k::ConstHeadRows out{a.atty.data(), QW_}, dout{d_atty_.data(), QW_};
  if (qkv_bf16_) {
    const std::uint16_t* q = a.qkv.bf16().data();
    k::flash_attention_backward(dims, k::QkvRows<std::uint16_t>{q, q + QW_, q + QW_ + kv, QKV_, QKV_, QKV_},
                                out, dout, a.att.data(), grads, flash_);
  } else if (attention_ == AttentionPath::Fused) {
    const float* q = a.qkv.data();
    k::flash_attention_backward(dims, k::QkvRows<float>{q, q + QW_, q + QW_ + kv, QKV_, QKV_, QKV_}, out,
                                dout, a.att.data(), grads, flash_);
  } else {
    k::attention_backward(m(d_qkv_, BT, QKV_), cm(d_atty_, BT, QW_),
                          ConstAtt3(a.att.data(), B_ * H_, T_, T_), cm(a.qkv, BT, QKV_), B_, T_,
                          H_, KV_, att_work_.vec(), doc_starts());
  }
}

void DecoderSkeleton::mlp_compute(int l, const UnitParams& p, const Vec& x_out) {
  if (s_.moe.sparse_layer(l)) return moe_compute(l, p, x_out);
  const int BT = B_ * T_, C = C_;
  const LayerOffsets& o = off_[std::size_t(l)];
  LayerActivations& a = acts(l);
  const Vec res2 = res2_of(l);
  const ConstVec res2c(res2.data(), res2.extent(0));
  norm_fwd(m(a.ln2, BT, C), a.ln2_mean.vec(), a.ln2_rstd.vec(), ConstMat(res2.data(), BT, C), p,
           o.n2_w, o.n2_b);
  linear_fwd(m(a.up, BT, UP_), cm(a.ln2, BT, C), p, o.up_w, -1, C, UP_);
  if (s_.mlp == MlpKind::Gelu) k::gelu_bias_forward(a.act.vec(), a.up.vec(), p.vec(o.up_b, F_));
  else k::swiglu_forward(m(a.act, BT, F_), cm(a.up, BT, UP_));
  linear_fwd(m(tmp_, BT, C), cm(a.act, BT, F_), p, o.down_w, -1, F_, C);
  if (o.down_b >= 0) k::residual_bias_forward(x_out, res2c, tmp_.cvec(), p.vec(o.down_b, C));
  else k::residual_forward(x_out, res2c, tmp_.cvec());
}

void DecoderSkeleton::mlp_grads(int l, const UnitParams& p, Vec g) {
  if (s_.moe.sparse_layer(l)) return moe_grads(l, p, g);
  const int BT = B_ * T_, C = C_;
  const LayerOffsets& o = off_[std::size_t(l)];
  LayerActivations& a = acts(l);
  const Vec res2 = res2_of(l);
  const ConstMat dout(dres_out_.data(), BT, C);
  linear_bwd(m(d_act_, BT, F_), g, dout, cm(a.act, BT, F_), p, o.down_w, o.down_b, F_, C);
  if (s_.mlp == MlpKind::Gelu) k::gelu_backward(d_up_.vec(), a.up.cvec(), d_act_.cvec());
  else k::swiglu_backward(m(d_up_, BT, UP_), cm(d_act_, BT, F_), cm(a.up, BT, UP_));
  linear_bwd(m(d_ln_, BT, C), g, cm(d_up_, BT, UP_), cm(a.ln2, BT, C), p, o.up_w, o.up_b, C, UP_);
  norm_bwd(m(d_tmp_, BT, C), g, cm(d_ln_, BT, C), ConstMat(res2.data(), BT, C), p, o.n2_w, o.n2_b,
           a.ln2_mean, a.ln2_rstd);
  k::residual_backward(d_tmp_.vec(), ConstVec(dres_out_.data(), dres_out_.extent(0)));  // d res2
}

void DecoderSkeleton::attn_grads(int l, const UnitParams& p, Vec g) {
  const int BT = B_ * T_, C = C_;
  const LayerOffsets& o = off_[std::size_t(l)];
  LayerActivations& a = acts(l);
  const Vec dx_in = dres_out_.data() == dres_a_.data() ? dres_b_.vec() : dres_a_.vec();
  linear_bwd(m(d_atty_, BT, QW_), g, cm(d_tmp_, BT, C), cm(a.atty, BT, QW_), p, o.o_w, o.o_b, QW_, C);
  attention_core_bwd(a);
  // The gradients of q and k before their rotation (the transposed rotation), then before
  // their norms.
  if (s_.positions == Positions::Rotary)
    k::rope_apply(m(d_qkv_, BT, QKV_), T_, 0, H_ + KV_, D_, rope_, true, doc_positions());
  if (s_.qk_norm)
    k::head_rmsnorm_backward(m(d_qkv_, BT, QKV_), gv(g, o.qn, D_), gv(g, o.kn, D_), a.qk_raw.cvec(),
                             a.qk_rstd.cvec(), p.vec(o.qn, D_), p.vec(o.kn, D_), H_, KV_, D_);
  linear_bwd(m(d_ln_, BT, C), g, cm(d_qkv_, BT, QKV_), cm(a.ln1, BT, C), p, o.qkv_w, o.qkv_b, C, QKV_);
  norm_bwd(Mat(dx_in.data(), BT, C), g, cm(d_ln_, BT, C), cm(residual_[std::size_t(l)], BT, C), p,
           o.n1_w, o.n1_b, a.ln1_mean, a.ln1_rstd);
  k::residual_backward(dx_in, d_tmp_.cvec());
  dres_out_ = dx_in;
}

}  // namespace fsdp
