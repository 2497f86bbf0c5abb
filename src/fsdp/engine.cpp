// SPDX-License-Identifier: MIT
#include "fsdp/engine.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fsdp/schedule.hpp"
#include "optim/adamw.hpp"
#include "optim/lr_schedule.hpp"

namespace fsdp {
namespace {

// The deck as this engine's process groups run it (the trainer has validated it).
RunSetup engine_setup(const RunConfig& cfg, const comm::ProcessGroups& g) {
  RunSetup s = setup_from_config(cfg, g.world->size(), 1);
  if (s.strategy == Strategy::Hybrid) s.shard_group_size = g.shard->size();
  return s;
}

using HostConstVec = Kokkos::View<const float*, HostSpace, Unmanaged>;
using HostVec = Kokkos::View<float*, HostSpace, Unmanaged>;

}  // namespace

Engine::Engine(const RunConfig& cfg, comm::ProcessGroups& groups, MemoryTracker& tracker,
               Trace& trace)
    : cfg_(cfg),
      setup_(engine_setup(cfg, groups)),
      strategy_(setup_.strategy),
      groups_(groups),
      shard_comm_(*groups.shard),
      tracker_(tracker),
      trace_(trace),
      nshard_(groups.shard->size()),
      deterministic_(cfg.train.deterministic) {
  reduce_bf16_ = setup_.reduce_bf16;
  const bool bf16_params = setup_.precision == Precision::BF16;
  model_ = std::make_unique<Gpt2>(cfg.model, cfg.train.micro_batch_size, tracker,
                                  unit_cut(cfg.fsdp.unit));
  const int r = shard_comm_.rank();
  // Offload keeps what the optimizer owns in host memory; the optimizer step runs there. On a
  // CPU build host and device share one RAM, but the tracker accounts the spaces separately, so
  // the device saving is measured here and real on a GPU.
  const MemSpace optim_space = setup_.offload == Offload::None ? MemSpace::Device : MemSpace::Host;
  const MemSpace param_space = setup_.offload == Offload::Params ? MemSpace::Host : MemSpace::Device;
  units_.resize(model_->units().size());
  for (std::size_t u = 0; u < units_.size(); ++u) {
    ShardedUnit& su = units_[u];
    su.layout = &model_->units()[u];
    su.numel = su.layout->numel;
    su.padded = setup_.padded_numel(su.numel);
    su.shard = su.padded / nshard_;
    su.shard_begin = std::int64_t(r) * su.shard;
    const std::string& name = su.layout->name;

    // Every rank initialises the full unit the same way and keeps what it owns.
    std::vector<float> full(su.padded, 0.f);
    gpt2_init_unit(*su.layout, full.data(), cfg.train.seed, cfg.model.n_layer);
    if (shards_params(strategy_)) {
      su.params = TrackedBuffer(tracker, name + "::param_shard", su.shard, MemCategory::ParamShard,
                                param_space);
      Kokkos::deep_copy(su.params.vec(), HostConstVec(full.data() + su.shard_begin, su.shard));
    } else {
      su.params = TrackedBuffer(tracker, name + "::params", su.padded, MemCategory::ParamShard);
      Kokkos::deep_copy(su.params.vec(), HostConstVec(full.data(), su.padded));
    }
    if (shards_grads(strategy_))
      su.grad_shard =
          TrackedBuffer(tracker, name + "::grad_shard", su.shard, MemCategory::Grads, param_space);
    else
      su.grad_full = TrackedBuffer(tracker, name + "::grads", su.padded, MemCategory::Grads);
    su.exp_avg = TrackedBuffer(tracker, name + "::exp_avg", su.shard, MemCategory::OptimizerState,
                               optim_space);
    su.exp_avg_sq = TrackedBuffer(tracker, name + "::exp_avg_sq", su.shard,
                                  MemCategory::OptimizerState, optim_space);
  }
  if (bf16_params) widener_ = std::make_unique<ParamWidener>(tracker, model_->units());
  pipeline_ =
      std::make_unique<GatherPipeline>(units_, shard_comm_, tracker, trace, cfg.fsdp.prefetch,
                                       shards_params(strategy_), comm_times_, widener_.get());
}

Engine::~Engine() = default;

std::int64_t Engine::padded_params() const {
  std::int64_t n = 0;
  for (const auto& su : units_) n += su.padded;
  return n;
}

std::int64_t Engine::largest_unit() const {
  std::int64_t n = 0;
  for (const auto& su : units_) n = std::max(n, su.padded);
  return n;
}

Vec Engine::param_shard(ShardedUnit& su) {
  if (shards_params(strategy_)) return su.params.vec();
  return su.params.vec(su.shard_begin, su.shard);
}

Vec Engine::grad_shard(ShardedUnit& su) {
  if (shards_grads(strategy_)) return su.grad_shard.vec();
  return su.grad_full.vec(su.shard_begin, su.shard);
}

void Engine::begin_unit_backward(int u) {
  // A reduction of this unit's previous micro-batch may still read grad_full: finish it first.
  for (std::size_t i = 0; i < pending_.size(); ++i)
    if (pending_[i].unit == u) {
      drain_reductions(pending_.size() - i - 1);
      break;
    }
  ShardedUnit& su = units_[u];
  if (!su.grad_full.allocated())
    su.grad_full =
        TrackedBuffer(tracker_, su.layout->name + "::grads", su.padded, MemCategory::Grads);
}

void Engine::finish_unit_backward(int u, bool reduce_now) {
  if (!reduce_now) return;
  ShardedUnit& su = units_[u];
  Kokkos::fence();  // the gradients must be final before the collective reads them
  PendingReduce pr{u, {}, {}, {}};
  const double t0 = now_s();  // time blocked inside the issue is exposed communication
  FSDP_COMM_SITE("reduce " + su.layout->name);
  if (reduce_bf16_) {
    pr.send = TrackedBuffer(tracker_, su.layout->name + "::reduce_send_bf16", su.padded,
                            MemCategory::CommBuffers, MemSpace::Device, Dtype::BF16, Fill::None);
    cast_to_bf16(su.grad_full.cvec(), pr.send.bf16());
    Kokkos::fence();
    // Sharded gradients need only the cast from here on.
    if (shards_grads(strategy_)) su.grad_full.reset();
  }
  if (strategy_ == Strategy::DDP && reduce_bf16_) {
    // A bf16 all-reduce: this reduce-scatter, then finish_bf16_all_reduce in drain_reductions.
    comm::Communicator& rep = *groups_.replicate;
    pr.recv = TrackedBuffer(tracker_, su.layout->name + "::reduce_recv", su.padded / rep.size(),
                            MemCategory::CommBuffers);
    pr.handle = rep.ireduce_scatter(pr.send.cbf16(), pr.recv.vec(), comm::ReduceOp::Avg);
  } else if (strategy_ == Strategy::DDP) {
    pr.handle = groups_.replicate->iall_reduce(su.grad_full.vec(), comm::ReduceOp::Avg);
  } else {
    // The first reduction of the step into a gradient shard lands in it directly: no receive
    // buffer, no zero fill and no accumulation pass.
    pr.direct = shards_grads(strategy_) && shard_fresh_[std::size_t(u)];
    shard_fresh_[std::size_t(u)] = 0;
    if (!pr.direct)
      pr.recv = TrackedBuffer(tracker_, su.layout->name + "::reduce_recv", su.shard,
                              MemCategory::CommBuffers, MemSpace::Device, Dtype::F32, Fill::None);
    const Vec recv = pr.direct ? su.grad_shard.vec() : pr.recv.vec();
    if (reduce_bf16_)
      pr.handle = shard_comm_.ireduce_scatter(pr.send.cbf16(), recv, comm::ReduceOp::Avg);
    else
      pr.handle = shard_comm_.ireduce_scatter(su.grad_full.cvec(), recv, comm::ReduceOp::Avg);
  }
  comm_times_.exposed_s += now_s() - t0;
  comm_times_.reduce_bytes += double(pr.handle.bytes());
  pending_.push_back(std::move(pr));
  // Let the newest reductions overlap the next units' backward, up to the prefetch depth.
  drain_reductions(std::max(1, cfg_.fsdp.prefetch));
}

void Engine::drain_reductions(std::size_t keep_pending) {
  while (pending_.size() > keep_pending) {
    PendingReduce pr = std::move(pending_.front());
    pending_.erase(pending_.begin());
    ShardedUnit& su = units_[pr.unit];
    const double t0 = now_s();
    pr.handle.wait();
    const double t1 = now_s();
    comm_times_.exposed_s += t1 - t0;
    comm_times_.total_s += pr.handle.completion_time() - pr.handle.issue_time();
    if (trace_.enabled()) trace_.add("wait reduce " + su.layout->name, "wait", t0, t1, 0);
    if (trace_.enabled())
      trace_.add(std::string(strategy_ == Strategy::DDP ? "all_reduce " : "reduce_scatter ") +
                     su.layout->name,
                 "comm", pr.handle.issue_time(), pr.handle.completion_time(), 1);
    if (strategy_ == Strategy::DDP) {
      if (reduce_bf16_)
        finish_bf16_all_reduce(*groups_.replicate, pr.send, pr.recv, su.grad_full.vec());
      continue;
    }
    pr.send.reset();
    const Vec reduced = pr.direct ? su.grad_shard.vec() : pr.recv.vec();
    if (groups_.replicate->size() > 1) {
      if (reduce_bf16_)
        all_reduce_bf16(*groups_.replicate, reduced);
      else
        groups_.replicate->all_reduce(reduced, comm::ReduceOp::Avg);
    }
    if (pr.direct) {
      su.grad_full.reset();
      continue;
    }
    const Vec dst = grad_shard(su);
    const ConstVec src = pr.recv.cvec();
    if (shards_grads(strategy_)) {
      Kokkos::parallel_for(
          "engine::accumulate_grad_shard", Kokkos::RangePolicy<ExecSpace>(0, dst.extent(0)),
          KOKKOS_LAMBDA(const int64_t i) { dst(i) += src(i); });
      su.grad_full.reset();
    } else {
      Kokkos::deep_copy(dst, src);  // zero1: the reduced shard lands in its slice of the full grads
    }
  }
}

void Engine::finish_bf16_all_reduce(comm::Communicator& c, TrackedBuffer& send,
                                    const TrackedBuffer& block, Vec out) {
  const std::int64_t n = block.size();
  const Bf16Vec own(send.bf16().data() + std::int64_t(c.rank()) * n, n);
  cast_to_bf16(block.cvec(), own);
  Kokkos::fence();
  c.all_gather(ConstBf16Vec(own.data(), n), send.bf16());
  widen_bf16(send.cbf16(), out);
}

void Engine::all_reduce_bf16(comm::Communicator& c, Vec buf) {
  const std::int64_t n = std::int64_t(buf.extent(0));
  TrackedBuffer send(tracker_, "replicate_reduce_send_bf16", n, MemCategory::CommBuffers,
                     MemSpace::Device, Dtype::BF16);
  TrackedBuffer block(tracker_, "replicate_reduce_block", n / c.size(), MemCategory::CommBuffers);
  cast_to_bf16(ConstVec(buf.data(), n), send.bf16());
  Kokkos::fence();
  c.reduce_scatter(send.cbf16(), block.vec(), comm::ReduceOp::Avg);
  comm_times_.reduce_bytes += double(n) * 2.0;
  finish_bf16_all_reduce(c, send, block, buf);
}

double Engine::micro_batch(int j, const LoadMicroBatch& load, float dloss, bool reduce_last) {
  const int U = int(units_.size());
  const std::vector<int> fwd = forward_schedule(U), bwd = backward_schedule(U);
  std::vector<int> sched = fwd;
  sched.insert(sched.end(), bwd.begin(), bwd.end());
  const int nf = int(fwd.size());
  const bool keep_fwd = !cfg_.fsdp.reshard_after_forward;
  Gpt2& m = *model_;
  double loss = 0.0;

  load(j, m);
  pipeline_->begin(sched);
  for (int i = 0; i < nf; ++i) {
    const UnitParams p = pipeline_->acquire(i);
    const double t0 = now_s();
    const double stage_loss = m.forward_stage(i, p);
    if (i == nf - 1) loss = stage_loss;
    Kokkos::fence();
    const double t1 = now_s();
    if (trace_.enabled())
      trace_.add("forward " + units_[sched[i]].layout->name, "compute", t0, t1, 0);
    pipeline_->release(i, keep_fwd);
  }
  for (int i = nf; i < int(sched.size()); ++i) {
    const int u = sched[i];
    const UnitParams p = pipeline_->acquire(i);
    begin_unit_backward(u);
    const int b = i - nf;
    const double t0 = now_s();
    m.backward_stage(b, p, units_[u].grad_full.vec(), dloss);
    Kokkos::fence();
    const double t1 = now_s();
    if (trace_.enabled()) trace_.add("backward " + units_[u].layout->name, "compute", t0, t1, 0);
    pipeline_->release(i);
    if (b != 0) finish_unit_backward(u, reduce_last);  // the head stage is not wte's last use
  }
  pipeline_->finish();
  return loss;
}

void Engine::forward_backward(int n_micro, const LoadMicroBatch& load, double& loss_sum) {
  const bool sharded_accumulate = setup_.accumulate_sharded;
  for (int j = 0; j < n_micro; ++j) {
    const bool last_micro = j + 1 == n_micro;
    const bool reduce = last_micro || (shards_grads(strategy_) && sharded_accumulate);
    loss_sum += micro_batch(j, load, 1.f / n_micro, reduce);
  }
  drain_reductions(0);
}

StepResult Engine::train_step(int step, int n_micro, const LoadMicroBatch& load) {
  StepResult r;
  comm_times_.clear();
  const double t_start = now_s();
  // Gradient shards are not zeroed: the step's first reduction into each one overwrites it.
  shard_fresh_.assign(units_.size(), deterministic_ ? 0 : 1);
  grad_zeroed_.resize(units_.size(), 0);
  for (std::size_t u = 0; u < units_.size(); ++u) {
    ShardedUnit& su = units_[u];
    if (su.grad_shard.allocated() && deterministic_) Kokkos::deep_copy(su.grad_shard.vec(), 0.f);
    if (!shards_grads(strategy_)) {
      if (grad_zeroed_[u]) {  // the last optimizer step zeroed this rank's part already
        const std::int64_t end = su.shard_begin + su.shard;
        Kokkos::deep_copy(su.grad_full.vec(0, su.shard_begin), 0.f);
        Kokkos::deep_copy(su.grad_full.vec(end, su.padded - end), 0.f);
      } else {
        Kokkos::deep_copy(su.grad_full.vec(), 0.f);
      }
    }
    grad_zeroed_[u] = 0;
  }
  double loss_sum = 0.0;
  if (deterministic_) {
    std::vector<double> losses;
    GradSet sum = tree_accumulate(0, n_micro, load, losses);
    for (std::size_t u = 0; u < units_.size(); ++u) units_[u].grad_full = std::move(sum[u]);
    tree_reduce_grads(n_micro * groups_.world->size());
    r.loss = deterministic_loss(losses, n_micro);
  } else {
    forward_backward(n_micro, load, loss_sum);
    for (std::size_t u = 0; u < units_.size(); ++u)  // a unit no reduction reached (none today)
      if (shards_grads(strategy_) && shard_fresh_[u])
        Kokkos::deep_copy(units_[u].grad_shard.vec(), 0.f);
  }
  const double t_opt = now_s();
  if (!deterministic_)
    r.loss = groups_.world->all_reduce_sum(loss_sum / n_micro) / groups_.world->size();
  inject_fault(step);
  r.optimizer_s = optimizer_step(step, r);
  r.comm_exposed_s = comm_times_.exposed_s;
  r.comm_total_s = comm_times_.total_s;
  r.gather_bytes = comm_times_.gather_bytes;
  r.reduce_bytes = comm_times_.reduce_bytes;
  r.compute_s = (t_opt - t_start) - r.comm_exposed_s;
  return r;
}

std::string Engine::first_nonfinite_unit() {
  std::vector<double> bad(units_.size(), 0.0);
  for (std::size_t u = 0; u < units_.size(); ++u)
    bad[u] = std::isfinite(optim::sum_squares(grad_shard(units_[u]))) ? 0.0 : 1.0;
  shard_comm_.all_reduce_sum(bad.data(), int(bad.size()));
  for (std::size_t u = 0; u < units_.size(); ++u)
    if (bad[u] > 0.0) return units_[u].layout->name;
  return "";
}

// Test-only fault injection: FSDP_TEST_INJECT_NAN=<unit>@<step> puts a NaN into that unit's
// gradient shard on shard rank 0 at that (0-based) step.
void Engine::inject_fault(int step) {
  static const char* spec = std::getenv("FSDP_TEST_INJECT_NAN");
  if (!spec) return;
  const std::string s(spec);
  const auto at = s.find('@');
  if (at == std::string::npos || std::atoi(s.c_str() + at + 1) != step) return;
  for (auto& su : units_)
    if (su.layout->name == s.substr(0, at) && shard_comm_.rank() == 0) {
      const Vec g = grad_shard(su);
      Kokkos::deep_copy(Kokkos::subview(g, 0), std::nanf(""));
    }
}

double Engine::optimizer_step(int step, StepResult& r) {
  double& grad_norm = r.grad_norm;
  double& lr = r.lr;
  const double t0 = now_s();
  double norm2 = 0.0;
  if (deterministic_) {
    norm2 = deterministic_norm2();
  } else {
    for (auto& su : units_) norm2 += optim::sum_squares(grad_shard(su));
    norm2 = shard_comm_.all_reduce_sum(norm2);
  }
  grad_norm = std::sqrt(norm2);
  lr = optim::learning_rate(cfg_.train, step);
  if (!std::isfinite(grad_norm) || !std::isfinite(r.loss)) {
    r.nonfinite_unit = first_nonfinite_unit();
    const std::string what =
        "step " + std::to_string(step + 1) + ": non-finite " +
        (std::isfinite(r.loss) ? "" : "loss (" + std::to_string(r.loss) + ") and ") +
        "gradient norm (" + std::to_string(grad_norm) +
        "); first unit with non-finite gradients: " +
        (r.nonfinite_unit.empty() ? "none (the loss alone)" : r.nonfinite_unit);
    if (cfg_.train.on_nonfinite != "skip_step") throw NonFiniteError(what);
    r.skipped = true;  // parameters and optimizer state stay as they were
    return now_s() - t0;
  }
  const double clip = cfg_.train.grad_clip;
  optim::AdamWStep s;
  s.lr = float(lr);
  s.beta1 = float(cfg_.train.beta1);
  s.beta2 = float(cfg_.train.beta2);
  s.eps = float(cfg_.train.eps);
  s.weight_decay = float(cfg_.train.weight_decay);
  s.t = ++optimizer_steps_;
  s.grad_scale = (clip > 0.0 && grad_norm > clip) ? float(clip / (grad_norm + 1e-6)) : 1.f;

  const std::vector<int> carried =
      prefetch_next_step_ ? pipeline_->first_gathers(forward_schedule(int(units_.size())))
                          : std::vector<int>{};
  // Persistent full gradients (ddp, zero1) are zeroed by the update itself: the padding of the
  // shard is never written, so it stays zero.
  const bool zero_grad = !shards_grads(strategy_) && !deterministic_;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    ShardedUnit& su = units_[u];
    const Vec p = param_shard(su), g = grad_shard(su);
    const std::int64_t b = su.shard_begin, e = std::min(su.shard_begin + su.shard, su.numel);
    for (const auto& t : su.layout->tensors) {
      const std::int64_t lo = std::max(b, t.offset), hi = std::min(e, t.offset + t.numel);
      if (lo >= hi) continue;
      const std::int64_t o = lo - b, n = hi - lo;
      optim::adamw_update(subvec(p, o, n), subvec(g, o, n), su.exp_avg.vec(o, n),
                          su.exp_avg_sq.vec(o, n), s, t.decay, zero_grad);
    }
    grad_zeroed_[u] = zero_grad;
    if (std::find(carried.begin(), carried.end(), int(u)) != carried.end()) {
      Kokkos::fence();
      pipeline_->carry(int(u));
    }
  }
  sync_full_params();
  Kokkos::fence();
  return now_s() - t0;
}

