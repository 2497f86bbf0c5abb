// SPDX-License-Identifier: MIT
// The memory tracker's per-rank peaks against the ZeRO formulas for fp32 AdamW, with P_pad the
// parameter count padded per unit to the shard-group size N (bytes, exactly).
#include <catch2/catch.hpp>

#include <algorithm>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

// Full gradients alive at once under zero2/zero3: the embedding's (tied: it lives from the head's
// backward to the embedding's), the unit being differentiated, and up to max(1, k) units whose
// reduce-scatter is still in flight.
std::int64_t transient_grad_elems(const Engine& e, int k) {
  const auto& u = e.units();
  std::vector<std::int64_t> order;  // ln_f, then the blocks' units in reverse
  for (std::size_t v = u.size() - 1; v >= 1; --v) order.push_back(u[v].padded);
  const int keep = std::max(1, k);
  std::int64_t peak = u[0].padded;
  for (int j = 0; j < int(order.size()); ++j) {
    std::int64_t live = u[0].padded;
    for (int i = std::max(0, j - keep); i <= j; ++i) live += order[i];
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace

TEST_CASE("tracker peaks equal the ZeRO formulas", "[memory]") {
  const std::string strategy = GENERATE(std::string("ddp"), std::string("zero1"),
                                        std::string("zero2"), std::string("zero3"));
  const int k = GENERATE(0, 1, 2);
  const std::string unit = GENERATE(std::string("block"), std::string("sublayer"));
  RunConfig cfg = test::tiny_config(strategy, k);
  cfg.fsdp.unit = unit;
  cfg.train.steps = 2;
  cfg.train.micro_batch_size = cfg.train.batch_size / test::world_size();  // no accumulation
  Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
  t.run();
  const Engine& e = t.engine();
  const MemoryTracker& m = t.tracker();
  const std::int64_t N = e.shard_group_size(), P = e.padded_params(), f = 4;
  using C = MemCategory;
  INFO(strategy << " k=" << k << " unit=" << unit << " N=" << N << " P_pad=" << P);
  if (strategy == "ddp") {
    REQUIRE(N == 1);
    REQUIRE(m.peak(C::ParamShard) == f * P);
    REQUIRE(m.peak(C::Grads) == f * P);
    REQUIRE(m.peak(C::OptimizerState) == 2 * f * P);
    REQUIRE(m.peak(C::GatheredParams) == 0);
  } else if (strategy == "zero1") {
    REQUIRE(m.peak(C::ParamShard) + m.peak(C::Grads) == 8 * P);
    REQUIRE(m.peak(C::OptimizerState) == 8 * P / N);
  } else if (strategy == "zero2") {
    REQUIRE(m.peak(C::ParamShard) == f * P);
    REQUIRE(m.peak(C::OptimizerState) == 8 * P / N);
    REQUIRE(m.peak(C::Grads) == f * P / N + f * transient_grad_elems(e, k));
  } else {
    REQUIRE(m.peak(C::ParamShard) == f * P / N);
    REQUIRE(m.peak(C::OptimizerState) == 8 * P / N);
    REQUIRE(m.peak(C::Grads) == f * P / N + f * transient_grad_elems(e, k));
    if (N > 1) {
      REQUIRE(m.peak(C::GatheredParams) <= f * (k + 1) * e.largest_unit());
      REQUIRE(m.peak(C::GatheredParams) >= f * e.largest_unit());
    }
  }
}

TEST_CASE("an allocation past memory.device_budget fails with a report", "[memory]") {
  RunConfig cfg = test::tiny_config("ddp", 1);
  cfg.memory.device_budget = 64 * 1024;  // far below the activations alone
  std::string msg;
  try {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
  } catch (const OutOfMemory& e) {
    msg = e.what();
  }
  REQUIRE(msg.find("memory.device_budget") != std::string::npos);
  REQUIRE(msg.find("largest live buffers") != std::string::npos);
}

TEST_CASE("zero3 trace shows unit u+1 gathered before unit u computes", "[memory][trace]") {
  RunConfig cfg = test::tiny_config("zero3", 1);
  cfg.fsdp.unit = GENERATE(std::string("block"), std::string("sublayer"));
  cfg.train.steps = 1;
  TrainOptions o = test::quiet();
  o.trace_in_memory = true;
  Trainer t(cfg, MPI_COMM_WORLD, o);
  t.run();
  if (t.engine().shard_group_size() == 1) return;  // nothing is gathered on one rank
  const auto& ev = t.trace().events();
  // Compute events in order, with the unit name after "forward "/"backward ".
  std::vector<const Trace::Event*> compute;
  for (const auto& e : ev)
    if (e.cat == "compute") compute.push_back(&e);
  REQUIRE(compute.size() > 4);
  int checked = 0;
  for (std::size_t i = 1; i + 1 < compute.size(); ++i) {
    const std::string cur = compute[i]->name.substr(compute[i]->name.find(' ') + 1);
    const std::string nxt = compute[i + 1]->name.substr(compute[i + 1]->name.find(' ') + 1);
    if (cur == nxt) continue;
    // The gather that serves compute i+1 is the latest one of its unit issued since that unit
    // last computed; it must have been issued before compute i began. No such gather: the unit
    // stayed gathered since its last use (the window had room), which is as good.
    double since = -1e300;
    for (std::size_t j = 0; j < i + 1; ++j) {
      const std::string name = compute[j]->name.substr(compute[j]->name.find(' ') + 1);
      if (name == nxt) since = compute[j]->t0;
    }
    const Trace::Event* serving = nullptr;
    for (const auto& e : ev)
      if (e.cat == "comm" && e.name == "all_gather " + nxt && e.t0 > since &&
          e.t0 <= compute[i + 1]->t0 && (!serving || e.t0 > serving->t0))
        serving = &e;
    const bool found = since > -1e300 && !serving ? true
                       : serving && serving->t0 <= compute[i]->t0;
    INFO("before " << compute[i]->name << " expected all_gather " << nxt);
    REQUIRE(found);
    ++checked;
  }
  REQUIRE(checked > 4);
}
