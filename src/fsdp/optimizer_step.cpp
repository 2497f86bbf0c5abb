// SPDX-License-Identifier: MIT
#include "fsdp/optimizer_step.hpp"

#include <algorithm>
#include <cmath>

#include "core/faults.hpp"
#include "core/host_copy.hpp"
#include "fsdp/unit_update.hpp"
#include "optim/adamw.hpp"
#include "optim/lr_schedule.hpp"

namespace fsdp {
namespace {

double shard_sum_squares(const ShardVec& g) {
  if (g.in_host_memory()) return optim::sum_squares_in<HostExecSpace>(ConstPinnedVec(g.host()));
  return optim::sum_squares(g.device());
}

std::int64_t largest_shard(const std::vector<ShardedUnit>& units) {
  std::int64_t n = 0;
  for (const ShardedUnit& su : units) n = std::max(n, su.shard);
  return n;
}

}  // namespace

std::int64_t stream_piece(const std::vector<ShardedUnit>& units) {
  const std::int64_t test = faults::stream_piece();
  return std::min(largest_shard(units), test > 0 ? test : kStreamPiece);
}

ShardedOptimizer::ShardedOptimizer(ShardedState& state, const TrainConfig& train,
                                   MemoryTracker& tracker)
    : state_(state), train_(train) {
  if (state.setup().offload == Offload::Nvme) {
    const std::int64_t n = stream_piece(state.units());
    const bool grads_on_device = !state.units().empty() && state.grad_shard(0).on_device();
    for (int k = 0; k < 3; ++k) {
      IoSet& io = io_[k];
      const std::string set = "optimizer_io" + std::to_string(k);
      io.p = IoBuffer(tracker, set + "::params", n);
      io.m = IoBuffer(tracker, set + "::exp_avg", n);
      io.v = IoBuffer(tracker, set + "::exp_avg_sq", n);
      if (grads_on_device) io.g = IoBuffer(tracker, set + "::grads", n);
    }
    for (int u = 0; u < int(state.units().size()); ++u)
      for (std::int64_t lo = 0; lo < state.units()[std::size_t(u)].shard; lo += n)
        pieces_.push_back({u, lo, std::min(n, state.units()[std::size_t(u)].shard - lo)});
    return;
  }
  // offload = optimizer: the device's parameter and gradient shards come down through two
  // staging sets, so one unit's copies overlap the host's update of the one before.
  if (state.setup().offload != Offload::Optimizer) return;
  const std::int64_t n = largest_shard(state.units());
  for (Staging& s : staging_) {
    s.params = HostBuffer(tracker, "optimizer_staging::params", n, MemCategory::CommBuffers);
    s.grads = HostBuffer(tracker, "optimizer_staging::grads", n, MemCategory::CommBuffers);
  }
}

ShardedOptimizer::~ShardedOptimizer() {
  if (OffloadFile* f = state_.offload_file())
    for (const IoSet& io : io_) f->wait(std::max(io.read, io.write));
}

std::vector<comm::Communicator*> ShardedOptimizer::placement_comms() {
  // Placement p's parts are held once by each of its shard groups: their sums go over that.
  std::vector<comm::Communicator*> c;
  for (const ShardedUnit& su : state_.units())
    for (const PartShard& ps : su.parts) {
      if (int(c.size()) <= ps.part.placement) c.resize(std::size_t(ps.part.placement) + 1, nullptr);
      c[std::size_t(ps.part.placement)] = ps.shard_comm;
    }
  return c;
}

double ShardedOptimizer::norm2() {
  const std::vector<comm::Communicator*> comms = placement_comms();
  std::vector<double> n2(comms.size(), 0.0);
  for (int u = 0; u < int(state_.units().size()); ++u) {
    const ShardedUnit& su = state_.units()[std::size_t(u)];
    const ShardVec g = state_.grad_shard(u);
    if (su.parts.size() == 1) {
      n2[std::size_t(su.parts[0].part.placement)] += shard_sum_squares(g);
      continue;
    }
    for (const PartShard& ps : su.parts)
      n2[std::size_t(ps.part.placement)] += shard_sum_squares(g.sub(ps.shard_offset, ps.shard));
  }
  double total = 0.0;
  for (std::size_t p = 0; p < comms.size(); ++p)
    if (comms[p]) total += comms[p]->all_reduce_sum(n2[p]);
  return total;
}

std::string ShardedOptimizer::first_nonfinite_unit() {
  std::vector<ShardedUnit>& units = state_.units();
  const std::vector<comm::Communicator*> comms = placement_comms();
  std::vector<std::vector<double>> bad(comms.size(), std::vector<double>(units.size(), 0.0));
  for (std::size_t u = 0; u < units.size(); ++u) {
    const ShardVec g = state_.grad_shard(int(u));
    for (const PartShard& ps : units[u].parts)
      if (!std::isfinite(shard_sum_squares(g.sub(ps.shard_offset, ps.shard))))
        bad[std::size_t(ps.part.placement)][u] = 1.0;
  }
  for (std::size_t p = 0; p < comms.size(); ++p)
    if (comms[p]) comms[p]->all_reduce_sum(bad[p].data(), int(units.size()));
  for (std::size_t u = 0; u < units.size(); ++u)
    for (std::size_t p = 0; p < comms.size(); ++p)
      if (bad[p][u] > 0.0) return units[u].layout->name;
  return "";
}

OptimizerResult ShardedOptimizer::step(int step, double norm2, double loss, bool zero_full_grads,
                                       const std::function<void(int)>& updated) {
  OptimizerResult r;
  r.grad_norm = std::sqrt(norm2);
  r.lr = optim::learning_rate(train_, step);
  if (!std::isfinite(r.grad_norm) || !std::isfinite(loss)) {
    r.nonfinite_unit = first_nonfinite_unit();
    const std::string what =
        "step " + std::to_string(step + 1) + ": non-finite " +
        (std::isfinite(loss) ? "" : "loss (" + std::to_string(loss) + ") and ") +
        "gradient norm (" + std::to_string(r.grad_norm) +
        "); first unit with non-finite gradients: " +
        (r.nonfinite_unit.empty() ? "none (the loss alone)" : r.nonfinite_unit);
    if (train_.on_nonfinite != "skip_step") throw NonFiniteError(what);
    r.skipped = true;  // parameters and optimizer state stay as they were
    return r;
  }
  const double clip = train_.grad_clip;
  optim::AdamWStep s;
  s.lr = float(r.lr);
  s.beta1 = float(train_.beta1);
  s.beta2 = float(train_.beta2);
  s.eps = float(train_.eps);
  s.weight_decay = float(train_.weight_decay);
  s.t = state_.next_optimizer_step();
  s.grad_scale = (clip > 0.0 && r.grad_norm > clip) ? float(clip / (r.grad_norm + 1e-6)) : 1.f;
  switch (state_.setup().offload) {
    case Offload::None:
      step_on_device(s, zero_full_grads, updated);
      break;
    case Offload::Params:
      step_on_host(s, updated);
      break;
    case Offload::Optimizer:
      step_staged(s, zero_full_grads, updated);
      break;
    case Offload::Nvme:
      step_streamed(s, zero_full_grads, updated);
      break;
  }
  return r;
}

void ShardedOptimizer::step_on_device(const optim::AdamWStep& s, bool zero_grads,
                                      const std::function<void(int)>& updated) {
  for (int u = 0; u < int(state_.units().size()); ++u) {
    const ShardedUnit& su = state_.units()[std::size_t(u)];
    update_unit<ExecSpace, Vec>(su, state_.param_shard(u).device(), state_.grad_shard(u).device(),
                                su.exp_avg.device(), su.exp_avg_sq.device(), s, zero_grads);
    updated(u);
  }
}

void ShardedOptimizer::step_on_host(const optim::AdamWStep& s,
                                    const std::function<void(int)>& updated) {
  // offload = params: shards, gradients and moments are all in host memory already.
  for (int u = 0; u < int(state_.units().size()); ++u) {
    const ShardedUnit& su = state_.units()[std::size_t(u)];
    update_unit<HostExecSpace, PinnedVec>(su, state_.param_shard(u).host(),
                                          state_.grad_shard(u).host(), su.exp_avg.host(),
                                          su.exp_avg_sq.host(), s, false);
    updated(u);
  }
}

void ShardedOptimizer::step_staged(const optim::AdamWStep& s, bool zero_grads,
                                   const std::function<void(int)>& updated) {
  // offload = optimizer: unit u's parameter and gradient shards come down into staging set
  // u % 2 while the host updates unit u - 1, and the updated parameters go back up. Each wait
  // covers unit u's down copies and unit u - 1's up copy (one stream, in issue order), which
  // frees set (u + 1) % 2 for unit u + 1 and lets unit u - 1's next gathers start.
  const int U = int(state_.units().size());
  const auto down = [&](int u) {
    const ShardedUnit& su = state_.units()[std::size_t(u)];
    const Staging& st = staging_[std::size_t(u % 2)];
    host_copy::to_host(st.params.vec(0, su.shard), state_.param_shard(u).device());
    host_copy::to_host(st.grads.vec(0, su.shard), state_.grad_shard(u).device());
  };
  if (U > 0) down(0);
  for (int u = 0; u < U; ++u) {
    host_copy::wait_copies();
    if (u > 0) updated(u - 1);
    if (u + 1 < U) down(u + 1);
    const ShardedUnit& su = state_.units()[std::size_t(u)];
    const Staging& st = staging_[std::size_t(u % 2)];
    update_unit<HostExecSpace, PinnedVec>(su, st.params.vec(0, su.shard), st.grads.vec(0, su.shard),
                                          su.exp_avg.host(), su.exp_avg_sq.host(), s, false);
    const Vec p = state_.param_shard(u).device();
    host_copy::to_device(p, ConstPinnedVec(st.params.vec(0, su.shard)));
    if (zero_grads) Kokkos::deep_copy(ExecSpace(), state_.grad_shard(u).device(), 0.f);
  }
  host_copy::wait_copies();
  if (U > 0) updated(U - 1);
}

}  // namespace fsdp
