// SPDX-License-Identifier: MIT
// The sharding engine: one rank's model state (sharded_state.hpp), the all-gather and
// reduce-scatter pipelines around the model's units, and the optimizer, put together into the
// training step of DESIGN.md (step.cpp): gather, compute, free; regather, compute gradients,
// reduce-scatter; clip by the global norm and step the local shard.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "comm/device_mesh.hpp"
#include "config/run_setup.hpp"
#include "core/memory.hpp"
#include "fsdp/gather_pipeline.hpp"
#include "fsdp/optim/optimizer_step.hpp"
#include "fsdp/reduce_pipeline.hpp"
#include "fsdp/schedule.hpp"
#include "fsdp/sharded_state.hpp"
#include "fsdp/stage_costs.hpp"
#include "fsdp/strategy.hpp"
#include "io/trace.hpp"
#include "model/architecture.hpp"

namespace fsdp {

struct StepResult {
  double loss = 0.0;       // mean over the global batch
  double grad_norm = 0.0;  // before clipping
  double lr = 0.0;
  double compute_s = 0.0, comm_exposed_s = 0.0, comm_total_s = 0.0, optimizer_s = 0.0;
  double gather_bytes = 0.0, reduce_bytes = 0.0;  // parameter all-gathers, gradient reductions
  double offload_bytes = 0.0;  // fsdp.offload: copied between the device and host memory
  // fsdp.offload = nvme: this rank's offload file, read and written, and the time the step
  // waited for it.
  double disk_read_bytes = 0.0, disk_write_bytes = 0.0, disk_wait_s = 0.0;
  // Mixtures of experts: the load-balancing loss (before its weight), the mean over the step's
  // micro-batches and ranks; per sparse layer the busiest expert's share of the global batch's
  // (token, slot) choices over the mean share (1: balanced).
  double aux_loss = 0.0;
  std::vector<double> expert_load;
  std::int64_t dropped_choices = 0;  // moe.capacity_factor: summed over micro-batches and ranks
  // fsdp.expert_parallel > 1: the token exchanges' seconds and bytes sent in the step, the mean
  // over ranks (they block the compute, so all of it is exposed time).
  double exchange_s = 0.0, exchange_bytes = 0.0;
  bool skipped = false;        // non-finite loss or gradients and train.on_nonfinite = skip_step
  std::string nonfinite_unit;  // the first unit whose gradients are not finite, if any
  // The global batch scored no token (a mask that trains none of it): loss is NaN, meaning
  // none, and no update was applied (skipped is true as well).
  bool nothing_scored = false;
};

class Engine {
 public:
  // load(j, model): put micro-batch j's tokens into the model (Decoder::set_batch).
  using LoadMicroBatch = std::function<void(int j, Decoder& model)>;

  // setup: the run as the trainer resolved it for these process groups (hybrid's shard group
  // included); its model's architecture (model.arch) builds the model.
  // offload: the rank's open offload file under fsdp.offload = nvme (the trainer opens it:
  // core/offload_file.hpp), sized ShardedState::offload_bytes; else null.
  Engine(const RunSetup& setup, comm::DeviceMesh& mesh, MemoryTracker& tracker,
         Trace& trace, OffloadFile* offload = nullptr);
  ~Engine();

  // step.cpp
  StepResult train_step(int step, int n_micro, const LoadMicroBatch& load);
  // Forward only over n_micro micro-batches; returns the per-sequence losses of each.
  std::vector<double> evaluate(int n_micro, const LoadMicroBatch& load);

  // Whether the optimizer of the coming train_step issues the next step's first all-gathers
  // (zero3, hybrid) as it finishes each unit. Only when nothing but another step, an evaluation
  // or a checkpoint save comes next: none of them changes the parameters.
  void set_prefetch_next_step(bool on) { prefetch_next_step_ = on; }
  // The coming train_step's global batch scores no token: it is run (every rank takes part in
  // the same collectives) but applies no update: no weight decay, no moments, no step count.
  void set_nothing_scored(bool on) { nothing_scored_ = on; }

