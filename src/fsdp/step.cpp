// SPDX-License-Identifier: MIT
// The training step, as DESIGN.md writes it:
//   forward:  for each unit: all-gather (prefetched k ahead), compute, free
//   backward: for each unit in reverse: all-gather again, compute gradients, reduce-scatter
//   optimizer: the global gradient norm, clipping, AdamW on the local shard
// with gradient accumulation over micro-batches and deterministic mode's tree sums around it.
#include <algorithm>
#include <cmath>

#include "core/host_copy.hpp"
#include "core/faults.hpp"
#include "fsdp/optim/lr_schedule.hpp"
#include "fsdp/engine.hpp"
#include "fsdp/schedule.hpp"

namespace fsdp {

double Engine::micro_batch(int j, const LoadMicroBatch& load, float dloss, bool reduce_last) {
  const std::vector<Stage>& stages = stages_;
  const int nf = n_forward_;
  const bool keep_fwd = !setup_.reshard_after_forward;
  const bool ddp = setup_.strategy == Strategy::DDP;
  Decoder& m = *model_;
  double loss = 0.0;

  // On a counting tracker (the planner's run, plan/counted_step.hpp) the model computes nothing:
  // its buffers were all made with it, and the step's own allocations are what is counted.
  if (!counted_) load(j, m);
  gather_->begin(stage_units_);
  for (int i = 0; i < nf; ++i) {  // forward: gather, compute, free
    const Stage s = stages[std::size_t(i)];
    const UnitParams p = gather_->all_gather(i);
    const double t0 = now_s();
    if (counted_) {
      log_stage(s, false);
    } else if (s.head) {
      loss = m.head_forward(p);
      note_experts(m);
    } else {
      m.forward_unit(s.unit, p);
    }
    if (!counted_) ExecSpace().fence();
    trace_compute("forward ", s.unit, t0);
    gather_->release(i, keep_fwd);
  }
  // nvme, parameter shards in memory: the optimizer's first reads run beside the last backward
  // (with the shards on disk they would queue ahead of the backward's own reads).
  if (prefetch_optimizer_) optimizer_->prefetch_state();
  for (int i = nf; i < int(stages.size()); ++i) {  // backward: regather, gradients, reduce
    const Stage s = stages[std::size_t(i)];
    const UnitParams p = gather_->all_gather(i);
    reduce_->before_backward(s.unit);
    const Vec grads = state_->units()[std::size_t(s.unit)].grad_full.vec();
    const double t0 = now_s();
    if (counted_) {
      log_stage(s, true);
    } else if (s.head) {
      m.head_backward(p, grads, dloss);
    } else {
      m.backward_unit(s.unit, p, grads);
    }
    if (!counted_) ExecSpace().fence();
    trace_compute("backward ", s.unit, t0);
    gather_->release(i);
    if (!reduce_after_[std::size_t(i - nf)] || !reduce_last) continue;  // not yet complete
    if (ddp) reduce_->all_reduce(s.unit);
    else reduce_->reduce_scatter(s.unit);
  }
  gather_->finish();
  return loss;
}

void Engine::forward_backward(int n_micro, const LoadMicroBatch& load, double& loss_sum) {
  for (int j = 0; j < n_micro; ++j) {
    const bool last_micro = j + 1 == n_micro;
    const bool reduce =
        last_micro || (shards_grads(setup_.strategy) && setup_.accumulate_sharded);
    prefetch_optimizer_ = last_micro && setup_.offload == Offload::Nvme && !setup_.params_on_disk();
    loss_sum += micro_batch(j, load, 1.f / n_micro, reduce);
  }
  reduce_->finish_step();
}

void Engine::zero_grads() {
  std::vector<ShardedUnit>& units = state_->units();
  grad_zeroed_.resize(units.size(), 0);
  if (counted_) {  // the planner's run: nothing to zero, and no kernel may run
    grad_zeroed_.assign(units.size(), 0);
    return;
  }
  for (std::size_t u = 0; u < units.size(); ++u) {
    ShardedUnit& su = units[u];
    if (su.grad_shard.allocated() && setup_.deterministic) su.grad_shard.view().fill(0.f);
    if (!shards_grads(setup_.strategy) && su.trains()) {
      if (grad_zeroed_[u]) {  // the last optimizer step zeroed this rank's part already
        const std::int64_t end = su.grad_begin + su.train_shard;
        Kokkos::deep_copy(su.grad_full.vec(0, su.grad_begin), 0.f);
        Kokkos::deep_copy(su.grad_full.vec(end, su.grad_numel() - end), 0.f);
      } else {
        Kokkos::deep_copy(su.grad_full.vec(), 0.f);
      }
    }
    grad_zeroed_[u] = 0;
  }
}

void Engine::note_experts(const Decoder& m) {
  const std::vector<std::int64_t> c = m.expert_counts();
  if (c.empty()) return;
  aux_sum_ += m.aux_loss();
  dropped_sum_ += double(m.dropped_choices());
  expert_counts_.resize(c.size(), 0.0);
  for (std::size_t i = 0; i < c.size(); ++i) expert_counts_[i] += double(c[i]);
}

// Summed over the world (every rank has the same sparse layers): the counts are integers, so
// the imbalance is the global batch's exactly.
void Engine::finish_experts(int n_micro, StepResult& r) {
  if (expert_counts_.empty()) return;
  const int E = model_->config().n_experts;
  std::vector<double> v(expert_counts_);
  v.push_back(dropped_sum_);
  v.push_back(aux_sum_);
  v.push_back(exchange_s_);
  v.push_back(exchange_bytes_);
  mesh_.world().all_reduce_sum(v.data(), int(v.size()));
  const double n = mesh_.world().size();
  r.exchange_bytes = v.back() / n;
  r.exchange_s = v[v.size() - 2] / n;
  r.aux_loss = v[v.size() - 3] / (double(n_micro) * n);
  r.dropped_choices = std::int64_t(v[v.size() - 4]);
  v.resize(v.size() - 4);
  for (std::size_t l = 0; l < v.size(); l += std::size_t(E)) {
    double mx = 0.0, sum = 0.0;
    for (int e = 0; e < E; ++e) {
      mx = std::max(mx, v[l + std::size_t(e)]);
      sum += v[l + std::size_t(e)];
    }
    r.expert_load.push_back(sum > 0 ? mx * E / sum : 1.0);
  }
  global_counts_ = v;  // the bias balance's update, once the step is taken
  aux_sum_ = dropped_sum_ = exchange_s_ = exchange_bytes_ = 0.0;
  expert_counts_.assign(expert_counts_.size(), 0.0);
}

StepResult Engine::train_step(int step, int n_micro, const LoadMicroBatch& load) {
  StepResult r;
  aux_sum_ = dropped_sum_ = exchange_s_ = exchange_bytes_ = 0.0;
  expert_counts_.assign(expert_counts_.size(), 0.0);
  comm_times_.clear();
  host_copy::take_bytes_moved();  // what an evaluation or a checkpoint moved is not the step's
  OffloadFile* disk = state_->offload_file();
  if (disk) disk->take_stats();
  const double t_start = now_s();
  // Gradient shards are not zeroed: the step's first reduction into each one overwrites it.
  reduce_->begin_step(/*direct=*/!setup_.deterministic);
  zero_grads();
  if (setup_.deterministic) {
    std::vector<double> losses;
    tree_reduce_grads(n_micro, load, losses);
    r.loss = deterministic_loss(losses, n_micro);
  }
  double loss_sum = 0.0;
  if (!setup_.deterministic) forward_backward(n_micro, load, loss_sum);
  const double t_opt = now_s();
  if (!setup_.deterministic)
    r.loss = mesh_.world().all_reduce_sum(loss_sum / n_micro) / mesh_.world().size();
  finish_experts(n_micro, r);
  inject_fault(step);
  r.optimizer_s = optimizer_step(step, r);
  // moe.balance = bias (a no-op otherwise): a skipped step changes no state, the biases included.
  if (!global_counts_.empty() && !r.skipped) model_->update_router_bias(global_counts_);
  r.comm_exposed_s = comm_times_.exposed_s;
  r.comm_total_s = comm_times_.total_s;
  r.gather_bytes = comm_times_.gather_bytes;
  r.reduce_bytes = comm_times_.reduce_bytes;
  r.offload_bytes = host_copy::take_bytes_moved();
  if (disk) {
    const IoStats io = disk->take_stats();
    r.disk_read_bytes = io.read_bytes;
    r.disk_write_bytes = io.write_bytes;
    r.disk_wait_s = io.wait_s;
  }
  r.compute_s = (t_opt - t_start) - r.comm_exposed_s;
  return r;
}

double Engine::optimizer_step(int step, StepResult& r) {
  const double t0 = now_s();
  prefetch_optimizer_ = false;
  optimizer_->prefetch_state();  // nvme: if the backward did not, now, beside the norm
  const double norm2 = setup_.deterministic ? deterministic_norm2() : optimizer_->norm2();
  const std::vector<int> carried =
      prefetch_next_step_ ? gather_->first_gathers(forward_units_) : std::vector<int>{};
  // Persistent full gradients (ddp, zero1) are zeroed by the update itself: the padding of the
  // shard is never written, so it stays zero.
  const bool zero_grad = !shards_grads(setup_.strategy) && !setup_.deterministic;
  if (nothing_scored_) {  // as a skipped step: parameters and optimizer state stay as they were
    r.grad_norm = std::sqrt(norm2);
    r.lr = optim::learning_rate(setup_.train, step);
    r.loss = std::nan("");
    r.skipped = r.nothing_scored = true;
    return now_s() - t0;
  }
  const OptimizerResult o = optimizer_->step(step, norm2, r.loss, zero_grad, [&](int u) {
    grad_zeroed_[std::size_t(u)] = zero_grad;
    if (std::find(carried.begin(), carried.end(), u) != carried.end()) {
      gather_->all_gather_next_step(u);
    }
  });
  r.grad_norm = o.grad_norm;
  r.lr = o.lr;
  r.skipped = o.skipped;
  r.nonfinite_unit = o.nonfinite_unit;
  if (o.skipped) return now_s() - t0;
  state_->sync_full_params();
  if (!counted_) ExecSpace().fence();
  return now_s() - t0;
}

void Engine::inject_fault(int step) {
  std::string unit = faults::nan_unit(step);
  if (unit.empty()) return;
  const std::size_t slash = unit.find('/');
  const std::string tensor = slash == std::string::npos ? "" : unit.substr(slash + 1);
  unit = unit.substr(0, slash);
  for (int u = 0; u < int(state_->units().size()); ++u) {
    ShardedUnit& su = state_->units()[std::size_t(u)];
    if (su.layout->name != unit || !su.trains()) continue;
    if (tensor.empty()) {
      if (state_->shard_comm().rank() == 0) state_->grad_shard(u).sub(0, 1).fill(std::nanf(""));
      continue;
    }
    for (const PartShard& ps : su.parts)
      for (const TensorSpec& t : ps.layout->tensors)
        if (ps.part.trainable && t.name == tensor && t.offset >= ps.shard_begin &&
            t.offset < ps.shard_begin + ps.shard)
          state_->grad_shard(u)
              .sub(ps.shard_offset - su.train_offset + t.offset - ps.shard_begin, 1)
              .fill(std::nanf(""));
  }
}

std::vector<double> Engine::evaluate(int n_micro, const LoadMicroBatch& load) {
  std::vector<double> losses;
  Decoder& m = *model_;
  for (int j = 0; j < n_micro; ++j) {
    load(j, m);
    gather_->begin(forward_units_);
    for (int i = 0; i < n_forward_; ++i) {
      const UnitParams p = gather_->all_gather(i);
      if (stages_[std::size_t(i)].head) m.head_forward(p);
      else m.forward_unit(stages_[std::size_t(i)].unit, p);
      gather_->release(i);
    }
    gather_->finish();
    m.take_exchanges();  // an evaluation's exchanges are not a step's
    const auto& s = m.sequence_losses();
    losses.insert(losses.end(), s.begin(), s.end());
  }
  return losses;
}

void Engine::log_stage(const Stage& s, bool backward) {
  StepLog* log = tracker_.log();
  if (!log) return;
  const StageCost& c = s.head ? costs_.head : costs_.units[std::size_t(s.unit)];
  if (backward) log->compute(c.flops.backward, c.flops.recompute);
  else log->compute(c.flops.forward);
  if (s.head || c.exchange <= 0) return;
  // The sparse layers' dispatch and return, forward; backward, their gradients' (and, under
  // checkpointing, the forward's again first).
  comm::Communicator& experts = mesh_.group(comm::MeshDim::Expert);
  const int n = backward && setup_.activation_checkpointing() ? 4 : 2;
  for (int i = 0; i < n; ++i) experts.declare_blocking(Transfer::AllToAll, c.exchange);
  if (backward && c.grads_home > 0) experts.declare_blocking(Transfer::AllToAll, c.grads_home);
}

void Engine::trace_compute(const char* pass, int unit, double t0) {
  const double t1 = now_s();
  // The model's own collectives inside this compute (the experts' token exchanges): summed for
  // the step and traced on the communication row.
  const std::string& name = state_->units()[std::size_t(unit)].layout->name;
  for (const Decoder::Exchange& x : model_->take_exchanges()) {
    exchange_s_ += x.exposed_s;
    exchange_bytes_ += double(x.bytes);
    if (trace_.enabled()) trace_.add(std::string(x.what) + " " + name, "comm", x.t0, x.t1, 1);
  }
  if (!trace_.enabled()) return;
  trace_.add(pass + name, "compute", t0, t1, 0);
}

}  // namespace fsdp
