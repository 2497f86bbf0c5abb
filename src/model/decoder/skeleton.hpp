// SPDX-License-Identifier: MIT
// The one decoder every architecture runs (model/decoder.hpp), described by a BlockSpec:
// pre-norm layers x += attn(norm1(x)), x += mlp(norm2(x)); a final norm; the LM head (the
// token table when tied) and the cross-entropy loss. Units are computed one at a time with the
// parameters the engine hands over; with activation checkpointing a layer keeps only its input
// (and, for sub-layer units, the stream between its halves) and is recomputed in backward.
// B = micro-batch, T = block_size, C = n_embd, V = vocab, L = layers, QKV = (H + 2 KV) D.
#pragma once
#include <memory>
#include <vector>

#include "core/memory.hpp"
#include "model/attention_path.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/decoder.hpp"
#include "model/decoder/block_spec.hpp"
#include "model/decoder/decoder_layer.hpp"
#include "model/layers/attention_core.hpp"
#include "comm/peer_blocks.hpp"
#include "model/experts/dispatch.hpp"
#include "model/experts/experts.hpp"
#include "model/rotary.hpp"
#include "model/unit_params.hpp"

namespace fsdp {
namespace comm {
class Communicator;
class Handle;
}

// What one layer keeps between its forward and backward. qkv holds q and k after their norms
// and rotation (bf16 when the fused attention reads bf16); qk_raw: q and k before their norms
// (qk_norm); att: probabilities [B*H, T, T] (materialised) or log-sum-exps [B*H, T] (fused).
struct LayerActivations {
  TrackedBuffer ln1, ln1_mean, ln1_rstd, qkv, qk_raw, qk_rstd, att, atty, res2, ln2, ln2_mean,
      ln2_rstd, up, act;
};

// What a sparse layer keeps, N = B*T tokens, R = N*K expert rows: the router's probabilities
// [N, E], choices [N, K] (int32) and weights [N, K]; the plan's row_of and choice [R] each (int32,
// on the device; the plan itself on the host); the experts' inputs xe [R, C], gate|up [R, 2F],
// gated product [R, F] and outputs ye [R, C].
// Expert parallelism (ExpertSpec::P > 1): xe is what this rank sends, ye what comes back; xr
// [P R, C] the rows its own E/P experts received (source after source, each source's grouped by
// local expert: "virtual expert" s E/P + e, rows voff[v] to voff[v + 1]), gu and h theirs; send
// and recv the two exchanges' blocks (the return trip swaps them).
struct MoeActivations {
  TrackedBuffer probs, top, weights, rows, xe, gu, h, ye, xr;
  kernels::DispatchPlan plan;
  std::vector<std::int64_t> voff;
  comm::PeerBlocks send, recv;
};

class DecoderSkeleton final : public Decoder {
 public:
  // bf16_attention (fsdp.mixed_precision = bf16): the fused attention reads q, k and v as bf16,
  // kept as bf16 for backward; the materialised path ignores it. checkpointing: each layer
  // keeps its input and recomputes in backward. `units` as the architecture cuts them
  // (ModelChoices::sublayer_units); head_unit: Architecture::head_unit.
  DecoderSkeleton(const ModelConfig& cfg, const BlockSpec& spec, std::vector<UnitLayout> units,
                  int head_unit, AttentionPath attention, int micro_batch, bool checkpointing,
                  MemoryTracker& tracker, bool bf16_attention);

  const ModelConfig& config() const override { return cfg_; }
  const std::vector<UnitLayout>& units() const override { return units_; }
  int micro_batch() const override { return B_; }
  AttentionPath attention() const { return core_.path(); }