  ShardedState& state() { return *state_; }
  Decoder& model() { return *model_; }
  const RunSetup& setup() const { return setup_; }
  // The sharded state's, for the callers that hold an engine.
  Strategy strategy() const { return setup_.strategy; }
  int shard_group_size() const { return state_->shard_group_size(); }
  std::vector<ShardedUnit>& units() { return state_->units(); }
  const std::vector<ShardedUnit>& units() const { return state_->units(); }
  std::int64_t padded_params() const { return state_->padded_params(); }
  std::int64_t largest_unit() const { return state_->largest_unit(); }
  std::vector<float> full_params(int u) { return state_->full_params(u); }
  ShardVec param_shard(int u) { return state_->param_shard(u); }
  ShardVec exp_avg_shard(int u) { return state_->exp_avg_shard(u); }
  ShardVec exp_avg_sq_shard(int u) { return state_->exp_avg_sq_shard(u); }
  void sync_full_params() { state_->sync_full_params(); }
  int optimizer_steps() const { return state_->optimizer_steps(); }
  // moe.balance = bias: the routers' biases (Decoder::router_bias), saved and restored with a
  // checkpoint.
  std::vector<float> router_bias() const { return model_->router_bias(); }
  void set_router_bias(const std::vector<float>& bias) { model_->set_router_bias(bias); }
  double muon_flops() const { return optimizer_->muon_flops(); }
  void set_optimizer_steps(int n) { state_->set_optimizer_steps(n); }

 private:
  // Each training micro-batch's balance loss and choices per expert (Decoder::aux_loss,
  // expert_counts), summed for the step (step.cpp).
  void note_experts(const Decoder& m);
  void finish_experts(int n_micro, StepResult& r);
  double aux_sum_ = 0.0, dropped_sum_ = 0.0, exchange_s_ = 0.0, exchange_bytes_ = 0.0;
  std::vector<double> global_counts_;  // the step's choices per expert, summed over the world
  std::vector<double> expert_counts_;

  // step.cpp: one micro-batch's forward and backward; reduce_last: reduce each unit after its
  // last use.
  double micro_batch(int j, const LoadMicroBatch& load, float dloss, bool reduce_last);
  void trace_compute(const char* pass, int unit, double t0);  // pass: "forward " or "backward "
  // The counted run (a counting tracker with a log): what stage s's compute would have cost,
  // logged where the model would have run (fsdp/stage_costs.hpp).
  void log_stage(const Stage& s, bool backward);
  void forward_backward(int n_micro, const LoadMicroBatch& load, double& loss_sum);
  void zero_grads();  // the step's full gradients start at zero (what the optimizer left)
  double optimizer_step(int step, StepResult& r);
  void inject_fault(int step);
  // deterministic.cpp (train.deterministic)
  using GradSet = std::vector<TrackedBuffer>;
  GradSet tree_accumulate(int lo, int hi, const LoadMicroBatch& load, std::vector<double>& losses);
  // This rank's micro-batches summed over their canonical nodes, exchanged, combined: every
  // rank's gradient shard holds the step's mean gradient, the same bits on any N.
  void tree_reduce_grads(int n_micro, const LoadMicroBatch& load, std::vector<double>& losses);
  double deterministic_norm2();
  double deterministic_loss(const std::vector<double>& local, int n_micro);

  RunSetup setup_;
  const Architecture& arch_;
  int head_unit_;  // the unit whose parameters the LM head reads
  // The step's stages (fsdp/schedule.hpp), made once: forward ones first, n_forward_ of them;
  // per backward stage whether its unit's gradients are complete after it.
  std::vector<Stage> stages_;
  std::vector<int> stage_units_, forward_units_;
  int n_forward_ = 0;
  std::vector<bool> reduce_after_;
  comm::DeviceMesh& mesh_;
  RunLayout layout_;          // the units' parts over the mesh (fsdp/part_layout.hpp)
  ParallelContext parallel_;  // what the model was built with
  MemoryTracker& tracker_;
  const bool counted_;  // a counting tracker: buffers are counted, nothing is computed
  StageCosts costs_;    // with its log: what each stage's compute costs
  Trace& trace_;
  std::unique_ptr<Decoder> model_;
  std::unique_ptr<ShardedState> state_;
  CommTimes comm_times_;
  std::unique_ptr<ParamWidener> widener_;  // fsdp.mixed_precision = bf16
  std::unique_ptr<GatherPipeline> gather_;
  std::unique_ptr<ReducePipeline> reduce_;
  std::unique_ptr<ShardedOptimizer> optimizer_;
  std::vector<char> grad_zeroed_;  // per unit: the optimizer left this rank's part of grad_full 0
  bool prefetch_next_step_ = false;
  bool nothing_scored_ = false;
  bool prefetch_optimizer_ = false;  // this micro-batch's backward starts the optimizer's reads
};

}  // namespace fsdp
