// SPDX-License-Identifier: MIT
// A decoder as the engine runs it: one sharding unit at a time, with parameters the engine
// gathers and frees. The engine owns the parameters and decides when each unit's full values
// exist; the model computes with the views it is handed and owns its activations.
//
// The step (fsdp/schedule.hpp): forward_unit for units 0..U-1, then the head (the loss) with
// the parameters of Architecture::head_unit; backward: the head, then backward_unit for
// U-1..0. Parameter gradients accumulate (+=) into the unit's gradient buffer.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/memory.hpp"
#include "model/model_config.hpp"
#include "model/unit_layout.hpp"
#include "model/unit_params.hpp"

namespace fsdp {

// How a batch's tokens are scored and which attend to which, beyond one document per window
// with every target scored (data.packing = documents, trained-token masks: docs/data.md).
struct TokenLayout {
  // [micro_batch * block_size] host array: the window position where each token's document
  // begins (positions restart there and no token attends across it). Null: position t, causal.
  const std::int32_t* doc_starts = nullptr;
  // > 0: targets < 0 are not scored, head_forward returns the sum of the scored tokens' losses
  // times loss_scale, head_backward weights each scored token by dloss * loss_scale, and
  // sequence_losses are per-sequence sums (not means). The trainer sets it to
  // (micro-batches in the global batch) / (scored tokens in the global batch), so that the
  // step's objective is the mean over the global batch's scored tokens at any rank count.
  double loss_scale = 0.0;
};

// Model FLOPs of one stage for one micro-batch.
struct UnitFlops {
  double forward = 0.0;
  double backward = 0.0;
  double recompute = 0.0;  // activation checkpointing's forward again, inside backward
};

class Decoder {
 public:
  virtual ~Decoder() = default;

  virtual const ModelConfig& config() const = 0;
  virtual const std::vector<UnitLayout>& units() const = 0;
  virtual int micro_batch() const = 0;
  std::int64_t tokens_per_micro_batch() const {
    return std::int64_t(micro_batch()) * config().block_size;
  }

  // inputs and targets: host arrays of micro_batch() * block_size tokens each.
  virtual void set_batch(const std::int32_t* inputs, const std::int32_t* targets) = 0;
  // The same with packed documents or scored-token weights; a decoder without them refuses.
  virtual void set_batch(const std::int32_t* inputs, const std::int32_t* targets,
                         const TokenLayout& layout) {
    if (layout.doc_starts || layout.loss_scale > 0)
      throw std::invalid_argument("this architecture does not train on packed documents or masks");
    set_batch(inputs, targets);
  }

  // Model FLOPs of each unit's stage and of the head's, for one micro-batch, as the model's layers
  // declare them: what the planner's timeline charges each stage.
  virtual std::vector<UnitFlops> unit_flops() const = 0;
  virtual UnitFlops head_flops() const = 0;

  virtual void forward_unit(int u, const UnitParams& p) = 0;
  // The LM head and the loss: returns the micro-batch's mean loss. p: the head unit's
  // parameters (Architecture::head_unit).
  virtual double head_forward(const UnitParams& p) = 0;
  // dloss: the weight of this micro-batch's mean loss in the step's objective. grad: the head
  // unit's gradients.
  virtual void head_backward(const UnitParams& p, Vec grad, float dloss) = 0;
  virtual void backward_unit(int u, const UnitParams& p, Vec grad) = 0;

  // Per-sequence mean losses of the last head_forward (evaluation sums these across ranks).
  virtual const std::vector<double>& sequence_losses() const = 0;
  // The last head_forward's logits of sequence b at position t (vocab_size floats, on the
  // host): what sampling draws the next token from.
  virtual std::vector<float> logits_at(int b, int t) const = 0;
  // Mixtures of experts: the last head_forward's load-balancing loss (Hugging Face's
  // load_balancing_loss_func over the micro-batch's sparse layers, before its coefficient), and
  // the last forward's (token, slot) choices of each expert, sparse layer after sparse layer
  // ([layers x experts]). Dense models: 0 and {}.
  virtual double aux_loss() const { return 0.0; }
  virtual std::vector<std::int64_t> expert_counts() const { return {}; }
  // Choices the last forward dropped at an expert's capacity (moe.capacity_factor).
  virtual std::int64_t dropped_choices() const { return 0; }
  // fsdp.expert_parallel > 1: the token exchanges since the last call, each from issue to
  // completion on the monotonic clock (core/clock.hpp), the part of it spent waiting (the rest
  // overlapped compute) and what each moved; the engine traces them and sums their waits.
  struct Exchange {
    double t0 = 0.0, t1 = 0.0;
    double exposed_s = 0.0;
    std::int64_t bytes = 0;  // sent by this rank
    const char* what = "";
  };
  virtual std::vector<Exchange> take_exchanges() { return {}; }
  // moe.balance = bias: the per-expert biases, sparse layer after sparse layer ([layers x
  // experts]; empty otherwise), their restore from a checkpoint, and the step's update from the
  // global batch's choices per expert (expert_counts' layout, summed over the ranks).
  virtual std::vector<float> router_bias() const { return {}; }
  virtual void set_router_bias(const std::vector<float>& bias) { (void)bias; }
  virtual void update_router_bias(const std::vector<double>& counts) { (void)counts; }

  // fsdp.gemm_dtype = bf16: the GEMMs take bf16 weights and activations. Needs units bound as
  // bf16 (UnitParams::from_bf16 or rounded); allocates the casts' scratch
  // (Architecture::bf16_scratch_elements, twice).
  virtual void use_bf16_gemms(MemoryTracker& tracker) = 0;
};

}  // namespace fsdp