  void set_batch(const std::int32_t* inputs, const std::int32_t* targets) override;
  void set_batch(const std::int32_t* inputs, const std::int32_t* targets,
                 const TokenLayout& layout) override;
  // The last head_forward's per-token losses (0 where a target is not scored), on the host.
  std::vector<float> token_losses() const;
  void forward_unit(int u, const UnitParams& p) override;
  double head_forward(const UnitParams& p) override;
  void head_backward(const UnitParams& p, Vec grad, float dloss) override;
  void backward_unit(int u, const UnitParams& p, Vec grad) override;
  const std::vector<double>& sequence_losses() const override { return seq_losses_; }
  double aux_loss() const override { return aux_loss_; }
  std::vector<std::int64_t> expert_counts() const override;
  std::int64_t dropped_choices() const override;
  std::vector<Exchange> take_exchanges() override { return std::move(exchanges_); }
  // fsdp.expert_parallel > 1: the group of P ranks this rank shares its sparse layers' experts
  // with (ParallelContext::experts); required before the first forward.
  void set_expert_group(comm::Communicator* group);
  std::vector<float> router_bias() const override { return bias_; }
  void set_router_bias(const std::vector<float>& bias) override;
  void update_router_bias(const std::vector<double>& counts) override;
  std::vector<float> logits_at(int b, int t) const override;
  void use_bf16_gemms(MemoryTracker& tracker) override;
  std::vector<UnitFlops> unit_flops() const override;
  UnitFlops head_flops() const override;

 private:
  void embed_forward(const UnitParams& p);
  void embed_backward(Vec g);
  void final_forward(const UnitParams& p);
  void final_backward(const UnitParams& p, Vec g);
  // The layer's two residual sub-layers: attn_compute reads stream l and writes res2_out,
  // mlp_compute reads res2_of(l) and writes x_out. Their gradients: mlp_grads leaves d res2 in
  // d_tmp_, attn_grads moves dres_out_ to the layer's input.
  void attn_compute(int l, const UnitParams& p, const Vec& res2_out);
  void mlp_compute(int l, const UnitParams& p, const Vec& x_out);
  void attn_grads(int l, const UnitParams& p, Vec g);
  void mlp_grads(int l, const UnitParams& p, Vec g);
  // A sparse layer's MLP (decoder/moe_ops.cpp): the router, the experts, the weighted sum.
  void moe_compute(int l, const UnitParams& p, const Vec& x_out);
  void moe_grads(int l, const UnitParams& p, Vec g);
  // The experts' linear layers at offsets `at` of unit p's weights (fp32, or bf16 GEMMs under
  // use_bf16_gemms), their gradients into g (none in forward).
  // grads_at: where in g each expert's gradients go, if not at its weights' offsets.
  kernels::ExpertLinear expert_linear(const UnitParams& p, const ExpertOffsets& at, Vec g,
                                      const ExpertOffsets* grads_at = nullptr) const;
  // Expert parallelism (decoder/moe_ep.cpp): the experts' part of the forward and backward,
  // with the token exchanges around this rank's E/P experts.
  void experts_forward_ep(const UnitParams& p, const ExpertOffsets& at, MoeActivations& e);
  void experts_backward_ep(const UnitParams& p, const ExpertOffsets& at, MoeActivations& e, Vec g);
  void exchange(const char* what, const ConstVec& send, const comm::PeerBlocks& sb, const Vec& recv,
                const comm::PeerBlocks& rb);
  // The same, non-blocking: issued (t0 its time) and later waited, the wait recorded as exposed.
  comm::Handle start_exchange(const ConstVec& send, const comm::PeerBlocks& sb, const Vec& recv,
                              const comm::PeerBlocks& rb, double& t0);
  void finish_exchange(const char* what, comm::Handle& h, double t0, std::int64_t bytes);
  // A dispatch (rows of src out, peers' rows into dst, e's blocks): fp32, or bf16 with bf16 GEMMs.
  comm::Handle start_dispatch(const TrackedBuffer& src, std::int64_t rows, const MoeActivations& e,
                              const TrackedBuffer& dst, std::int64_t got, double& t0);
  void finish_dispatch(const char* what, comm::Handle& h, double t0, const MoeActivations& e,
                       const TrackedBuffer& dst);
  MoeActivations& moe_acts(int l) { return *moe_[checkpointing_ ? 0 : std::size_t(l)]; }
  void allocate_moe(MemoryTracker& tracker);
  void allocate_bf16_dispatch(MemoryTracker& tracker);  // with bf16 GEMMs (moe_ep.cpp)
  struct BalanceSums {
    std::vector<double> count, psum;  // [E]
    double tokens = 0.0;
  };
  BalanceSums balance_sums() const;
  double balance_loss() const;
  void set_balance_grad(float dloss);
  Vec res2_of(int l);
  LayerActivations& acts(int l) { return *acts_[checkpointing_ ? 0 : l]; }
  // Packed documents of the current batch, or none (null / an empty view).
  const int* doc_starts() const { return docs_ ? starts_.data() : nullptr; }
  ConstTokens doc_positions() const { return docs_ ? ConstTokens(positions_) : ConstTokens(); }
  void allocate(MemoryTracker& tracker);

