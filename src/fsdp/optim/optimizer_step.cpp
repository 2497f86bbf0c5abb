// SPDX-License-Identifier: MIT
#include "fsdp/optim/optimizer_step.hpp"

#include <algorithm>
#include <cmath>

#include "core/faults.hpp"
#include "core/step_log.hpp"
#include "fsdp/optim/update_rules.hpp"
#include "fsdp/optim/adamw.hpp"
#include "fsdp/optim/lr_schedule.hpp"

namespace fsdp {
namespace {

double shard_sum_squares(const ShardVec& g) {
  if (g.in_host_memory()) return optim::sum_squares_in<HostExecSpace>(ConstPinnedVec(g.host()));
  return optim::sum_squares(g.device());
}

}  // namespace

std::int64_t largest_shard(const std::vector<ShardedUnit>& units) {
  std::int64_t n = 0;
  for (const ShardedUnit& su : units) n = std::max(n, su.shard);
  return n;
}

std::int64_t stream_piece(const std::vector<ShardedUnit>& units) {
  const std::int64_t test = faults::stream_piece();
  return std::min(largest_shard(units), test > 0 ? test : kStreamPiece);
}

ShardedOptimizer::ShardedOptimizer(ShardedState& state, const TrainConfig& train,
                                   MemoryTracker& tracker)
    : state_(state), train_(train), tier_(make_state_tier(state, tracker)),
      counted_(tracker.counting()),
      log_(tracker.log()) {
  if (state.setup().optimizer == OptimizerKind::Muon)
    muon_ = std::make_unique<MuonExchange>(state, tracker, state.setup().muon.ns_steps,
                                           state.setup().muon.ns_dtype == "bf16");
}

ShardedOptimizer::~ShardedOptimizer() = default;

namespace {
// What a rule reads and writes, without its kernels (the planner's counted step), and each
// piece it would have updated, in the step's log.
class CountedRule final : public UpdateRule {
 public:
  CountedRule(const UpdateRule& r, StepLog* log) : access_(r.access()), log_(log) {}
  StateAccess access() const override { return access_; }
  void on_device(const UnitOptimizerLayout&, const StatePiece<Vec>& s) override {
    if (log_) log_->optimizer(double(s.n), false, access_.moments);
  }
  void on_host(const UnitOptimizerLayout&, const StatePiece<PinnedVec>& s) override {
    if (log_) log_->optimizer(double(s.n), true, access_.moments);
  }

 private:
  StateAccess access_;
  StepLog* log_;
};
}  // namespace

void ShardedOptimizer::sweep(UpdateRule& rule, bool zero_grads,
                             const std::function<void(int)>& updated) {
  if (!counted_) return tier_->sweep(rule, zero_grads, updated);
  CountedRule counted(rule, log_);
  tier_->sweep(counted, zero_grads, updated);
}

std::vector<comm::Communicator*> ShardedOptimizer::placement_comms() {
  // Placement p's parts are held once by each of its shard groups: their sums go over that.
  std::vector<comm::Communicator*> c;
  for (const ShardedUnit& su : state_.units())
    for (const PartShard& ps : su.parts) {
      if (int(c.size()) <= ps.part.placement) c.resize(std::size_t(ps.part.placement) + 1, nullptr);
      c[std::size_t(ps.part.placement)] = ps.store_comm;
    }
  return c;
}

double ShardedOptimizer::norm2() {
  const std::vector<comm::Communicator*> comms = placement_comms();
  std::vector<double> n2(comms.size(), 0.0);
  // The counted run sums nothing (no kernel may run); its all-reduces below still happen.
  for (int u = 0; u < int(state_.units().size()) && !counted_; ++u) {
    const ShardedUnit& su = state_.units()[std::size_t(u)];
    if (!su.trains()) continue;
    const ShardVec g = state_.grad_shard(u);
    if (su.parts.size() == 1) {
      n2[std::size_t(su.parts[0].part.placement)] += shard_sum_squares(g);
      continue;
    }
    for (const PartShard& ps : su.parts)
      if (ps.part.trainable)
        n2[std::size_t(ps.part.placement)] += shard_sum_squares(g.sub(ps.shard_offset - su.train_offset, ps.shard));
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
    if (!units[u].trains()) continue;
    const ShardVec g = state_.grad_shard(int(u));
    for (const PartShard& ps : units[u].parts)
      if (ps.part.trainable &&
          !std::isfinite(shard_sum_squares(g.sub(ps.shard_offset - units[u].train_offset, ps.shard))))
        bad[std::size_t(ps.part.placement)][u] = 1.0;
  }
  for (std::size_t p = 0; p < comms.size(); ++p)
    if (comms[p]) comms[p]->all_reduce_sum(bad[p].data(), int(units.size()));
  for (std::size_t u = 0; u < units.size(); ++u)
    for (std::size_t p = 0; p < comms.size(); ++p)
      if (bad[p][u] > 0.0) return units[u].layout->name + first_nonfinite_tensor(int(u));
  return "";
}

// Within unit u, the first tensor (in the unit's order) whose gradient holds a non-finite value
// on any rank: a mixture of experts' unit holds hundreds, and the expert is what to look at.
std::string ShardedOptimizer::first_nonfinite_tensor(int u) {
  ShardedUnit& su = state_.units()[std::size_t(u)];
  const ShardVec g = state_.grad_shard(u);
  const std::vector<comm::Communicator*> comms = placement_comms();
  std::vector<std::vector<double>> bad(comms.size());
  std::vector<std::vector<const TensorSpec*>> names(comms.size());
  for (const PartShard& ps : su.parts) {
    const std::size_t p = std::size_t(ps.part.placement);
    for (const TensorSpec& t : ps.layout->tensors) {
      const std::int64_t a = std::max(t.offset, ps.shard_begin),
                         b = std::min(t.offset + t.numel, ps.shard_begin + ps.shard);
      const std::int64_t at = ps.shard_offset - su.train_offset + a - ps.shard_begin;
      const bool nonfinite =
          ps.part.trainable && b > a && !std::isfinite(shard_sum_squares(g.sub(at, b - a)));
      bad[p].push_back(nonfinite ? 1.0 : 0.0);
      names[p].push_back(&t);
    }
  }
  for (std::size_t p = 0; p < comms.size(); ++p)
    if (comms[p] && !bad[p].empty()) comms[p]->all_reduce_sum(bad[p].data(), int(bad[p].size()));
  for (std::size_t p = 0; p < comms.size(); ++p)
    for (std::size_t i = 0; i < bad[p].size(); ++i)
      if (bad[p][i] > 0.0) return " (tensor " + names[p][i]->name + ")";
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
  if (!muon_) {
    AdamWRule adamw(s);
    sweep(adamw, zero_full_grads, updated);
    return r;
  }
  // Muon: the momentum pass (AdamW's tensors done there), the exchange and Newton-Schulz, and
  // the matrices' update; only the last pass releases units to the next step's gathers.
  const MuonConfig& mc = state_.setup().muon;
  optim::MuonStep m;
  m.momentum = float(mc.momentum);
  m.nesterov = mc.nesterov;
  m.grad_scale = s.grad_scale;
  const bool match = mc.scale == "match_adamw";
  m.lr = match ? s.lr : float(mc.lr * (r.lr / train_.lr));  // original: muon.lr on lr's schedule
  m.weight_decay = s.weight_decay;
  MuonMomentumRule momentum(s, m);
  sweep(momentum, zero_full_grads, nullptr);
  muon_->orthogonalise();
  MuonApplyRule apply(m, match);
  sweep(apply, zero_full_grads, updated);
  return r;
}

}  // namespace fsdp