void Engine::sync_full_params() {
  // zero1/zero2 keep full parameters: bring every rank's updated shard to everyone.
  if (shards_params(strategy_) || nshard_ == 1) return;
  for (auto& su : units_) {
    if (widener_) {
      // Under bf16 the other ranks' parts are only ever computed with as bf16 values: gather
      // the cast (half the bytes) and keep this rank's part as the fp32 master it is.
      TrackedBuffer full(tracker_, su.layout->name + "::param_gather_bf16", su.padded,
                         MemCategory::CommBuffers, MemSpace::Device, Dtype::BF16);
      const Bf16Vec own(full.bf16().data() + su.shard_begin, su.shard);
      cast_to_bf16(param_shard(su), own);
      Kokkos::fence();
      shard_comm_.all_gather(ConstBf16Vec(own.data(), su.shard), full.bf16());
      const std::int64_t end = su.shard_begin + su.shard;
      widen_bf16(ConstBf16Vec(full.bf16().data(), su.shard_begin),
                 su.params.vec(0, su.shard_begin));
      widen_bf16(ConstBf16Vec(full.bf16().data() + end, su.padded - end),
                 su.params.vec(end, su.padded - end));
      continue;
    }
    TrackedBuffer tmp(tracker_, su.layout->name + "::param_gather_send", su.shard,
                      MemCategory::CommBuffers);
    Kokkos::deep_copy(tmp.vec(), param_shard(su));
    Kokkos::fence();
    shard_comm_.all_gather(tmp.cvec(), su.params.vec());
  }
}

