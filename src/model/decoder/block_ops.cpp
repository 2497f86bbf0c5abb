// SPDX-License-Identifier: MIT
// The skeleton's sub-layers from the layers of each DecoderLayer (model/decoder/decoder_layer.hpp):
// the attention (norm, q|k|v projection, q/k norms, rotation, either attention kernel, output
// projection) and the dense MLP (norm, GELU or SwiGLU between two projections), forward and
// backward.
#include "model/decoder/buffer_views.hpp"
#include "model/decoder/skeleton.hpp"
#include "model/gelu.hpp"
#include "model/gemm/gemm.hpp"
#include "model/head_rmsnorm.hpp"
#include "model/residual.hpp"
#include "model/swiglu.hpp"

namespace fsdp {
namespace k = kernels;

using namespace skeleton_views;

void DecoderSkeleton::attn_compute(int l, const UnitParams& p, const Vec& res2_out) {
  const int BT = B_ * T_, C = C_;
  const DecoderLayer& d = layers_[std::size_t(l)];
  k::Bf16Gemms* bf16 = bf16_.get();
  LayerActivations& a = acts(l);
  const ConstMat x_in = cm(residual_[std::size_t(l)], BT, C);
  d.attn_norm.forward(m(a.ln1, BT, C), a.ln1_mean.vec(), a.ln1_rstd.vec(), x_in, p);
  // One GEMM for q | k | v (fp32 even when the attention reads bf16), then q and k's norms and
  // rotation in place.
  const TrackedBuffer& q32 = core_.bf16_qkv() ? qkv32_ : a.qkv;
  d.qkv->forward(m(q32, BT, QKV_), cm(a.ln1, BT, C), p, bf16);
  if (s_.qk_norm)
    k::head_rmsnorm_forward(m(q32, BT, QKV_), a.qk_raw.vec(), a.qk_rstd.vec(), p.vec(d.q_norm, D_),
                            p.vec(d.k_norm, D_), H_, KV_, D_, s_.eps);
  if (s_.positions == Positions::Rotary)
    k::rope_apply(m(q32, BT, QKV_), T_, 0, H_ + KV_, D_, rope_, false, doc_positions());
  core_.forward(q32, a.qkv, a.att.data(), a.atty.data(), doc_starts());
  d.o->forward(m(tmp_, BT, C), cm(a.atty, BT, QW_), p, bf16);
  const std::int64_t o_b = d.o->bias_for_consumer();
  if (o_b >= 0) k::residual_bias_forward(res2_out, residual_[std::size_t(l)].cvec(), tmp_.cvec(), p.vec(o_b, C));
  else k::residual_forward(res2_out, residual_[std::size_t(l)].cvec(), tmp_.cvec());
}

void DecoderSkeleton::mlp_compute(int l, const UnitParams& p, const Vec& x_out) {
  if (s_.moe.sparse_layer(l)) return moe_compute(l, p, x_out);
  const int BT = B_ * T_, C = C_;
  const DecoderLayer& d = layers_[std::size_t(l)];
  k::Bf16Gemms* bf16 = bf16_.get();
  LayerActivations& a = acts(l);
  const Vec res2 = res2_of(l);
  const ConstVec res2c(res2.data(), res2.extent(0));
  d.mlp_norm.forward(m(a.ln2, BT, C), a.ln2_mean.vec(), a.ln2_rstd.vec(), ConstMat(res2.data(), BT, C), p);
  d.up->forward(m(a.up, BT, UP_), cm(a.ln2, BT, C), p, bf16);
  // GPT-2's up bias is added by the GELU as it reads the product (SwiGLU has none).
  if (s_.mlp == MlpKind::Gelu) k::gelu_bias_forward(a.act.vec(), a.up.vec(), p.vec(d.up->bias_for_consumer(), F_));
  else k::swiglu_forward(m(a.act, BT, F_), cm(a.up, BT, UP_));
  d.down->forward(m(tmp_, BT, C), cm(a.act, BT, F_), p, bf16);
  const std::int64_t down_b = d.down->bias_for_consumer();
  if (down_b >= 0) k::residual_bias_forward(x_out, res2c, tmp_.cvec(), p.vec(down_b, C));
  else k::residual_forward(x_out, res2c, tmp_.cvec());
}

void DecoderSkeleton::mlp_grads(int l, const UnitParams& p, Vec g) {
  if (s_.moe.sparse_layer(l)) return moe_grads(l, p, g);
  const int BT = B_ * T_, C = C_;
  const DecoderLayer& d = layers_[std::size_t(l)];
  k::Bf16Gemms* bf16 = bf16_.get();
  LayerActivations& a = acts(l);
  const Vec res2 = res2_of(l);
  const ConstMat dout(dres_out_.data(), BT, C);
  d.down->backward(m(d_act_, BT, F_), g, dout, cm(a.act, BT, F_), p, bf16);
  if (s_.mlp == MlpKind::Gelu) k::gelu_backward(d_up_.vec(), a.up.cvec(), d_act_.cvec());
  else k::swiglu_backward(m(d_up_, BT, UP_), cm(d_act_, BT, F_), cm(a.up, BT, UP_));
  d.up->backward(m(d_ln_, BT, C), g, cm(d_up_, BT, UP_), cm(a.ln2, BT, C), p, bf16);
  d.mlp_norm.backward(m(d_tmp_, BT, C), g, cm(d_ln_, BT, C), ConstMat(res2.data(), BT, C), p,
                      a.ln2_mean.cvec(), a.ln2_rstd.cvec());
  k::residual_backward(d_tmp_.vec(), ConstVec(dres_out_.data(), dres_out_.extent(0)));  // d res2
}

void DecoderSkeleton::attn_grads(int l, const UnitParams& p, Vec g) {
  const int BT = B_ * T_, C = C_;
  const DecoderLayer& d = layers_[std::size_t(l)];
  k::Bf16Gemms* bf16 = bf16_.get();
  LayerActivations& a = acts(l);
  const Vec dx_in = dres_out_.data() == dres_a_.data() ? dres_b_.vec() : dres_a_.vec();
  d.o->backward(m(d_atty_, BT, QW_), g, cm(d_tmp_, BT, C), cm(a.atty, BT, QW_), p, bf16);
  core_.backward(a.qkv, a.att.data(), a.atty.data(), d_atty_.data(), d_qkv_.data(), doc_starts());
  // The gradients of q and k before their rotation (the transposed rotation), then before
  // their norms.
  if (s_.positions == Positions::Rotary)
    k::rope_apply(m(d_qkv_, BT, QKV_), T_, 0, H_ + KV_, D_, rope_, true, doc_positions());
  if (s_.qk_norm)
    k::head_rmsnorm_backward(m(d_qkv_, BT, QKV_), qk_frozen_ ? Vec() : gv(g, d.q_norm, D_),
                             qk_frozen_ ? Vec() : gv(g, d.k_norm, D_),
                             a.qk_raw.cvec(), a.qk_rstd.cvec(), p.vec(d.q_norm, D_),
                             p.vec(d.k_norm, D_), H_, KV_, D_);
  d.qkv->backward(m(d_ln_, BT, C), g, cm(d_qkv_, BT, QKV_), cm(a.ln1, BT, C), p, bf16);
  d.attn_norm.backward(Mat(dx_in.data(), BT, C), g, cm(d_ln_, BT, C), cm(residual_[std::size_t(l)], BT, C),
                       p, a.ln1_mean.cvec(), a.ln1_rstd.cvec());
  k::residual_backward(dx_in, d_tmp_.cvec());
  dres_out_ = dx_in;
}

}  // namespace fsdp
