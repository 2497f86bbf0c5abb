// SPDX-License-Identifier: MIT
// The sharding engine against a single-rank run of the same global batch: every strategy and
// prefetch depth gives the same per-step losses and final parameters on N ranks.
#include <catch2/catch.hpp>
#include <cmath>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

struct RunResult {
  std::vector<double> losses;
  std::vector<std::vector<float>> params;
};

RunResult run(const RunConfig& cfg, MPI_Comm comm) {
  Trainer t(cfg, comm, test::quiet());
  RunResult r;
  r.losses = t.run().losses;
  for (std::size_t u = 0; u < t.engine().units().size(); ++u)
    r.params.push_back(t.engine().full_params(int(u)));
  return r;
}

double rel(double a, double b) { return std::abs(a - b) / std::max(1e-12, std::abs(b)); }

}  // namespace

TEST_CASE("N ranks match one rank for every strategy and prefetch depth", "[engine]") {
  const std::string strategy =
      GENERATE(std::string("ddp"), std::string("zero1"), std::string("zero2"),
               std::string("zero3"), std::string("hybrid"));
  const int prefetch = GENERATE(0, 1, 2);
  RunConfig cfg = test::tiny_config(strategy, prefetch);
  const RunResult ref = run(cfg, MPI_COMM_SELF);  // the one-rank reference, on every rank
  // hybrid: shard over pairs of ranks and replicate across pairs where N is even.
  if (strategy == "hybrid" && test::world_size() % 2 == 0) cfg.fsdp.shard_group_size = 2;
  const RunResult got = run(cfg, MPI_COMM_WORLD);
  INFO("strategy " << strategy << " prefetch " << prefetch << " ranks " << test::world_size());
  REQUIRE(got.losses.size() == ref.losses.size());
  for (std::size_t s = 0; s < ref.losses.size(); ++s) {
    INFO("step " << s << ": " << got.losses[s] << " vs " << ref.losses[s]);
    REQUIRE(rel(got.losses[s], ref.losses[s]) < 1e-5);
  }
  REQUIRE(ref.losses.back() < ref.losses.front());  // it trains
  double worst = 0.0;
  for (std::size_t u = 0; u < ref.params.size(); ++u) {
    REQUIRE(got.params[u].size() == ref.params[u].size());
    for (std::size_t i = 0; i < ref.params[u].size(); ++i)
      worst = std::max(worst, double(std::abs(got.params[u][i] - ref.params[u][i])));
  }
  REQUIRE(worst < 1e-5);
}

TEST_CASE("reshard_after_forward=false and sharded accumulation keep the results", "[engine]") {
  RunConfig cfg = test::tiny_config("zero3", 1);
  const RunResult ref = run(cfg, MPI_COMM_SELF);
  cfg.fsdp.reshard_after_forward = false;
  cfg.fsdp.accumulate = "sharded";
  const RunResult got = run(cfg, MPI_COMM_WORLD);
  for (std::size_t s = 0; s < ref.losses.size(); ++s)
    REQUIRE(rel(got.losses[s], ref.losses[s]) < 1e-5);
}

TEST_CASE("a unit smaller than the number of ranks still shards", "[engine]") {
  // ln_f has 2*C parameters; with C=2 that is 4, fewer than some rank counts with padding.
  RunConfig cfg = test::tiny_config("zero3", 1);
  cfg.model.n_embd = 2;
  cfg.model.n_head = 1;
  const RunResult ref = run(cfg, MPI_COMM_SELF);
  const RunResult got = run(cfg, MPI_COMM_WORLD);
  for (std::size_t s = 0; s < ref.losses.size(); ++s)
    REQUIRE(rel(got.losses[s], ref.losses[s]) < 1e-5);
}

