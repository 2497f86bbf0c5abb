// SPDX-License-Identifier: MIT
// GPT-2 forward and backward, one sharding unit at a time. The sharding engine owns the
// parameters and decides when each unit's full parameters exist; the model only computes with
// the views it is handed. B = micro-batch, T = block_size, C = n_embd, V = vocab, L = layers.
#pragma once
#include <memory>
#include <vector>

#include "core/memory.hpp"
#include "model/attention_path.hpp"
#include "model/bf16_gemm.hpp"
#include "model/decoder.hpp"
#include "model/flash_attention.hpp"
#include "model/gpt2/gpt2_layout.hpp"
#include "model/unit_params.hpp"

namespace fsdp {

// What one block keeps between its forward and backward. att: the softmax probabilities
// [B*H, T, T] (materialised attention) or the rows' log-sum-exps [B*H, T] (fused). qkv is bf16
// when the fused attention takes bf16 inputs (Gpt2's bf16_attention).
struct BlockActivations {
  TrackedBuffer ln1, ln1_mean, ln1_rstd, qkv, att, atty, res2, ln2, ln2_mean, ln2_rstd, fch,
      fch_gelu;
  BlockActivations(MemoryTracker& t, const std::string& tag, int B, int T, int C, int H,
                   AttentionPath path, bool qkv_bf16);
};

class Gpt2 final : public Decoder {
 public:
  // bf16_attention (fsdp.mixed_precision = bf16): the fused attention reads q, k and v as bf16,
  // kept as bf16 for backward (half the bytes); the materialised path ignores it.
  // The units are cut as cfg.sublayer_units says.
  Gpt2(const ModelConfig& cfg, int micro_batch, MemoryTracker& tracker,
       bool bf16_attention = false);

  const ModelConfig& config() const override { return cfg_; }
  AttentionPath attention() const { return attention_; }
  bool bf16_attention() const { return qkv_bf16_; }
  const std::vector<UnitLayout>& units() const override { return units_; }
  int n_layer() const { return cfg_.n_layer; }
  int micro_batch() const override { return B_; }

  // inputs and targets: host arrays of B*T tokens each.
  void set_batch(const std::int32_t* inputs, const std::int32_t* targets) override;

  // Forward, in unit order. head_forward returns the micro-batch's mean loss.
  void embed_forward(const UnitParams& emb);
  void block_forward(int l, const UnitParams& p);
  void lnf_forward(const UnitParams& p);
  double head_forward(const UnitParams& emb) override;
  // Unit u's forward (not the head), whatever kind of unit it is.
  void forward_unit(int u, const UnitParams& p) override;
  // Per-sequence mean losses of the last head_forward (evaluation sums these across ranks).
  const std::vector<double>& sequence_losses() const override { return seq_losses_; }
  // The last head_forward's logits of sequence b at position t (V floats, copied to the host):
  // what sampling draws the next token from.
  std::vector<float> logits_at(int b, int t) const override;

  // Backward, in reverse unit order; parameter gradients accumulate (+=) into the unit's grads.
  // dloss is the weight of this micro-batch's mean loss in the step's objective.
  void head_backward(const UnitParams& emb, Vec emb_grad, float dloss) override;
  void lnf_backward(const UnitParams& p, Vec g);
  void block_backward(int l, const UnitParams& p, Vec g);
  void embed_backward(Vec emb_grad);
  // Sub-layer units (UnitCut::Sublayer): the MLP's backward, then the attention's.
  void mlp_backward(int l, const UnitParams& p, Vec g);
  void attn_backward(int l, const UnitParams& p, Vec g);
  // Unit u's backward (not the head), whatever kind of unit it is.
  void backward_unit(int u, const UnitParams& p, Vec g) override;

  // fsdp.gemm_dtype = bf16: the linear layers and the tied head take bf16 weights and
  // activations (model/bf16_gemm.hpp). Needs units bound as bf16 (UnitParams::from_bf16 or
  // rounded); allocates the casts' scratch.
  void use_bf16_gemms(MemoryTracker& tracker) override;
  bool bf16_gemms() const { return bf16_ != nullptr; }

 private:
  // The linear layers' GEMMs with weight w_off [ic, oc] of p, in fp32 or bf16 inputs.
  // bias_off < 0: no bias (the consumer adds it).
  void linear_fwd(const Mat& out, const ConstMat& inp, const UnitParams& p, std::int64_t w_off,
                  std::int64_t bias_off, int ic, int oc);
  void linear_bwd(const Mat& dinp, const Mat& dw, const Vec& db, const ConstMat& dout,
                  const ConstMat& inp, const UnitParams& p, std::int64_t w_off, int ic, int oc);
  // The block's two residual sub-layers. attn_compute reads residual l and writes res2_out;
  // mlp_compute reads res2_of(l) and writes x_out. p is the unit holding the sub-layer.
  void attn_compute(int l, const UnitParams& p, BlockActivations& a, const Vec& res2_out);
  void mlp_compute(int l, const UnitParams& p, BlockActivations& a, const Vec& x_out);
  // Their gradients: mlp_grads leaves d res2 in d_tmp_, attn_grads moves dres_out_ to the input.
  void mlp_grads(int l, const UnitParams& p, Vec g);
  void attn_grads(int l, const UnitParams& p, Vec g);
  Vec res2_of(int l);  // the stream between block l's sub-layers
  BlockActivations& acts(int l) { return *acts_[checkpointing_ ? 0 : l]; }

  ModelConfig cfg_;
  std::vector<UnitLayout> units_;
  BlockOffsets off_;
  int B_, T_, C_, H_, V_;
  bool checkpointing_;
  AttentionPath attention_;
  bool qkv_bf16_;  // fused attention on bf16 q, k, v
  kernels::FlashPlan flash_;  // the fused kernel's tiles for this head size
  TokenView inputs_, targets_;
  std::vector<TrackedBuffer> residual_;  // L+1 streams: block l reads l, writes l+1
  std::vector<std::unique_ptr<BlockActivations>> acts_;
  std::vector<TrackedBuffer> mid_;  // checkpointed sub-layers: each block's res2
  TrackedBuffer lnf_, lnf_mean_, lnf_rstd_, logits_, losses_;
  TrackedBuffer qkv32_;  // bf16 attention: c_attn's fp32 output before the cast (shared)
  TrackedBuffer tmp_, dres_a_, dres_b_, d_ln_, d_tmp_, d_qkv_, d_atty_, d_fch_, d_fchg_,
      att_work_;  // attention score gradients: a head's (CPU), a sequence's (GPU)
  Vec dres_out_;
  std::unique_ptr<kernels::Bf16Gemms> bf16_;
  std::vector<double> seq_losses_;  // the gradient of the current top of the residual stream
};

}  // namespace fsdp
