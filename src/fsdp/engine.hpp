// SPDX-License-Identifier: MIT
// The sharding engine: owns every unit's parameter, gradient and optimizer buffers on this rank
// and runs the training step of DESIGN.md: gather, compute, free; regather, compute gradients,
// reduce-scatter; clip by the global norm and step the local shard.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "comm/process_groups.hpp"
#include "config/run_config.hpp"
#include "core/memory.hpp"
#include "fsdp/gather_pipeline.hpp"
#include "fsdp/sharded_unit.hpp"
#include "fsdp/strategy.hpp"
#include "io/trace.hpp"
#include "model/gpt2.hpp"

namespace fsdp {

struct StepResult {
  double loss = 0.0;       // mean over the global batch
  double grad_norm = 0.0;  // before clipping
  double lr = 0.0;
  double compute_s = 0.0, comm_exposed_s = 0.0, comm_total_s = 0.0, optimizer_s = 0.0;
  double gather_bytes = 0.0, reduce_bytes = 0.0;  // parameter all-gathers, gradient reductions
  bool skipped = false;        // non-finite loss or gradients and train.on_nonfinite = skip_step
  std::string nonfinite_unit;  // the first unit whose gradients are not finite, if any
};

// Non-finite loss or gradient norm under train.on_nonfinite = abort (every rank throws it).
struct NonFiniteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Engine {
 public:
  // load(j, model): put micro-batch j's tokens into the model (Gpt2::set_batch).
  using LoadMicroBatch = std::function<void(int j, Gpt2& model)>;

  Engine(const RunConfig& cfg, comm::ProcessGroups& groups, MemoryTracker& tracker, Trace& trace);
  ~Engine();

  StepResult train_step(int step, int n_micro, const LoadMicroBatch& load);
  // Forward only over n_micro micro-batches; returns the per-sequence losses of each.
  std::vector<double> evaluate(int n_micro, const LoadMicroBatch& load);

  // Whether the optimizer of the coming train_step issues the next step's first all-gathers
  // (zero3, hybrid) as it finishes each unit. Only when nothing but another step, an evaluation
  // or a checkpoint save comes next: none of them changes the parameters.
  void set_prefetch_next_step(bool on) { prefetch_next_step_ = on; }

  Strategy strategy() const { return strategy_; }
  int shard_group_size() const { return nshard_; }
  std::vector<ShardedUnit>& units() { return units_; }
  const std::vector<ShardedUnit>& units() const { return units_; }
  Gpt2& model() { return *model_; }
  std::int64_t padded_params() const;
  // The largest padded unit, in elements (the gathered window's unit of account).
  std::int64_t largest_unit() const;
  // Copies of the full (unpadded) parameters of unit u, gathered (tests and checkpoints).
  std::vector<float> full_params(int u);

  // What this rank owns of unit u: flat elements [shard_begin, shard_begin + shard) of the
  // padded unit. Parameters, and AdamW's two moments, as views (checkpoints read and write these).
  Vec param_shard(int u) { return param_shard(units_[u]); }
  Vec exp_avg_shard(int u) { return units_[u].exp_avg.vec(); }
  Vec exp_avg_sq_shard(int u) { return units_[u].exp_avg_sq.vec(); }
  // Whether this rank is the one copy of its shard that writes it (replicas hold the same bytes).
  bool writes_shard() const { return groups_.replicate->rank() == 0; }
  // After param_shard(u) was overwritten (a resume): rebuild the full parameters that zero1,
  // zero2 and ddp keep, from every rank's shard.
  void sync_full_params();
  int optimizer_steps() const { return optimizer_steps_; }
  void set_optimizer_steps(int n) { optimizer_steps_ = n; }
  const RunConfig& config() const { return cfg_; }

 private:
  void forward_backward(int n_micro, const LoadMicroBatch& load, double& loss_sum);
  // One micro-batch's forward and backward; reduce_last: reduce each unit after its last use.
  double micro_batch(int j, const LoadMicroBatch& load, float dloss, bool reduce_last);
  // Deterministic mode (train.deterministic): see engine_deterministic.cpp.
  using GradSet = std::vector<TrackedBuffer>;
  GradSet tree_accumulate(int lo, int hi, const LoadMicroBatch& load, std::vector<double>& losses);
  void tree_reduce_grads(int global_micro);
  double deterministic_norm2();
  double deterministic_loss(const std::vector<double>& local, int n_micro);
  void begin_unit_backward(int u);
  void finish_unit_backward(int u, bool reduce_now);
  void drain_reductions(std::size_t keep_pending);
  double optimizer_step(int step, StepResult& r);
  std::string first_nonfinite_unit();
  void inject_fault(int step);
  Vec param_shard(ShardedUnit& su);
  Vec grad_shard(ShardedUnit& su);

  struct PendingReduce {
    int unit;
    comm::Handle handle;
    TrackedBuffer recv;
    TrackedBuffer send;   // fsdp.reduce_dtype = bf16: the cast of the unit's gradients
    bool direct = false;  // reduced straight into the gradient shard (recv unused)
  };
  // The second half of a bf16 all-reduce whose reduce-scatter of `send` into `block` is done:
  // round the averaged block to bf16, all-gather it into `send`, widen into `out`.
  static void finish_bf16_all_reduce(comm::Communicator& c, TrackedBuffer& send,
                                     const TrackedBuffer& block, Vec out);
  void all_reduce_bf16(comm::Communicator& c, Vec buf);

  RunConfig cfg_;
  RunSetup setup_;
  Strategy strategy_;
  comm::ProcessGroups& groups_;
  comm::Communicator& shard_comm_;
  MemoryTracker& tracker_;
  Trace& trace_;
  int nshard_;
  std::unique_ptr<Gpt2> model_;
  std::vector<ShardedUnit> units_;
  CommTimes comm_times_;
  std::unique_ptr<ParamWidener> widener_;  // fsdp.mixed_precision = bf16
  bool reduce_bf16_ = false;               // fsdp.reduce_dtype = bf16
  std::vector<char> shard_fresh_;  // per unit: no reduction has reached its gradient shard yet
  std::vector<char> grad_zeroed_;  // per unit: the optimizer left this rank's part of grad_full 0
  std::unique_ptr<GatherPipeline> pipeline_;
  std::vector<PendingReduce> pending_;
  int optimizer_steps_ = 0;
  bool deterministic_ = false;
  bool prefetch_next_step_ = false;
};

}  // namespace fsdp
