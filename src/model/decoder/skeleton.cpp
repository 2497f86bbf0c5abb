// SPDX-License-Identifier: MIT
// The skeleton's buffers, the per-unit dispatch (with activation checkpointing's recompute),
// the embedding, the final norm and the head. The layers' sub-layers are in block_ops.cpp.
#include "model/decoder/skeleton.hpp"

#include <algorithm>

#include "model/architecture.hpp"
#include "model/attention.hpp"
#include "model/cross_entropy.hpp"
#include "model/decoder/buffer_views.hpp"
#include "model/embedding.hpp"
#include "model/layers/lora_layout.hpp"
#include "model/gemm/gemm.hpp"
#include "model/head_outputs.hpp"

namespace fsdp {
namespace k = kernels;
using MC = MemCategory;

using namespace skeleton_views;


DecoderSkeleton::DecoderSkeleton(const ModelConfig& cfg, const BlockSpec& spec,
                                 std::vector<UnitLayout> units, int head_unit,
                                 AttentionPath attention, int micro_batch, bool checkpointing,
                                 MemoryTracker& tracker, bool bf16_attention)
    : cfg_(cfg),
      s_(spec),
      units_(std::move(units)),
      B_(micro_batch),
      T_(cfg.block_size),
      C_(cfg.n_embd),
      H_(spec.H),
      KV_(spec.KV),
      D_(spec.D),
      F_(spec.F),
      V_(cfg.vocab_size),
      QW_(spec.H * spec.D),
      QKV_((spec.H + 2 * spec.KV) * spec.D),
      UP_(spec.mlp == MlpKind::SwiGlu ? 2 * spec.F : spec.F),
      checkpointing_(checkpointing),
      core_({micro_batch, cfg.block_size, spec.H, spec.KV, spec.D}, attention, bf16_attention,
            tracker, spec.tag) {
  const UnitLayout& emb = units_.front();
  const UnitLayout& fin = units_.back();
  emb_w_ = offset_of(emb, s_.embedding);
  if (s_.positions == Positions::Learned) pos_w_ = offset_of(emb, s_.positions_table);
  final_norm_ = Norm(s_.norm, C_, s_.eps, offset_of(fin, s_.final_norm),
                     s_.norm == NormKind::LayerNorm ? bias_offset_of(fin, s_.final_norm) : -1,
                     !fin.tensor(s_.final_norm).trainable);
  const UnitLayout& head = cfg.tie_embeddings ? emb : units_[std::size_t(head_unit)];
  head_w_ = offset_of(head, cfg.tie_embeddings ? s_.embedding : s_.head);
  emb_frozen_ = !emb.tensor(s_.embedding).trainable;
  head_frozen_ = !head.tensor(cfg.tie_embeddings ? s_.embedding : s_.head).trainable;
  AdapterRun lora{s_.adapter_scale, {}, {}};
  int rank = 0;
  for (const UnitLayout& u : units_)
    for (const TensorSpec& t : u.tensors) {
      if (ends_with(t.name, ".lora_A.weight")) rank = int(t.shape[0]);
      if (s_.qk_norm && ends_with(t.name, s_.q_norm)) qk_frozen_ = !t.trainable;
    }
  if (rank > 0) {  // before the layers, which hold views of it
    const std::int64_t BT = std::int64_t(B_) * T_;
    lora_h_ = TrackedBuffer(tracker, s_.tag + "::lora_h", BT * rank, MC::Activations);
    lora_dh_ = TrackedBuffer(tracker, s_.tag + "::lora_dh", BT * rank, MC::Activations);
    lora.h = Mat(lora_h_.data(), BT, rank);
    lora.dh = Mat(lora_dh_.data(), BT, rank);
  }
  for (int l = 0; l < cfg.n_layer; ++l) layers_.push_back(decoder_layer(units_, s_, C_, l, lora));
  if (s_.positions == Positions::Rotary) rope_ = k::RopeTable(tracker, cfg, T_);
  allocate(tracker);
}

void DecoderSkeleton::allocate(MemoryTracker& tracker) {
  const std::int64_t BT = std::int64_t(B_) * T_, BTC = BT * C_;
  const std::string& t = s_.tag;
  const bool ln = s_.norm == NormKind::LayerNorm;
  auto buf = [&](const std::string& name, std::int64_t n, Dtype d = Dtype::F32) {
    return TrackedBuffer(tracker, name, n, MC::Activations, MemSpace::Device, d);
  };
  if (!tracker.counting()) {  // untracked, and never read in the planner's run
    inputs_ = TokenView(t + "::inputs", BT);
    targets_ = TokenView(t + "::targets", BT);
  }
  for (int l = 0; l <= cfg_.n_layer; ++l) residual_.push_back(buf(t + "::residual" + std::to_string(l), BTC));
  const int n_acts = checkpointing_ ? 1 : cfg_.n_layer;
  for (int l = 0; l < n_acts; ++l) {
    const std::string p = t + "::layer" + std::to_string(l) + "::";
    auto a = std::make_unique<LayerActivations>();
    a->ln1 = buf(p + "ln1", BTC);
    if (ln) a->ln1_mean = buf(p + "ln1_mean", BT);
    a->ln1_rstd = buf(p + "ln1_rstd", BT);
    a->qkv = buf(p + "qkv", BT * QKV_, core_.kept_qkv_dtype());
    if (s_.qk_norm) {
      a->qk_raw = buf(p + "qk_raw", BT * (H_ + KV_) * D_);
      a->qk_rstd = buf(p + "qk_rstd", BT * (H_ + KV_));
    }
    a->att = buf(p + "att", core_.saved_elements());
    a->atty = buf(p + "atty", BT * QW_);
    a->res2 = buf(p + "res2", BTC);
    a->ln2 = buf(p + "ln2", BTC);
    if (ln) a->ln2_mean = buf(p + "ln2_mean", BT);
    a->ln2_rstd = buf(p + "ln2_rstd", BT);
    // The dense MLP's (a sparse layer's are in MoeActivations).
    if (checkpointing_ ? s_.any_dense() : !s_.moe.sparse_layer(l)) {
      a->up = buf(p + "up", BT * UP_);
      a->act = buf(p + "act", BT * F_);
    }
    acts_.push_back(std::move(a));
  }
  // Checkpointed sub-layer units: the MLP's recompute starts from the attention's output,
  // which is kept per layer as the stream between the two units.
  const bool sublayers = std::any_of(units_.begin(), units_.end(),
                                     [](const UnitLayout& u) { return u.kind == kAttnUnit; });
  if (checkpointing_ && sublayers)
    for (int l = 0; l < cfg_.n_layer; ++l) mid_.push_back(buf(t + "::res2_" + std::to_string(l), BTC));
  lnf_ = buf(t + "::final_norm", BTC);
  if (ln) lnf_mean_ = buf(t + "::final_norm_mean", BT);
  lnf_rstd_ = buf(t + "::final_norm_rstd", BT);
  logits_ = buf(t + "::logits", BT * V_);
  losses_ = buf(t + "::losses", BT);
  if (core_.bf16_qkv()) qkv32_ = buf(t + "::qkv32", BT * QKV_);
  tmp_ = buf(t + "::tmp", BTC);
  dres_a_ = buf(t + "::dres_a", BTC);
  dres_b_ = buf(t + "::dres_b", BTC);
  d_ln_ = buf(t + "::d_ln", BTC);
  d_tmp_ = buf(t + "::d_tmp", BTC);
  d_qkv_ = buf(t + "::d_qkv", BT * QKV_);
  d_atty_ = buf(t + "::d_atty", BT * QW_);
  if (s_.any_dense()) {
    d_up_ = buf(t + "::d_up", BT * UP_);
    d_act_ = buf(t + "::d_act", BT * F_);
  }
  if (s_.moe.any(1)) allocate_moe(tracker);
}

void DecoderSkeleton::set_batch(const std::int32_t* inputs, const std::int32_t* targets) {
  set_batch(inputs, targets, TokenLayout{});
}

void DecoderSkeleton::set_batch(const std::int32_t* inputs, const std::int32_t* targets,
                                const TokenLayout& layout) {
  const std::size_t BT = std::size_t(B_) * T_;
  Kokkos::deep_copy(inputs_, HostConstTokens(inputs, BT));
  Kokkos::deep_copy(targets_, HostConstTokens(targets, BT));
  loss_scale_ = layout.loss_scale;
  docs_ = layout.doc_starts != nullptr;
  if (!docs_) return;
  if (starts_.extent(0) != BT) {
    starts_ = TokenView(s_.tag + "::doc_starts", BT);
    positions_ = TokenView(s_.tag + "::positions", BT);
  }
  // Positions count from each document's start; the attention kernels take the starts.
  std::vector<std::int32_t> pos(BT);
  for (std::size_t i = 0; i < BT; ++i) {
    const std::int32_t t = std::int32_t(i % std::size_t(T_)), st = layout.doc_starts[i];
    if (st < 0 || st > t || (t > 0 && st < layout.doc_starts[i - 1]))
      throw std::invalid_argument("doc_starts[" + std::to_string(i) + "] = " + std::to_string(st) +
                                  " is not a document start at or before position " +
                                  std::to_string(t) + " of its window");
    pos[i] = t - st;
  }
  Kokkos::deep_copy(starts_, HostConstTokens(layout.doc_starts, BT));
  Kokkos::deep_copy(positions_, HostConstTokens(pos.data(), BT));
}

std::vector<float> DecoderSkeleton::token_losses() const {
  std::vector<float> out(std::size_t(B_) * T_);
  Kokkos::deep_copy(HostVec(out.data(), out.size()), losses_.cvec());
  return out;
}

void DecoderSkeleton::use_bf16_gemms(MemoryTracker& tracker) {
  bf16_ = std::make_unique<k::Bf16Gemms>(tracker, skeleton_bf16_scratch_elements(s_, cfg_, B_));
  if (s_.moe.any(1)) allocate_bf16_dispatch(tracker);
}

Vec DecoderSkeleton::res2_of(int l) {
  return mid_.empty() ? acts(l).res2.vec() : mid_[std::size_t(l)].vec();
}

void DecoderSkeleton::forward_unit(int u, const UnitParams& p) {
  const UnitLayout& unit = units_[std::size_t(u)];
  const int l = unit.layer;
  switch (unit.kind) {
    case kEmbeddingUnit: return embed_forward(p);
    case kBlockUnit:
      attn_compute(l, p, res2_of(l));
      return mlp_compute(l, p, residual_[std::size_t(l) + 1].vec());
    case kAttnUnit: return attn_compute(l, p, res2_of(l));
    case kMlpUnit: return mlp_compute(l, p, residual_[std::size_t(l) + 1].vec());
    case kFinalUnit: return final_forward(p);
  }
}

// Recomputes (activation checkpointing) write the layer's output to tmp_: only the backward
// kernels' saved inputs are needed, and the residual stream must stay as it is.
void DecoderSkeleton::backward_unit(int u, const UnitParams& p, Vec g) {
  const UnitLayout& unit = units_[std::size_t(u)];
  const int l = unit.layer;
  switch (unit.kind) {
    case kFinalUnit: return final_backward(p, g);
    case kBlockUnit:
      if (checkpointing_) {
        attn_compute(l, p, res2_of(l));
        mlp_compute(l, p, tmp_.vec());
      }
      mlp_grads(l, p, g);
      return attn_grads(l, p, g);
    case kMlpUnit:
      if (checkpointing_) mlp_compute(l, p, tmp_.vec());  // from the kept res2
      return mlp_grads(l, p, g);
    case kAttnUnit:
      if (checkpointing_) attn_compute(l, p, tmp_.vec());  // the MLP's backward used res2
      return attn_grads(l, p, g);
    case kEmbeddingUnit: return embed_backward(g);
  }
}

void DecoderSkeleton::embed_forward(const UnitParams& p) {
  const Mat x = m(residual_[0], std::int64_t(B_) * T_, C_);
  if (pos_w_ >= 0)
    k::embedding_forward(x, inputs_, p.weight(emb_w_, V_, C_), p.table(pos_w_, T_, C_), T_,
                         doc_positions());
  else
    k::token_embedding_forward(x, inputs_, p.weight(emb_w_, V_, C_));
}

void DecoderSkeleton::embed_backward(Vec g) {
  if (emb_frozen_) return;  // nothing below the embedding needs dx
  const ConstMat dx(dres_out_.data(), std::int64_t(B_) * T_, C_);
  if (pos_w_ >= 0)
    k::embedding_backward(gm(g, emb_w_, V_, C_), gm(g, pos_w_, T_, C_), dx, inputs_, T_,
                          doc_positions());
  else
    k::token_embedding_backward(gm(g, emb_w_, V_, C_), dx, inputs_);
}

void DecoderSkeleton::final_forward(const UnitParams& p) {
  const int BT = B_ * T_;
  final_norm_.forward(m(lnf_, BT, C_), lnf_mean_.vec(), lnf_rstd_.vec(),
                      cm(residual_[std::size_t(cfg_.n_layer)], BT, C_), p);
}

void DecoderSkeleton::final_backward(const UnitParams& p, Vec g) {
  const int BT = B_ * T_;
  final_norm_.backward(m(dres_a_, BT, C_), g, cm(d_ln_, BT, C_),
                       cm(residual_[std::size_t(cfg_.n_layer)], BT, C_), p, lnf_mean_.cvec(),
                       lnf_rstd_.cvec());
  dres_out_ = dres_a_.vec();
}

// The head is a [V, C] table whatever the layers' layout (the token embedding, or lm_head).
double DecoderSkeleton::head_forward(const UnitParams& p) {
  const int BT = B_ * T_;
  if (bf16_)
    bf16_->head_forward(m(logits_, BT, V_), cm(lnf_, BT, C_), p.weight_bf16(head_w_, V_, C_));
  else
    k::gemm("N", "T", 1.f, cm(lnf_, BT, C_), p.weight(head_w_, V_, C_), 0.f, m(logits_, BT, V_));
  k::cross_entropy_forward(losses_.vec(), cm(logits_, BT, V_), targets_);
  if (s_.moe.any(1)) aux_loss_ = balance_loss();
  if (loss_scale_ > 0) return scored_losses(losses_, B_, T_, loss_scale_, seq_losses_);
  return mean_losses(losses_, B_, T_, seq_losses_);
}

std::vector<float> DecoderSkeleton::logits_at(int b, int t) const {
  return logits_row(logits_, V_, std::int64_t(b) * T_ + t);
}

void DecoderSkeleton::head_backward(const UnitParams& p, Vec grad, float dloss) {
  const int BT = B_ * T_;
  if (s_.moe.any(1)) set_balance_grad(dloss);
  // The mean over the micro-batch's tokens, or each scored token weighted by loss_scale.
  k::cross_entropy_backward(m(logits_, BT, V_), targets_,
                            loss_scale_ > 0 ? float(dloss * loss_scale_) : dloss / BT);
  if (bf16_)
    return bf16_->head_backward(m(d_ln_, BT, C_), head_frozen_ ? Mat() : gm(grad, head_w_, V_, C_),
                                cm(logits_, BT, V_), cm(lnf_, BT, C_), p.weight_bf16(head_w_, V_, C_));
  k::gemm("N", "N", 1.f, cm(logits_, BT, V_), p.weight(head_w_, V_, C_), 0.f, m(d_ln_, BT, C_));
  if (head_frozen_) return;  // the table's gradient GEMM skipped
  k::gemm("T", "N", 1.f, cm(logits_, BT, V_), cm(lnf_, BT, C_), 1.f, gm(grad, head_w_, V_, C_));
}

// What the layers declare, stage by stage: a block unit both halves, the final unit its norm
// (an untied head in it is the head's stage), the embedding nothing (a lookup).
std::vector<UnitFlops> DecoderSkeleton::unit_flops() const {
  const std::int64_t rows = std::int64_t(B_) * T_;
  std::vector<UnitFlops> out;
  for (const UnitLayout& u : units_) {
    LayerFlops f;
    const int l = u.layer;
    if (u.kind == kFinalUnit) f = final_norm_.flops(rows);
    if (u.kind == kBlockUnit || u.kind == kAttnUnit) {
      f += layers_[std::size_t(l)].attention_flops(rows, s_);
      f += core_.flops(rows);
    }
    if (u.kind == kBlockUnit || u.kind == kMlpUnit)
      f += layers_[std::size_t(l)].mlp_flops(rows, C_, s_);
    const bool recomputed = checkpointing_ && u.kind != kEmbeddingUnit && u.kind != kFinalUnit;
    out.push_back(UnitFlops{f.forward, f.backward, recomputed ? f.forward : 0.0});
  }
  return out;
}

// The head's product with the [V, C] table, and its two gradients. A learned position table is
// counted here too: the MFU convention (6 per parameter per token, as llm.c counts GPT-2) counts
// every parameter, and the lookups of the embedding stage count nothing.
UnitFlops DecoderSkeleton::head_flops() const {
  const double positions = pos_w_ >= 0 ? double(cfg_.positions()) : 0.0;
  const double params = (double(V_) + positions) * C_, rows = double(B_) * T_;
  const LayerFlops f = head_frozen_ ? frozen_flops(params, rows) : param_flops(params, rows);
  return UnitFlops{f.forward, f.backward, 0.0};
}

std::unique_ptr<Decoder> build_skeleton(const ModelConfig& m, const BlockSpec& s,
                                        std::vector<UnitLayout> units, int head_unit,
                                        AttentionPath attention, const DecoderOptions& o,
                                        MemoryTracker& tracker) {
  // The run's placed layout where there is one: its offsets are where the engine puts each
  // tensor of the gathered unit.
  if (o.parallel && o.parallel->units) units = *o.parallel->units;
  // A model on its own (tests) with adapters: the architecture's units and the adapters after
  // them, unplaced (no part index: nothing shards them).
  else if (o.choices.lora.on()) add_adapters(units, m, o.choices.lora, -1);
  BlockSpec spec = s;
  spec.adapter_scale = o.choices.lora.on() ? o.choices.lora.scale() : 0.f;
  auto d = std::make_unique<DecoderSkeleton>(m, spec, std::move(units), head_unit, attention,
                                             o.micro_batch, o.choices.checkpoint_blocks, tracker,
                                             o.bf16_attention);
  if (o.parallel) d->set_expert_group(o.parallel->experts);
  return d;
}

}  // namespace fsdp
