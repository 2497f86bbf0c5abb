// SPDX-License-Identifier: MIT
#include "model/gpt2/gpt2.hpp"

#include <algorithm>

#include "model/attention.hpp"
#include "model/cross_entropy.hpp"
#include "model/gpt2/gpt2_arch.hpp"
#include "model/embedding.hpp"
#include "model/head_outputs.hpp"
#include "model/gelu.hpp"
#include "model/layernorm.hpp"
#include "model/linear.hpp"
#include "model/residual.hpp"

namespace fsdp {
namespace k = kernels;
using MC = MemCategory;

BlockActivations::BlockActivations(MemoryTracker& t, const std::string& tag, int B, int T, int C,
                                   int H, AttentionPath path, bool qkv_bf16)
    : ln1(t, tag + "::ln1", std::int64_t(B) * T * C, MC::Activations),
      ln1_mean(t, tag + "::ln1_mean", std::int64_t(B) * T, MC::Activations),
      ln1_rstd(t, tag + "::ln1_rstd", std::int64_t(B) * T, MC::Activations),
      qkv(t, tag + "::qkv", std::int64_t(B) * T * 3 * C, MC::Activations, MemSpace::Device,
          qkv_bf16 ? Dtype::BF16 : Dtype::F32),
      att(t, tag + "::att",
          std::int64_t(B) * H * T * (path == AttentionPath::Fused ? 1 : T), MC::Activations),
      atty(t, tag + "::atty", std::int64_t(B) * T * C, MC::Activations),
      res2(t, tag + "::res2", std::int64_t(B) * T * C, MC::Activations),
      ln2(t, tag + "::ln2", std::int64_t(B) * T * C, MC::Activations),
      ln2_mean(t, tag + "::ln2_mean", std::int64_t(B) * T, MC::Activations),
      ln2_rstd(t, tag + "::ln2_rstd", std::int64_t(B) * T, MC::Activations),
      fch(t, tag + "::fch", std::int64_t(B) * T * 4 * C, MC::Activations),
      fch_gelu(t, tag + "::fch_gelu", std::int64_t(B) * T * 4 * C, MC::Activations) {}

namespace {
BlockOffsets offsets_of(const std::vector<UnitLayout>& units, bool sublayer) {
  if (units.size() < 3) return {};  // no block
  return block_offsets(units[1], units[sublayer ? 2 : 1]);
}
}  // namespace

namespace {
// A bf16 qkv [B*T, 3C] buffer as the fused kernel's rows: q | k | v.
k::QkvRows<std::uint16_t> packed_qkv16(const TrackedBuffer& qkv, std::int64_t C) {
  const std::uint16_t* p = qkv.bf16().data();
  return {p, p + C, p + 2 * C, 3 * C, 3 * C, 3 * C};
}
}  // namespace

Gpt2::Gpt2(const ModelConfig& cfg, int micro_batch, MemoryTracker& tracker, bool bf16_attention)
    : cfg_(cfg),
      units_(gpt2_units(cfg)),
      off_(offsets_of(units_, cfg.sublayer_units)),
      B_(micro_batch),
      T_(cfg.block_size),
      C_(cfg.n_embd),
      H_(cfg.n_head),
      V_(cfg.vocab_size),
      checkpointing_(cfg.activation_checkpointing == "blocks"),
      attention_(resolve_attention(cfg.attention, cfg.block_size)),
      qkv_bf16_(bf16_attention && attention_ == AttentionPath::Fused),
      flash_(kernels::flash_plan(cfg.n_embd / cfg.n_head)) {
  const std::int64_t BT = std::int64_t(B_) * T_, BTC = BT * C_;
  inputs_ = TokenView("gpt2::inputs", BT);
  targets_ = TokenView("gpt2::targets", BT);
  for (int l = 0; l <= cfg.n_layer; ++l)
    residual_.emplace_back(tracker, "gpt2::residual" + std::to_string(l), BTC, MC::Activations);
  const int n_acts = checkpointing_ ? 1 : cfg.n_layer;
  for (int l = 0; l < n_acts; ++l)
    acts_.push_back(
        std::make_unique<BlockActivations>(tracker, "h." + std::to_string(l), B_, T_, C_, H_,
                                           attention_, qkv_bf16_));
  // Checkpointed sub-layers: the MLP's recompute starts from the attention's output, which is
  // kept per block as the stream between the two units.
  if (checkpointing_ && cfg.sublayer_units)
    for (int l = 0; l < cfg.n_layer; ++l)
      mid_.emplace_back(tracker, "h." + std::to_string(l) + "::res2", BTC, MC::Activations);
  lnf_ = TrackedBuffer(tracker, "gpt2::lnf", BTC, MC::Activations);
  lnf_mean_ = TrackedBuffer(tracker, "gpt2::lnf_mean", BT, MC::Activations);
  lnf_rstd_ = TrackedBuffer(tracker, "gpt2::lnf_rstd", BT, MC::Activations);
  logits_ = TrackedBuffer(tracker, "gpt2::logits", BT * V_, MC::Activations);
  losses_ = TrackedBuffer(tracker, "gpt2::losses", BT, MC::Activations);
  if (qkv_bf16_) qkv32_ = TrackedBuffer(tracker, "gpt2::qkv32", 3 * BTC, MC::Activations);
  tmp_ = TrackedBuffer(tracker, "gpt2::tmp", BTC, MC::Activations);
  dres_a_ = TrackedBuffer(tracker, "gpt2::dres_a", BTC, MC::Activations);
  dres_b_ = TrackedBuffer(tracker, "gpt2::dres_b", BTC, MC::Activations);
  d_ln_ = TrackedBuffer(tracker, "gpt2::d_ln", BTC, MC::Activations);
  d_tmp_ = TrackedBuffer(tracker, "gpt2::d_tmp", BTC, MC::Activations);
  d_qkv_ = TrackedBuffer(tracker, "gpt2::d_qkv", 3 * BTC, MC::Activations);
  d_atty_ = TrackedBuffer(tracker, "gpt2::d_atty", BTC, MC::Activations);
  d_fch_ = TrackedBuffer(tracker, "gpt2::d_fch", 4 * BTC, MC::Activations);
  d_fchg_ = TrackedBuffer(tracker, "gpt2::d_fch_gelu", 4 * BTC, MC::Activations);
  if (attention_ == AttentionPath::Materialized)
    att_work_ =
        TrackedBuffer(tracker, "gpt2::att_work", k::attention_work_size(T_, H_), MC::Activations);
}

void Gpt2::set_batch(const std::int32_t* inputs, const std::int32_t* targets) {
  const std::size_t BT = std::size_t(B_) * T_;
  Kokkos::deep_copy(inputs_, HostConstTokens(inputs, BT));
  Kokkos::deep_copy(targets_, HostConstTokens(targets, BT));
}

namespace {
ConstMat cm(const TrackedBuffer& b, std::int64_t rows, std::int64_t cols) {
  return ConstMat(b.data(), rows, cols);
}
Mat m(const TrackedBuffer& b, std::int64_t rows, std::int64_t cols) {
  return Mat(b.data(), rows, cols);
}
Mat gm(Vec g, std::int64_t off, std::int64_t rows, std::int64_t cols) {
  return Mat(g.data() + off, rows, cols);
}
Vec gv(Vec g, std::int64_t off, std::int64_t n) { return Vec(g.data() + off, n); }
}  // namespace

void Gpt2::embed_forward(const UnitParams& emb) {
  const int BT = B_ * T_;
  k::embedding_forward(m(residual_[0], BT, C_), inputs_, emb.weight(0, V_, C_),
                       emb.table(std::int64_t(V_) * C_, T_, C_), T_);
}

void Gpt2::use_bf16_gemms(MemoryTracker& tracker) {
  const std::int64_t BT = std::int64_t(B_) * T_;
  bf16_ = std::make_unique<k::Bf16Gemms>(tracker, k::bf16_gemm_scratch_elements(BT, C_, V_));
}

void Gpt2::linear_fwd(const Mat& out, const ConstMat& inp, const UnitParams& p, std::int64_t w_off,
                      std::int64_t bias_off, int ic, int oc) {
  if (!bf16_) {
    if (bias_off >= 0) k::linear_forward(out, inp, p.weight(w_off, ic, oc), p.vec(bias_off, oc));
    else k::linear_forward_no_bias(out, inp, p.weight(w_off, ic, oc));
    return;
  }
  if (bias_off >= 0) k::linear_bias_init(out, p.vec(bias_off, oc));
  bf16_->forward(out, inp, p.weight_bf16(w_off, ic, oc), bias_off >= 0 ? 1.f : 0.f);
}

void Gpt2::linear_bwd(const Mat& dinp, const Mat& dw, const Vec& db, const ConstMat& dout,
                      const ConstMat& inp, const UnitParams& p, std::int64_t w_off, int ic, int oc) {
  if (!bf16_) return k::linear_backward(dinp, dw, db, dout, inp, p.weight(w_off, ic, oc));
  bf16_->backward(dinp, dw, dout, inp, p.weight_bf16(w_off, ic, oc));
  k::linear_bias_grad(db, dout);
}

Vec Gpt2::res2_of(int l) { return mid_.empty() ? acts(l).res2.vec() : mid_[std::size_t(l)].vec(); }

void Gpt2::attn_compute(int l, const UnitParams& p, BlockActivations& a, const Vec& res2_out) {
  const int BT = B_ * T_, C = C_;
  const auto& o = off_;
  const ConstMat x_in = cm(residual_[l], BT, C);
  k::layernorm_forward(m(a.ln1, BT, C), a.ln1_mean.vec(), a.ln1_rstd.vec(), x_in, p.vec(o.ln1_w, C),
                       p.vec(o.ln1_b, C));
  const k::AttnDims dims{B_, T_, H_, H_, C / H_};
  if (qkv_bf16_) {  // c_attn writes fp32; the attention (and its backward) read the bf16 cast
    linear_fwd(m(qkv32_, BT, 3 * C), cm(a.ln1, BT, C), p, o.attn_w, o.attn_b, C, 3 * C);
    cast_to_bf16(qkv32_.cvec(), a.qkv.bf16());
    k::flash_attention_forward(dims, packed_qkv16(a.qkv, C), {a.atty.data(), C}, a.att.data(),
                               flash_);
  } else {
    linear_fwd(m(a.qkv, BT, 3 * C), cm(a.ln1, BT, C), p, o.attn_w, o.attn_b, C, 3 * C);
    if (attention_ == AttentionPath::Fused)
      k::flash_attention_forward(dims, k::packed_qkv(cm(a.qkv, BT, 3 * C)), {a.atty.data(), C},
                                 a.att.data(), flash_);
    else
      k::attention_forward(m(a.atty, BT, C), Att3(a.att.data(), B_ * H_, T_, T_),
                           cm(a.qkv, BT, 3 * C), B_, T_, H_);
  }
  // The projections' biases are added by the kernels that read their outputs (the residual
  // adds, the GELU): one pass less over each output.
  linear_fwd(m(tmp_, BT, C), cm(a.atty, BT, C), p, o.proj_w, -1, C, C);
  k::residual_bias_forward(res2_out, residual_[l].cvec(), tmp_.cvec(), p.vec(o.proj_b, C));
}

void Gpt2::mlp_compute(int l, const UnitParams& p, BlockActivations& a, const Vec& x_out) {
  const int BT = B_ * T_, C = C_;
  const auto& o = off_;
  const Vec res2 = res2_of(l);
  k::layernorm_forward(m(a.ln2, BT, C), a.ln2_mean.vec(), a.ln2_rstd.vec(),
                       ConstMat(res2.data(), BT, C), p.vec(o.ln2_w, C), p.vec(o.ln2_b, C));
  linear_fwd(m(a.fch, BT, 4 * C), cm(a.ln2, BT, C), p, o.fc_w, -1, C, 4 * C);
  k::gelu_bias_forward(a.fch_gelu.vec(), a.fch.vec(), p.vec(o.fc_b, 4 * C));
  linear_fwd(m(tmp_, BT, C), cm(a.fch_gelu, BT, 4 * C), p, o.fcproj_w, -1, 4 * C, C);
  k::residual_bias_forward(x_out, ConstVec(res2.data(), res2.extent(0)), tmp_.cvec(),
                           p.vec(o.fcproj_b, C));
}

void Gpt2::block_forward(int l, const UnitParams& p) {
  attn_compute(l, p, acts(l), res2_of(l));
  mlp_compute(l, p, acts(l), residual_[l + 1].vec());
}

void Gpt2::forward_unit(int u, const UnitParams& p) {
  const UnitLayout& unit = units_[std::size_t(u)];
  switch (unit.kind) {
    case kGpt2Embedding: return embed_forward(p);
    case kGpt2Block: return block_forward(unit.layer, p);
    case kGpt2Attn: return attn_compute(unit.layer, p, acts(unit.layer), res2_of(unit.layer));
    case kGpt2Mlp:
      return mlp_compute(unit.layer, p, acts(unit.layer), residual_[unit.layer + 1].vec());
    case kGpt2LnF: return lnf_forward(p);
  }
}

void Gpt2::lnf_forward(const UnitParams& p) {
  const int BT = B_ * T_;
  k::layernorm_forward(m(lnf_, BT, C_), lnf_mean_.vec(), lnf_rstd_.vec(),
                       cm(residual_[cfg_.n_layer], BT, C_), p.vec(0, C_), p.vec(C_, C_));
}

double Gpt2::head_forward(const UnitParams& emb) {
  const int BT = B_ * T_;
  if (bf16_)
    bf16_->head_forward(m(logits_, BT, V_), cm(lnf_, BT, C_), emb.weight_bf16(0, V_, C_));
  else
    k::gemm("N", "T", 1.f, cm(lnf_, BT, C_), emb.weight(0, V_, C_), 0.f, m(logits_, BT, V_));
  k::cross_entropy_forward(losses_.vec(), cm(logits_, BT, V_), targets_);
  return mean_losses(losses_, B_, T_, seq_losses_);
}

std::vector<float> Gpt2::logits_at(int b, int t) const {
  return logits_row(logits_, V_, std::int64_t(b) * T_ + t);
}

void Gpt2::head_backward(const UnitParams& emb, Vec emb_grad, float dloss) {
  const int BT = B_ * T_;
  k::cross_entropy_backward(m(logits_, BT, V_), targets_, dloss / BT);
  // lnf output gradient goes to d_ln_; wte receives the head's share of its gradient.
  if (bf16_) {
    bf16_->head_backward(m(d_ln_, BT, C_), gm(emb_grad, 0, V_, C_), cm(logits_, BT, V_),
                         cm(lnf_, BT, C_), emb.weight_bf16(0, V_, C_));
    return;
  }
  k::gemm("N", "N", 1.f, cm(logits_, BT, V_), emb.weight(0, V_, C_), 0.f, m(d_ln_, BT, C_));
  k::gemm("T", "N", 1.f, cm(logits_, BT, V_), cm(lnf_, BT, C_), 1.f, gm(emb_grad, 0, V_, C_));
}

void Gpt2::lnf_backward(const UnitParams& p, Vec g) {
  const int BT = B_ * T_;
  k::layernorm_backward(m(dres_a_, BT, C_), gv(g, 0, C_), gv(g, C_, C_), cm(d_ln_, BT, C_),
                        cm(residual_[cfg_.n_layer], BT, C_), p.vec(0, C_), lnf_mean_.cvec(),
                        lnf_rstd_.cvec());
  dres_out_ = dres_a_.vec();
}

void Gpt2::mlp_grads(int l, const UnitParams& p, Vec g) {
  const int BT = B_ * T_, C = C_;
  const auto& o = off_;
  BlockActivations& a = acts(l);
  const ConstMat dout(dres_out_.data(), BT, C);
  const Vec res2 = res2_of(l);
  linear_bwd(m(d_fchg_, BT, 4 * C), gm(g, o.fcproj_w, 4 * C, C), gv(g, o.fcproj_b, C), dout,
             cm(a.fch_gelu, BT, 4 * C), p, o.fcproj_w, 4 * C, C);
  k::gelu_backward(d_fch_.vec(), a.fch.cvec(), d_fchg_.cvec());
  linear_bwd(m(d_ln_, BT, C), gm(g, o.fc_w, C, 4 * C), gv(g, o.fc_b, 4 * C), cm(d_fch_, BT, 4 * C),
             cm(a.ln2, BT, C), p, o.fc_w, C, 4 * C);
  k::layernorm_backward(m(d_tmp_, BT, C), gv(g, o.ln2_w, C), gv(g, o.ln2_b, C), cm(d_ln_, BT, C),
                        ConstMat(res2.data(), BT, C), p.vec(o.ln2_w, C), a.ln2_mean.cvec(),
                        a.ln2_rstd.cvec());
  k::residual_backward(d_tmp_.vec(), ConstVec(dres_out_.data(), dres_out_.extent(0)));  // d res2
}

void Gpt2::attn_grads(int l, const UnitParams& p, Vec g) {
  const int BT = B_ * T_, C = C_;
  const auto& o = off_;
  BlockActivations& a = acts(l);
  const Vec dx_in = dres_out_.data() == dres_a_.data() ? dres_b_.vec() : dres_a_.vec();
  linear_bwd(m(d_atty_, BT, C), gm(g, o.proj_w, C, C), gv(g, o.proj_b, C), cm(d_tmp_, BT, C),
             cm(a.atty, BT, C), p, o.proj_w, C, C);
  const k::AttnDims dims{B_, T_, H_, H_, C / H_};
  const k::QkvGrads dqkv = k::packed_grads(m(d_qkv_, BT, 3 * C));
  if (qkv_bf16_)
    k::flash_attention_backward(dims, packed_qkv16(a.qkv, C), {a.atty.data(), C},
                                {d_atty_.data(), C}, a.att.data(), dqkv, flash_);
  else if (attention_ == AttentionPath::Fused)
    k::flash_attention_backward(dims, k::packed_qkv(cm(a.qkv, BT, 3 * C)), {a.atty.data(), C},
                                {d_atty_.data(), C}, a.att.data(), dqkv, flash_);
  else
    k::attention_backward(m(d_qkv_, BT, 3 * C), cm(d_atty_, BT, C),
                          ConstAtt3(a.att.data(), B_ * H_, T_, T_), cm(a.qkv, BT, 3 * C), B_, T_,
                          H_, att_work_.vec());
  linear_bwd(m(d_ln_, BT, C), gm(g, o.attn_w, C, 3 * C), gv(g, o.attn_b, 3 * C),
             cm(d_qkv_, BT, 3 * C), cm(a.ln1, BT, C), p, o.attn_w, C, 3 * C);
  k::layernorm_backward(Mat(dx_in.data(), BT, C), gv(g, o.ln1_w, C), gv(g, o.ln1_b, C),
                        cm(d_ln_, BT, C), cm(residual_[l], BT, C), p.vec(o.ln1_w, C),
                        a.ln1_mean.cvec(), a.ln1_rstd.cvec());
  k::residual_backward(dx_in, d_tmp_.cvec());
  dres_out_ = dx_in;
}

// Recomputes (checkpointing) write the block's output to tmp_: only the saved inputs of the
// backward kernels are needed, and the residual stream must stay as it is.
void Gpt2::block_backward(int l, const UnitParams& p, Vec g) {
  if (checkpointing_) {
    attn_compute(l, p, acts(l), res2_of(l));
    mlp_compute(l, p, acts(l), tmp_.vec());
  }
  mlp_grads(l, p, g);
  attn_grads(l, p, g);
}

void Gpt2::mlp_backward(int l, const UnitParams& p, Vec g) {
  if (checkpointing_) mlp_compute(l, p, acts(l), tmp_.vec());  // from the kept attention output
  mlp_grads(l, p, g);
}

void Gpt2::attn_backward(int l, const UnitParams& p, Vec g) {
  // The attention output is recomputed into tmp_: the MLP's backward has used the kept one.
  if (checkpointing_) attn_compute(l, p, acts(l), tmp_.vec());
  attn_grads(l, p, g);
}

void Gpt2::backward_unit(int u, const UnitParams& p, Vec g) {
  const UnitLayout& unit = units_[std::size_t(u)];
  switch (unit.kind) {
    case kGpt2LnF: return lnf_backward(p, g);
    case kGpt2Block: return block_backward(unit.layer, p, g);
    case kGpt2Mlp: return mlp_backward(unit.layer, p, g);
    case kGpt2Attn: return attn_backward(unit.layer, p, g);
    case kGpt2Embedding: return embed_backward(g);
  }
}

void Gpt2::embed_backward(Vec emb_grad) {
  const int BT = B_ * T_;
  k::embedding_backward(gm(emb_grad, 0, V_, C_), gm(emb_grad, std::int64_t(V_) * C_, T_, C_),
                        ConstMat(dres_out_.data(), BT, C_), inputs_, T_);
}

std::unique_ptr<Decoder> gpt2::make_model(const ModelConfig& m, const DecoderOptions& o,
                                          MemoryTracker& tracker) {
  return std::make_unique<Gpt2>(m, o.micro_batch, tracker, o.bf16_attention);
}

}  // namespace fsdp
