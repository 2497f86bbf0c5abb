// SPDX-License-Identifier: MIT
// The optimizer's update rules, each written once over the execution space a state tier
// (fsdp/optim/state_tier.hpp) hands it: AdamW for every element of an AdamW run; under Muon, the
// momentum pass (AdamW on the other tensors, Muon's momentum on the matrices, leaving in the
// gradient shard what Newton-Schulz orthogonalises) and the apply pass (the matrices' step from
// the orthogonalised update fsdp/optim/muon_exchange.hpp left there). All elementwise, so a shard
// updated in pieces gets the bits of one updated whole.
#pragma once
#include "fsdp/optim/state_tier.hpp"
#include "fsdp/optim/adamw.hpp"
#include "fsdp/optim/muon.hpp"

namespace fsdp {

namespace rules {
// The piece's window of a view: k elements from piece offset o.
template <class V>
V window(const V& x, std::int64_t o, std::int64_t k) {
  return V(x.data() + o, std::size_t(k));
}
// AdamW on one run of a segment.
template <class Exec, class V>
void adamw_run(const StatePiece<V>& s, const StateSegment& seg, std::int64_t o, std::int64_t k,
               std::int64_t in_seg, const optim::AdamWStep& step, bool zero) {
  const V v(s.v.data() + (seg.sq_at + in_seg - s.sq_lo), std::size_t(k));
  optim::adamw_update_in<Exec>(window(s.p, o, k), window(s.g, o, k), window(s.m, o, k), v, step,
                               seg.tensor->decay, zero);
}
}  // namespace rules

class AdamWRule : public UpdateRuleOf<AdamWRule> {
 public:
  explicit AdamWRule(const optim::AdamWStep& s) : s_(s) {}
  StateAccess access() const override { return {}; }
  template <class Exec, class V>
  void run(const UnitOptimizerLayout& l, const StatePiece<V>& s) {
    for_segments(l, s.lo, s.n, [&](const StateSegment& seg, std::int64_t o, std::int64_t k,
                                   std::int64_t in_seg) {
      rules::adamw_run<Exec>(s, seg, o, k, in_seg, s_, s.zero_grads);
    });
  }

 private:
  optim::AdamWStep s_;
};

// Muon's first pass: AdamW's runs updated, the matrices' momentum advanced and the vector to
// orthogonalise left in their gradient elements.
class MuonMomentumRule : public UpdateRuleOf<MuonMomentumRule> {
 public:
  MuonMomentumRule(const optim::AdamWStep& adamw, const optim::MuonStep& muon)
      : adamw_(adamw), muon_(muon) {}
  StateAccess access() const override { return {true, true, true, false}; }
  template <class Exec, class V>
  void run(const UnitOptimizerLayout& l, const StatePiece<V>& s) {
    for_segments(l, s.lo, s.n, [&](const StateSegment& seg, std::int64_t o, std::int64_t k,
                                   std::int64_t in_seg) {
      if (!seg.muon) return rules::adamw_run<Exec>(s, seg, o, k, in_seg, adamw_, s.zero_grads);
      optim::muon_momentum_in<Exec>(rules::window(s.g, o, k), rules::window(s.m, o, k), muon_);
    });
  }

 private:
  optim::AdamWStep adamw_;
  optim::MuonStep muon_;
};

// Muon's second pass: each matrix element moved by its orthogonalised update, scaled for its
// matrix's shape (optim::muon_scale).
class MuonApplyRule : public UpdateRuleOf<MuonApplyRule> {
 public:
  MuonApplyRule(const optim::MuonStep& muon, bool match_adamw) : muon_(muon), match_(match_adamw) {}
  StateAccess access() const override { return {true, false, false, true}; }
  template <class Exec, class V>
  void run(const UnitOptimizerLayout& l, const StatePiece<V>& s) {
    for_segments(l, s.lo, s.n, [&](const StateSegment& seg, std::int64_t o, std::int64_t k,
                                   std::int64_t) {
      if (!seg.muon) return;  // AdamW's elements were updated (and zeroed) by the first pass
      const V g = rules::window(s.g, o, k);
      const TensorSpec& t = *seg.tensor;
      const float scale = float(optim::muon_scale(match_, fan_out(t), fan_in(t)));
      optim::muon_apply_in<Exec>(rules::window(s.p, o, k), g, muon_.lr, scale,
                                 muon_.weight_decay, t.decay, s.zero_grads);
    });
  }

 private:
  optim::MuonStep muon_;
  bool match_;
};

}  // namespace fsdp