TEST_CASE("prefetching across steps and the progress thread change no bit", "[engine]") {
  // The optimizer issues the next step's first gathers as it updates those units: a gather
  // issued before its unit's update would compute the next step with stale parameters.
  const std::string strategy = GENERATE(std::string("zero3"), std::string("hybrid"));
  const int prefetch = GENERATE(1, 2);
  const bool bf16 = GENERATE(false, true);
  RunConfig cfg = test::tiny_config(strategy, prefetch);
  if (strategy == "hybrid" && test::world_size() % 2 == 0) cfg.fsdp.shard_group_size = 2;
  if (bf16) cfg.fsdp.mixed_precision = cfg.fsdp.reduce_dtype = "bf16";
  cfg.eval.every = 2;  // an evaluation takes over the carried gathers
  cfg.eval.sequences = 4;
  cfg.data.val = "builtin:val";
  cfg.fsdp.prefetch_across_steps = false;
  cfg.comm.progress_thread = false;
  Trainer plain_t(cfg, MPI_COMM_WORLD, test::quiet());
  const auto plain = plain_t.run();
  cfg.fsdp.prefetch_across_steps = true;
  cfg.comm.progress_thread = GENERATE(false, true);
  Trainer carried_t(cfg, MPI_COMM_WORLD, test::quiet());
  const auto carried = carried_t.run();
  INFO(strategy << " prefetch " << prefetch << (bf16 ? " bf16" : " fp32") << " progress thread "
                << cfg.comm.progress_thread << " ranks " << test::world_size());
  REQUIRE(carried.losses == plain.losses);
  REQUIRE(carried.evals == plain.evals);
  REQUIRE(plain.evals.size() == 3);
  for (std::size_t u = 0; u < plain_t.engine().units().size(); ++u)
    REQUIRE(carried_t.engine().full_params(int(u)) == plain_t.engine().full_params(int(u)));
}

TEST_CASE("sub-layer units match one rank and change no bit against whole blocks", "[engine]") {
  // The same kernels run in the same order and every element's reduction keeps its rank order,
  // so only the gradient norm's grouping by unit could differ: without clipping the runs must be
  // bitwise equal, with it they must match the one-rank run as block units do. Attention units
  // have 1720 parameters and MLP units 3340: neither divides by 3.
  const std::string strategy =
      GENERATE(std::string("ddp"), std::string("zero1"), std::string("zero2"),
               std::string("zero3"), std::string("hybrid"));
  const int prefetch = GENERATE(0, 1, 2);
  const std::string ckpt = GENERATE(std::string("none"), std::string("blocks"));
  RunConfig cfg = test::tiny_config(strategy, prefetch);
  cfg.model_run.activation_checkpointing = ckpt;
  if (strategy == "hybrid" && test::world_size() % 2 == 0) cfg.fsdp.shard_group_size = 2;
  INFO(strategy << " prefetch " << prefetch << " checkpointing " << ckpt << " ranks "
                << test::world_size());

  RunConfig one = cfg;
  one.fsdp.shard_group_size = strategy == "hybrid" ? 1 : 0;
  const RunResult ref = run(one, MPI_COMM_SELF);
  cfg.fsdp.unit = "sublayer";
  const RunResult got = run(cfg, MPI_COMM_WORLD);
  REQUIRE(got.params.size() == ref.params.size() + std::size_t(cfg.model.n_layer));
  for (std::size_t s = 0; s < ref.losses.size(); ++s) {
    INFO("step " << s << ": " << got.losses[s] << " vs " << ref.losses[s]);
    REQUIRE(rel(got.losses[s], ref.losses[s]) < 1e-5);
  }

  cfg.train.grad_clip = 0.0;
  const RunResult sub = run(cfg, MPI_COMM_WORLD);
  cfg.fsdp.unit = "block";
  const RunResult block = run(cfg, MPI_COMM_WORLD);
  REQUIRE(sub.losses == block.losses);
  // Block l's parameters are units 2l+1 (attention) and 2l+2 (MLP) with sub-layers.
  const int L = cfg.model.n_layer;
  REQUIRE(sub.params.front() == block.params.front());
  REQUIRE(sub.params.back() == block.params.back());
  for (int l = 0; l < L; ++l) {
    std::vector<float> joined = sub.params[std::size_t(2 * l + 1)];
    const auto& mlp = sub.params[std::size_t(2 * l + 2)];
    joined.insert(joined.end(), mlp.begin(), mlp.end());
    INFO("block " << l);
    REQUIRE(joined == block.params[std::size_t(l + 1)]);
  }
}