  ModelConfig cfg_;
  BlockSpec s_;
  std::vector<UnitLayout> units_;
  std::vector<DecoderLayer> layers_;
  Norm final_norm_;
  std::int64_t emb_w_ = 0, pos_w_ = -1, head_w_ = 0;
  // A LoRA run's frozen base (model/layers/lora_layout.hpp): the embedding, the head table and
  // the q/k head norms compute no gradient of their own; the adapters' scratch, [B T, r] each.
  bool emb_frozen_ = false, head_frozen_ = false, qk_frozen_ = false;
  TrackedBuffer lora_h_, lora_dh_;
  int B_, T_, C_, H_, KV_, D_, F_, V_, QW_, QKV_, UP_;  // QW = H*D, UP: the up GEMM's width
  bool checkpointing_;
  AttentionCore core_;  // every layer's (its buffers are the layer's activations)
  kernels::RopeTable rope_;
  TokenView inputs_, targets_;
  TokenView starts_, positions_;  // [B*T] with packed documents (allocated at first use)
  bool docs_ = false;
  double loss_scale_ = 0.0;  // TokenLayout::loss_scale of the current batch
  std::vector<TrackedBuffer> residual_;  // L+1 streams: layer l reads l, writes l+1
  std::vector<std::unique_ptr<LayerActivations>> acts_;
  std::vector<TrackedBuffer> mid_;  // checkpointed sub-layers: each layer's res2
  TrackedBuffer lnf_, lnf_mean_, lnf_rstd_, logits_, losses_, qkv32_;
  TrackedBuffer tmp_, dres_a_, dres_b_, d_ln_, d_tmp_, d_qkv_, d_atty_, d_up_, d_act_;
  Vec dres_out_;  // the gradient of the current top of the residual stream
  std::unique_ptr<kernels::Bf16Gemms> bf16_;
  std::vector<double> seq_losses_;
  // Experts: per layer (null for a dense one; one set with checkpointing), the shared backward
  // scratch (router logits / their gradient [N, E], d ye and d xe [R, C], d gate|up [R, 2F],
  // d h [R, F], d weights [N, K]) and the balance loss: each sparse layer's choices per expert
  // and summed probabilities from its last forward, the loss, and its d/dp per expert [E].
  std::vector<std::unique_ptr<MoeActivations>> moe_;
  TrackedBuffer router_logits_, moe_dye_, moe_dgu_, moe_dh_, moe_dw_, aux_dp_;
  std::vector<std::vector<std::int64_t>> moe_counts_;
  std::vector<std::vector<double>> moe_psum_;
  std::vector<std::int64_t> moe_dropped_;  // per layer, the last forward's
  std::vector<int> sparse_index_;          // per layer: its place among the sparse ones (-1)
  std::vector<float> bias_;                // moe.balance = bias: [sparse layers x E], and on the device:
  TrackedBuffer router_bias_;
  double aux_loss_ = 0.0;
  // Expert parallelism: the group, the rows received [P R, C] (outputs forward, their
  // gradients backward), the counts' exchange [2 E], and with grads_home the weight gradients
  // sent home and received [2 x E x 3 F C].
  comm::Communicator* ep_ = nullptr;
  TrackedBuffer moe_yr_, moe_cnt_, moe_gsend_, moe_grecv_;
  // With bf16 GEMMs (kernels::bf16_dispatch): the dispatched rows as bf16, sent [R, C] and
  // received [Rx, C], Rx = kernels::received_rows_bound (decoder/moe_ep.cpp).
  TrackedBuffer moe_send_bf16_, moe_recv_bf16_;
  std::vector<Exchange> exchanges_;
};

}  // namespace fsdp
