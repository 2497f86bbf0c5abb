// SPDX-License-Identifier: MIT
// Offload, activation checkpointing and gradient accumulation: each saves exactly the memory it
// promises and changes the losses only as documented.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

struct Outcome {
  std::vector<double> losses;
  std::int64_t device_peak, host_peak, activations_peak;
  std::int64_t P_pad, N;
  std::int64_t largest_shard = 0;
  double offload_bytes = 0.0;  // copied between device and host memory in the last step
};

Outcome train(const RunConfig& cfg) {
  Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
  Outcome o;
  const TrainSummary sum = t.run();
  o.losses = sum.losses;
  o.offload_bytes = sum.last.offload_bytes;
  o.device_peak = t.tracker().peak_total(MemSpace::Device);
  o.host_peak = t.tracker().peak_total(MemSpace::Host);
  o.activations_peak = t.tracker().peak(MemCategory::Activations);
  o.P_pad = t.engine().padded_params();
  o.N = t.engine().shard_group_size();
  for (const ShardedUnit& su : t.engine().units())
    o.largest_shard = std::max(o.largest_shard, su.shard);
  return o;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(1e-12, std::abs(b)); }

}  // namespace

TEST_CASE("offload moves exactly the shards and AdamW state off the device", "[features]") {
  const std::string strategy = GENERATE(std::string("zero3"), std::string("zero2"));
  RunConfig cfg = test::tiny_config(strategy, 1);
  const Outcome base = train(cfg);
  cfg.fsdp.offload = "optimizer";
  const Outcome opt = train(cfg);
  REQUIRE(opt.losses == base.losses);  // bitwise: the same arithmetic, elsewhere
  REQUIRE(base.device_peak - opt.device_peak == 8 * base.P_pad / base.N);
  // Both moments, and the two host staging sets (parameters, gradients) of the largest shard
  // that the device's shards go through to the host optimizer.
  REQUIRE(opt.host_peak == 8 * base.P_pad / base.N + 16 * base.largest_shard);
  // The bytes really travel: in a step the parameter and gradient shards go down and the
  // updated parameters come back (12 bytes per owned parameter); nothing moves without offload.
  REQUIRE(base.offload_bytes == 0.0);
  REQUIRE(opt.offload_bytes == 12.0 * double(base.P_pad / base.N));
  if (strategy == "zero3") {
    cfg.fsdp.offload = "params";
    const Outcome par = train(cfg);
    REQUIRE(par.losses == base.losses);
    // parameter shard + gradient shard + both moments: 16 bytes per owned parameter
    // Less the device buffers reduce-scatters land in before their results go down to the
    // host: one unit's shard per reduction in flight (prefetch depth 1: at most two).
    REQUIRE(base.device_peak - par.device_peak <= 16 * base.P_pad / base.N);
    REQUIRE(base.device_peak - par.device_peak >=
            16 * base.P_pad / base.N - 2 * 4 * base.largest_shard);
    REQUIRE(par.host_peak == 16 * base.P_pad / base.N);
    // Every gather brings its shard up, every reduction brings one down: at least once each
    // per unit.
    REQUIRE(par.offload_bytes >= 8.0 * double(base.P_pad / base.N));
  }
}

TEST_CASE("activation checkpointing keeps one block's activations", "[features]") {
  auto peak_acts = [](int layers, const std::string& ckpt, std::vector<double>* losses) {
    RunConfig cfg = test::tiny_config("zero3", 1);
    cfg.model.n_layer = layers;
    cfg.model_run.activation_checkpointing = ckpt;
    const Outcome o = train(cfg);
    if (losses) *losses = o.losses;
    return double(o.activations_peak);
  };
  std::vector<double> plain, ckpt;
  const double r_plain = peak_acts(8, "none", &plain) / peak_acts(2, "none", nullptr);
  const double r_ckpt = peak_acts(8, "blocks", &ckpt) / peak_acts(2, "blocks", nullptr);
  INFO("activation peak 8 vs 2 layers: " << r_plain << " without, " << r_ckpt << " with");
  for (std::size_t s = 0; s < plain.size(); ++s) REQUIRE(rel(ckpt[s], plain[s]) < 1e-6);
  REQUIRE(r_plain > 2.5);  // grows with depth
  REQUIRE(r_ckpt < 1.6);   // only the per-layer residual input grows
}

TEST_CASE("4 micro-batches of b match 1 micro-batch of 4b", "[features]") {
  const std::string accumulate = GENERATE(std::string("unsharded"), std::string("sharded"));
  const std::string strategy = GENERATE(std::string("zero3"), std::string("ddp"));
  RunConfig cfg = test::tiny_config(strategy, 1);
  cfg.train.batch_size = 48;  // per-rank 48, 24, 16, 12 at N = 1..4
  cfg.fsdp.accumulate = accumulate;
  const int per_rank = 48 / test::world_size();
  cfg.train.micro_batch_size = per_rank;
  const Outcome one = train(cfg);
  cfg.train.micro_batch_size = per_rank / 4;
  const Outcome four = train(cfg);
  for (std::size_t s = 0; s < one.losses.size(); ++s) {
    INFO(strategy << " " << accumulate << " step " << s);
    REQUIRE(rel(four.losses[s], one.losses[s]) < 1e-5);
  }
}
