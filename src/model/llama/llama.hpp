// SPDX-License-Identifier: MIT
// Llama forward and backward, one sharding unit at a time (model/decoder.hpp). Pre-norm
// decoder layers: x += o_proj(attention(rope(q), rope(k), v)) of RMSNorm(x), then
// x += down(silu(gate) * up) of RMSNorm(x); a final RMSNorm and the LM head (the token
// embedding when tied, lm_head otherwise). Grouped-query attention: query head h reads key/value
// head h / (H / KV) where they lie, through either attention kernel (model/attention.hpp and
// model/flash_attention.hpp; on a GPU the fused one). B = micro-batch, T = block_size, C = n_embd, V = vocab,
// L = layers, F = ffn_hidden, QKV = C + 2 KV D (the fused projection's width).
#pragma once
#include <memory>
#include <vector>

#include "core/memory.hpp"
#include "model/attention_path.hpp"
#include "model/bf16_gemm.hpp"
#include "model/decoder.hpp"
#include "model/flash_attention.hpp"
#include "model/llama/llama_layout.hpp"
#include "model/rotary.hpp"
#include "model/unit_params.hpp"

namespace fsdp {

// What one layer keeps between its forward and backward. qkv holds q and k after the rotation;
// att: probabilities [B*H, T, T] (materialised) or log-sum-exps [B*H, T] (fused).
struct LlamaActivations {
  TrackedBuffer ln1, ln1_rstd, qkv, att, atty, res2, ln2, ln2_rstd, gu, h;
  LlamaActivations(MemoryTracker& t, const std::string& tag, const ModelConfig& m, int B,
                   AttentionPath path, bool qkv_bf16);
};

class Llama final : public Decoder {
 public:
  Llama(const ModelConfig& cfg, int micro_batch, MemoryTracker& tracker, bool bf16_attention);

  const ModelConfig& config() const override { return cfg_; }
  const std::vector<UnitLayout>& units() const override { return units_; }
  int micro_batch() const override { return B_; }
  AttentionPath attention() const { return attention_; }

  void set_batch(const std::int32_t* inputs, const std::int32_t* targets) override;
  void forward_unit(int u, const UnitParams& p) override;
  double head_forward(const UnitParams& p) override;
  void head_backward(const UnitParams& p, Vec grad, float dloss) override;
  void backward_unit(int u, const UnitParams& p, Vec grad) override;
  const std::vector<double>& sequence_losses() const override { return seq_losses_; }
  std::vector<float> logits_at(int b, int t) const override;
  void use_bf16_gemms(MemoryTracker& tracker) override;

 private:
  // y[N, out] = x[N, in] @ W^T for an nn.Linear weight W [out, in] at w_off of p; backward
  // dx = dy @ W (assigned), dW += dy^T @ x.
  void linear_fwd(const Mat& y, const ConstMat& x, const UnitParams& p, std::int64_t w_off,
                  int in, int out);
  void linear_bwd(const Mat& dx, const Mat& dw, const ConstMat& dy, const ConstMat& x,
                  const UnitParams& p, std::int64_t w_off, int in, int out);
  void embed_forward(const UnitParams& p);
  void embed_backward(Vec g);
  void norm_forward(const UnitParams& p);
  void norm_backward(const UnitParams& p, Vec g);
  void attn_compute(int l, const UnitParams& p, const Vec& res2_out);
  void mlp_compute(int l, const UnitParams& p, const Vec& x_out);
  void attn_grads(int l, const UnitParams& p, Vec g);
  void mlp_grads(int l, const UnitParams& p, Vec g);
  Vec res2_of(int l);
  LlamaActivations& acts(int l) { return *acts_[checkpointing_ ? 0 : l]; }
  std::int64_t head_offset() const { return cfg_.tie_embeddings ? 0 : cfg_.n_embd; }

  ModelConfig cfg_;
  std::vector<UnitLayout> units_;
  LlamaOffsets off_;
  int B_, T_, C_, H_, KV_, D_, F_, V_, QKV_;
  float eps_;
  bool checkpointing_;
  AttentionPath attention_;
  bool qkv_bf16_;
  kernels::FlashPlan flash_;
  kernels::RopeTable rope_;
  TokenView inputs_, targets_;
  std::vector<TrackedBuffer> residual_;  // L+1 streams: layer l reads l, writes l+1
  std::vector<std::unique_ptr<LlamaActivations>> acts_;
  std::vector<TrackedBuffer> mid_;  // checkpointed sub-layers: each layer's res2
  TrackedBuffer lnf_, lnf_rstd_, logits_, losses_, qkv32_;
  TrackedBuffer tmp_, dres_a_, dres_b_, d_ln_, d_tmp_, d_qkv_, d_atty_, d_gu_, d_h_, att_work_;
  Vec dres_out_;  // the gradient of the current top of the residual stream
  std::unique_ptr<kernels::Bf16Gemms> bf16_;
  std::vector<double> seq_losses_;
};

}  // namespace fsdp