std::vector<double> Engine::evaluate(int n_micro, const LoadMicroBatch& load) {
  const std::vector<int> fwd = forward_schedule(int(units_.size()));
  std::vector<double> losses;
  Gpt2& m = *model_;
  for (int j = 0; j < n_micro; ++j) {
    load(j, m);
    pipeline_->begin(fwd);
    for (int i = 0; i < int(fwd.size()); ++i) {
      const UnitParams p = pipeline_->acquire(i);
      m.forward_stage(i, p);
      pipeline_->release(i);
    }
    pipeline_->finish();
    const auto& s = m.sequence_losses();
    losses.insert(losses.end(), s.begin(), s.end());
  }
  return losses;
}

std::vector<float> Engine::full_params(int u) {
  ShardedUnit& su = units_[u];
  std::vector<float> out(su.padded);
  if (shards_params(strategy_)) {
    FlatView full("engine::full_params", su.padded);
    Kokkos::fence();
    shard_comm_.all_gather(su.params.cvec(), Vec(full.data(), su.padded));
    Kokkos::deep_copy(HostVec(out.data(), su.padded), full);
  } else {
    Kokkos::deep_copy(HostVec(out.data(), su.padded), su.params.vec());
  }
  out.resize(su.numel);
  return out;
}

}  // namespace fsdp
