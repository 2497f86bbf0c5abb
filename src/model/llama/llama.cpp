// SPDX-License-Identifier: MIT
#include "model/llama/llama.hpp"

#include "model/attention.hpp"
#include "model/cross_entropy.hpp"
#include "model/embedding.hpp"
#include "model/head_outputs.hpp"
#include "model/gemm.hpp"
#include "model/llama/llama_arch.hpp"
#include "model/residual.hpp"
#include "model/rmsnorm.hpp"
#include "model/swiglu.hpp"

namespace fsdp {
namespace k = kernels;
using MC = MemCategory;

LlamaActivations::LlamaActivations(MemoryTracker& t, const std::string& tag, const ModelConfig& m,
                                   int B, AttentionPath path, bool qkv_bf16)
    : ln1(t, tag + "::ln1", std::int64_t(B) * m.block_size * m.n_embd, MC::Activations),
      ln1_rstd(t, tag + "::ln1_rstd", std::int64_t(B) * m.block_size, MC::Activations),
      qkv(t, tag + "::qkv", std::int64_t(B) * m.block_size * llama_qkv_rows(m), MC::Activations,
          MemSpace::Device, qkv_bf16 ? Dtype::BF16 : Dtype::F32),
      att(t, tag + "::att",
          std::int64_t(B) * m.n_head * m.block_size *
              (path == AttentionPath::Fused ? 1 : m.block_size),
          MC::Activations),
      atty(t, tag + "::atty", std::int64_t(B) * m.block_size * m.n_embd, MC::Activations),
      res2(t, tag + "::res2", std::int64_t(B) * m.block_size * m.n_embd, MC::Activations),
      ln2(t, tag + "::ln2", std::int64_t(B) * m.block_size * m.n_embd, MC::Activations),
      ln2_rstd(t, tag + "::ln2_rstd", std::int64_t(B) * m.block_size, MC::Activations),
      gu(t, tag + "::gate_up", std::int64_t(B) * m.block_size * 2 * m.ffn_hidden, MC::Activations),
      h(t, tag + "::swiglu", std::int64_t(B) * m.block_size * m.ffn_hidden, MC::Activations) {}

namespace {
LlamaOffsets offsets_of(const std::vector<UnitLayout>& units, bool sublayer) {
  if (units.size() < 3) return {};  // no layer
  return llama_offsets(units[1], units[sublayer ? 2 : 1]);
}
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

Llama::Llama(const ModelConfig& cfg, int micro_batch, MemoryTracker& tracker, bool bf16_attention)
    : cfg_(cfg),
      units_(llama_units(cfg)),
      off_(offsets_of(units_, cfg.sublayer_units)),
      B_(micro_batch),
      T_(cfg.block_size),
      C_(cfg.n_embd),
      H_(cfg.n_head),
      KV_(cfg.kv_heads()),
      D_(cfg.head_dim()),
      F_(cfg.ffn_hidden),
      V_(cfg.vocab_size),
      QKV_(int(llama_qkv_rows(cfg))),
      eps_(float(cfg.norm_eps)),
      checkpointing_(cfg.activation_checkpointing == "blocks"),
      attention_(llama::architecture_attention(cfg)),
      qkv_bf16_(bf16_attention && attention_ == AttentionPath::Fused),
      flash_(k::flash_plan(cfg.head_dim())),
      rope_(tracker, cfg, cfg.block_size) {
  const std::int64_t BT = std::int64_t(B_) * T_, BTC = BT * C_;
  inputs_ = TokenView("llama::inputs", BT);
  targets_ = TokenView("llama::targets", BT);
  for (int l = 0; l <= cfg.n_layer; ++l)
    residual_.emplace_back(tracker, "llama::residual" + std::to_string(l), BTC, MC::Activations);
  const int n_acts = checkpointing_ ? 1 : cfg.n_layer;
  for (int l = 0; l < n_acts; ++l)
    acts_.push_back(std::make_unique<LlamaActivations>(
        tracker, "model.layers." + std::to_string(l), cfg, B_, attention_, qkv_bf16_));
  if (checkpointing_ && cfg.sublayer_units)  // the MLP's recompute starts from res2
    for (int l = 0; l < cfg.n_layer; ++l)
      mid_.emplace_back(tracker, "model.layers." + std::to_string(l) + "::res2", BTC,
                        MC::Activations);
  lnf_ = TrackedBuffer(tracker, "llama::norm", BTC, MC::Activations);
  lnf_rstd_ = TrackedBuffer(tracker, "llama::norm_rstd", BT, MC::Activations);
  logits_ = TrackedBuffer(tracker, "llama::logits", BT * V_, MC::Activations);
  losses_ = TrackedBuffer(tracker, "llama::losses", BT, MC::Activations);
  if (qkv_bf16_) qkv32_ = TrackedBuffer(tracker, "llama::qkv32", BT * QKV_, MC::Activations);
  tmp_ = TrackedBuffer(tracker, "llama::tmp", BTC, MC::Activations);
  dres_a_ = TrackedBuffer(tracker, "llama::dres_a", BTC, MC::Activations);
  dres_b_ = TrackedBuffer(tracker, "llama::dres_b", BTC, MC::Activations);
  d_ln_ = TrackedBuffer(tracker, "llama::d_ln", BTC, MC::Activations);
  d_tmp_ = TrackedBuffer(tracker, "llama::d_tmp", BTC, MC::Activations);
  d_qkv_ = TrackedBuffer(tracker, "llama::d_qkv", BT * QKV_, MC::Activations);
  d_atty_ = TrackedBuffer(tracker, "llama::d_atty", BTC, MC::Activations);
  d_gu_ = TrackedBuffer(tracker, "llama::d_gate_up", BT * 2 * F_, MC::Activations);
  d_h_ = TrackedBuffer(tracker, "llama::d_swiglu", BT * F_, MC::Activations);
  if (attention_ == AttentionPath::Materialized)
    att_work_ = TrackedBuffer(tracker, "llama::att_work", k::attention_work_size(T_, H_),
                              MC::Activations);
}

void Llama::set_batch(const std::int32_t* inputs, const std::int32_t* targets) {
  const std::size_t BT = std::size_t(B_) * T_;
  Kokkos::deep_copy(inputs_, HostConstTokens(inputs, BT));
  Kokkos::deep_copy(targets_, HostConstTokens(targets, BT));
}

void Llama::use_bf16_gemms(MemoryTracker& tracker) {
  bf16_ = std::make_unique<k::Bf16Gemms>(
      tracker, llama::bf16_scratch_elements(cfg_, B_));
}

void Llama::linear_fwd(const Mat& y, const ConstMat& x, const UnitParams& p, std::int64_t w_off,
                       int in, int out) {
  if (bf16_) return bf16_->head_forward(y, x, p.weight_bf16(w_off, out, in));
  k::gemm("N", "T", 1.f, x, p.weight(w_off, out, in), 0.f, y);
}

void Llama::linear_bwd(const Mat& dx, const Mat& dw, const ConstMat& dy, const ConstMat& x,
                       const UnitParams& p, std::int64_t w_off, int in, int out) {
  if (bf16_) return bf16_->head_backward(dx, dw, dy, x, p.weight_bf16(w_off, out, in));
  k::gemm("N", "N", 1.f, dy, p.weight(w_off, out, in), 0.f, dx);
  k::gemm("T", "N", 1.f, dy, x, 1.f, dw);
}

Vec Llama::res2_of(int l) { return mid_.empty() ? acts(l).res2.vec() : mid_[std::size_t(l)].vec(); }

void Llama::embed_forward(const UnitParams& p) {
  k::token_embedding_forward(m(residual_[0], std::int64_t(B_) * T_, C_), inputs_,
                             p.weight(0, V_, C_));
}

void Llama::attn_compute(int l, const UnitParams& p, const Vec& res2_out) {
  const int BT = B_ * T_, C = C_;
  LlamaActivations& a = acts(l);
  k::rmsnorm_forward(m(a.ln1, BT, C), a.ln1_rstd.vec(), cm(residual_[l], BT, C),
                     p.vec(off_.attn_norm, C), eps_);
  const k::AttnDims dims{B_, T_, H_, KV_, D_};
  const std::int64_t kd = std::int64_t(KV_) * D_;
  // One GEMM for q | k | v, then the rotation of the q and k heads in place.
  const TrackedBuffer& q32 = qkv_bf16_ ? qkv32_ : a.qkv;
  linear_fwd(m(q32, BT, QKV_), cm(a.ln1, BT, C), p, off_.qkv, C, QKV_);
  k::rope_apply(m(q32, BT, QKV_), T_, 0, H_ + KV_, D_, rope_, false);
  if (qkv_bf16_) {
    cast_to_bf16(qkv32_.cvec(), a.qkv.bf16());
    const std::uint16_t* q = a.qkv.bf16().data();
    k::flash_attention_forward(dims, k::QkvRows<std::uint16_t>{q, q + C, q + C + kd, QKV_, QKV_, QKV_},
                               {a.atty.data(), C}, a.att.data(), flash_);
  } else if (attention_ == AttentionPath::Fused) {
    const float* q = a.qkv.data();
    k::flash_attention_forward(dims, k::QkvRows<float>{q, q + C, q + C + kd, QKV_, QKV_, QKV_},
                               {a.atty.data(), C}, a.att.data(), flash_);
  } else {
    k::attention_forward(m(a.atty, BT, C), Att3(a.att.data(), B_ * H_, T_, T_),
                         cm(a.qkv, BT, QKV_), B_, T_, H_, KV_);
  }
  linear_fwd(m(tmp_, BT, C), cm(a.atty, BT, C), p, off_.o, C, C);
  k::residual_forward(res2_out, residual_[l].cvec(), tmp_.cvec());
}

void Llama::mlp_compute(int l, const UnitParams& p, const Vec& x_out) {
  const int BT = B_ * T_, C = C_;
  LlamaActivations& a = acts(l);
  const Vec res2 = res2_of(l);
  k::rmsnorm_forward(m(a.ln2, BT, C), a.ln2_rstd.vec(), ConstMat(res2.data(), BT, C),
                     p.vec(off_.mlp_norm, C), eps_);
  linear_fwd(m(a.gu, BT, 2 * F_), cm(a.ln2, BT, C), p, off_.gate_up, C, 2 * F_);
  k::swiglu_forward(m(a.h, BT, F_), cm(a.gu, BT, 2 * F_));
  linear_fwd(m(tmp_, BT, C), cm(a.h, BT, F_), p, off_.down, F_, C);
  k::residual_forward(x_out, ConstVec(res2.data(), res2.extent(0)), tmp_.cvec());
}

void Llama::norm_forward(const UnitParams& p) {
  const int BT = B_ * T_;
  k::rmsnorm_forward(m(lnf_, BT, C_), lnf_rstd_.vec(), cm(residual_[cfg_.n_layer], BT, C_),
                     p.vec(0, C_), eps_);
}

void Llama::forward_unit(int u, const UnitParams& p) {
  const UnitLayout& unit = units_[std::size_t(u)];
  const int l = unit.layer;
  switch (unit.kind) {
    case kLlamaEmbedding: return embed_forward(p);
    case kLlamaBlock:
      attn_compute(l, p, res2_of(l));
      return mlp_compute(l, p, residual_[l + 1].vec());
    case kLlamaAttn: return attn_compute(l, p, res2_of(l));
    case kLlamaMlp: return mlp_compute(l, p, residual_[l + 1].vec());
    case kLlamaNorm: return norm_forward(p);
  }
}

double Llama::head_forward(const UnitParams& p) {
  const int BT = B_ * T_;
  linear_fwd(m(logits_, BT, V_), cm(lnf_, BT, C_), p, head_offset(), C_, V_);
  k::cross_entropy_forward(losses_.vec(), cm(logits_, BT, V_), targets_);
  return mean_losses(losses_, B_, T_, seq_losses_);
}

std::vector<float> Llama::logits_at(int b, int t) const {
  return logits_row(logits_, V_, std::int64_t(b) * T_ + t);
}

void Llama::head_backward(const UnitParams& p, Vec grad, float dloss) {
  const int BT = B_ * T_;
  k::cross_entropy_backward(m(logits_, BT, V_), targets_, dloss / BT);
  linear_bwd(m(d_ln_, BT, C_), gm(grad, head_offset(), V_, C_), cm(logits_, BT, V_),
             cm(lnf_, BT, C_), p, head_offset(), C_, V_);
}

void Llama::norm_backward(const UnitParams& p, Vec g) {
  const int BT = B_ * T_;
  k::rmsnorm_backward(m(dres_a_, BT, C_), gv(g, 0, C_), cm(d_ln_, BT, C_),
                      cm(residual_[cfg_.n_layer], BT, C_), p.vec(0, C_), lnf_rstd_.cvec());
  dres_out_ = dres_a_.vec();
}

void Llama::mlp_grads(int l, const UnitParams& p, Vec g) {
  const int BT = B_ * T_, C = C_;
  LlamaActivations& a = acts(l);
  const Vec res2 = res2_of(l);
  linear_bwd(m(d_h_, BT, F_), gm(g, off_.down, C, F_), ConstMat(dres_out_.data(), BT, C),
             cm(a.h, BT, F_), p, off_.down, F_, C);
  k::swiglu_backward(m(d_gu_, BT, 2 * F_), cm(d_h_, BT, F_), cm(a.gu, BT, 2 * F_));
  linear_bwd(m(d_ln_, BT, C), gm(g, off_.gate_up, 2 * F_, C), cm(d_gu_, BT, 2 * F_),
             cm(a.ln2, BT, C), p, off_.gate_up, C, 2 * F_);
  k::rmsnorm_backward(m(d_tmp_, BT, C), gv(g, off_.mlp_norm, C), cm(d_ln_, BT, C),
                      ConstMat(res2.data(), BT, C), p.vec(off_.mlp_norm, C), a.ln2_rstd.cvec());
  k::residual_backward(d_tmp_.vec(), ConstVec(dres_out_.data(), dres_out_.extent(0)));  // d res2
}

void Llama::attn_grads(int l, const UnitParams& p, Vec g) {
  const int BT = B_ * T_, C = C_;
  LlamaActivations& a = acts(l);
  const Vec dx_in = dres_out_.data() == dres_a_.data() ? dres_b_.vec() : dres_a_.vec();
  linear_bwd(m(d_atty_, BT, C), gm(g, off_.o, C, C), cm(d_tmp_, BT, C), cm(a.atty, BT, C), p,
             off_.o, C, C);
  const k::AttnDims dims{B_, T_, H_, KV_, D_};
  const std::int64_t kd = std::int64_t(KV_) * D_;
  float* dq = d_qkv_.data();
  const k::QkvGrads grads{dq, dq + C, dq + C + kd, QKV_, QKV_, QKV_};
  if (qkv_bf16_) {
    const std::uint16_t* q = a.qkv.bf16().data();
    k::flash_attention_backward(dims, k::QkvRows<std::uint16_t>{q, q + C, q + C + kd, QKV_, QKV_, QKV_},
                                {a.atty.data(), C}, {d_atty_.data(), C}, a.att.data(), grads, flash_);
  } else if (attention_ == AttentionPath::Fused) {
    const float* q = a.qkv.data();
    k::flash_attention_backward(dims, k::QkvRows<float>{q, q + C, q + C + kd, QKV_, QKV_, QKV_},
                                {a.atty.data(), C}, {d_atty_.data(), C}, a.att.data(), grads, flash_);
  } else {
    k::attention_backward(m(d_qkv_, BT, QKV_), cm(d_atty_, BT, C),
                          ConstAtt3(a.att.data(), B_ * H_, T_, T_), cm(a.qkv, BT, QKV_), B_, T_,
                          H_, KV_, att_work_.vec());
  }
  // The gradients of q and k before their rotation: the transposed rotation.
  k::rope_apply(m(d_qkv_, BT, QKV_), T_, 0, H_ + KV_, D_, rope_, true);
  linear_bwd(m(d_ln_, BT, C), gm(g, off_.qkv, QKV_, C), cm(d_qkv_, BT, QKV_), cm(a.ln1, BT, C), p,
             off_.qkv, C, QKV_);
  k::rmsnorm_backward(Mat(dx_in.data(), BT, C), gv(g, off_.attn_norm, C), cm(d_ln_, BT, C),
                      cm(residual_[l], BT, C), p.vec(off_.attn_norm, C), a.ln1_rstd.cvec());
  k::residual_backward(dx_in, d_tmp_.cvec());
  dres_out_ = dx_in;
}

// Recomputes (activation checkpointing) write the layer's output to tmp_: only the backward
// kernels' saved inputs are needed, and the residual stream must stay as it is.
void Llama::backward_unit(int u, const UnitParams& p, Vec g) {
  const UnitLayout& unit = units_[std::size_t(u)];
  const int l = unit.layer;
  switch (unit.kind) {
    case kLlamaNorm: return norm_backward(p, g);
    case kLlamaBlock:
      if (checkpointing_) {
        attn_compute(l, p, res2_of(l));
        mlp_compute(l, p, tmp_.vec());
      }
      mlp_grads(l, p, g);
      return attn_grads(l, p, g);
    case kLlamaMlp:
      if (checkpointing_) mlp_compute(l, p, tmp_.vec());  // from the kept res2
      return mlp_grads(l, p, g);
    case kLlamaAttn:
      if (checkpointing_) attn_compute(l, p, tmp_.vec());  // the MLP's backward used res2
      return attn_grads(l, p, g);
    case kLlamaEmbedding: return embed_backward(g);
  }
}

void Llama::embed_backward(Vec g) {
  k::token_embedding_backward(gm(g, 0, V_, C_), ConstMat(dres_out_.data(), std::int64_t(B_) * T_, C_),
                              inputs_);
}

std::unique_ptr<Decoder> llama::make_model(const ModelConfig& m, const DecoderOptions& o,
                                           MemoryTracker& tracker) {
  return std::make_unique<Llama>(m, o.micro_batch, tracker, o.bf16_attention);
}

}  // namespace fsdp
