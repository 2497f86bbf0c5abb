// SPDX-License-Identifier: MIT
// Deterministic mode at any rank count: per-step losses, gradient norms, final parameters and
// optimizer state are bitwise those of a one-rank zero3 run, for every strategy (hybrid with
// shard groups of 2 and 3), fp32 and bf16, prefetch 0 and 2, activation checkpointing on, at
// whatever N this test runs on (1, 2, 3, 4 and 6); a rank count that does not divide the step's
// micro-batch count is refused with both numbers.
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

struct Bits {
  std::vector<double> losses, norms;
  std::uint64_t params = 0, exp_avg = 0, exp_avg_sq = 0;  // XXH64 of the bytes
};

std::uint64_t hash(const std::vector<float>& v) {
  return XXH64(v.data(), v.size() * sizeof(float), 0);
}

Bits run(const RunConfig& cfg, MPI_Comm comm) {
  Trainer t(cfg, comm, test::quiet());
  const TrainSummary s = t.run();
  return {s.losses, s.grad_norms, hash(test::gather_state(t, comm, &Engine::param_shard)),
          hash(test::gather_state(t, comm, &Engine::exp_avg_shard)),
          hash(test::gather_state(t, comm, &Engine::exp_avg_sq_shard))};
}

// Doubles compared as bits: == would call -0 and +0 equal.
using test::same_bits;

RunConfig deterministic_config(const std::string& strategy, int shard_group, bool bf16,
                               int prefetch) {
  RunConfig cfg = test::tiny_config(strategy, prefetch);
  cfg.train.deterministic = true;
  cfg.train.steps = 3;
  cfg.train.batch_size = 24;
  cfg.train.micro_batch_size = 2;  // G = 12 micro-batches: divides over 1, 2, 3, 4 and 6 ranks
  cfg.fsdp.shard_group_size = shard_group;
  cfg.model_run.activation_checkpointing = "blocks";
  if (bf16) {
    cfg.fsdp.mixed_precision = "bf16";
    cfg.fsdp.reduce_dtype = "bf16";
  }
  return cfg;
}

}  // namespace

TEST_CASE("deterministic mode: every strategy at this rank count is bitwise one zero3 rank",
          "[deterministic]") {
  const int N = test::world_size();
  for (const bool bf16 : {false, true})
    for (const int prefetch : {0, 2}) {
      const Bits ref = run(deterministic_config("zero3", 0, bf16, prefetch), MPI_COMM_SELF);
      struct Case {
        const char* strategy;
        int shard_group;
      };
      for (const Case c : {Case{"zero3", 0}, Case{"zero2", 0}, Case{"zero1", 0}, Case{"ddp", 0},
                           Case{"hybrid", 2}, Case{"hybrid", 3}}) {
        if (std::string(c.strategy) == "hybrid" && N % c.shard_group != 0) continue;
        const Bits got =
            run(deterministic_config(c.strategy, c.shard_group, bf16, prefetch), MPI_COMM_WORLD);
        INFO(
            c.strategy << (c.shard_group ? " shard groups of " + std::to_string(c.shard_group) : "")
                       << (bf16 ? ", bf16" : ", fp32") << ", prefetch " << prefetch << ", on " << N
                       << " ranks");
        CHECK(same_bits(got.losses, ref.losses));
        CHECK(same_bits(got.norms, ref.norms));
        CHECK(got.params == ref.params);
        CHECK(got.exp_avg == ref.exp_avg);
        CHECK(got.exp_avg_sq == ref.exp_avg_sq);
      }
    }
}

TEST_CASE("deterministic mode composes with offload and sub-layer units", "[deterministic]") {
  RunConfig cfg = deterministic_config("zero3", 0, false, 1);
  const Bits ref = run(cfg, MPI_COMM_SELF);
  cfg.fsdp.offload = "params";
  cfg.fsdp.unit = "sublayer";
  const Bits got = run(cfg, MPI_COMM_WORLD);
  CHECK(same_bits(got.losses, ref.losses));
  CHECK(got.params == ref.params);
  CHECK(got.exp_avg_sq == ref.exp_avg_sq);
}

TEST_CASE("deterministic mode refuses a rank count that does not divide the micro-batches",
          "[deterministic]") {
  const int N = test::world_size();
  if (N == 1) return;
  RunConfig cfg = deterministic_config("zero3", 0, false, 1);
  cfg.train.batch_size = 2 * N;
  cfg.train.micro_batch_size = 1;
  REQUIRE_NOTHROW(Trainer(cfg, MPI_COMM_WORLD, test::quiet()));
  cfg.train.micro_batch_size = 2;  // G = N micro-batches... of 2 sequences: still fine
  REQUIRE_NOTHROW(Trainer(cfg, MPI_COMM_WORLD, test::quiet()));
  cfg.train.batch_size = 2 * (N + 1);  // G = N + 1
  REQUIRE_THROWS_WITH(Trainer(cfg, MPI_COMM_WORLD, test::quiet()),
                      Catch::Contains("needs the number of ranks (" + std::to_string(N) +
                                      ") to divide the step's micro-batch count G = "
                                      "train.batch_size / train.micro_batch_size = " +
                                      std::to_string(N + 1)));
}

TEST_CASE("deterministic mode resumes bit-identically at another rank count", "[deterministic]") {
  RunConfig cfg = deterministic_config("zero3", 0, false, 1);
  cfg.train.steps = 5;
  const Bits straight = run(cfg, MPI_COMM_SELF);  // 5 steps on one rank
  // 3 steps on N ranks, checkpointed; then steps 4..5 on one rank from that checkpoint.
  cfg.checkpoint.dir = "test_deterministic_ckpt_np" + std::to_string(test::world_size());
  cfg.checkpoint.every = 3;
  cfg.checkpoint.keep = 1;
  RunConfig first = cfg;
  first.train.steps = 3;
  {
    Trainer t(first, MPI_COMM_WORLD, test::quiet());
    const TrainSummary s = t.run();
    for (int i = 0; i < 3; ++i)
      REQUIRE(s.losses[std::size_t(i)] == straight.losses[std::size_t(i)]);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    TrainOptions o = test::quiet();
    o.resume = "auto";
    cfg.checkpoint.every = 0;
    Trainer t(cfg, MPI_COMM_SELF, o);
    REQUIRE(t.start_step() == 3);
    const TrainSummary s = t.run();
    REQUIRE(s.losses.size() == 2);
    REQUIRE(s.losses[0] == straight.losses[3]);
    REQUIRE(s.losses[1] == straight.losses[4]);
    REQUIRE(hash(test::gather_state(t, MPI_COMM_SELF, &Engine::param_shard)) == straight.params);
    REQUIRE(hash(test::gather_state(t, MPI_COMM_SELF, &Engine::exp_avg_sq_shard)) == straight.exp_avg_sq);
    std::filesystem::remove_all(cfg.checkpoint.dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
