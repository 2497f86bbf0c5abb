// SPDX-License-Identifier: MIT
// Deterministic mode: per-step losses, gradient norms and final parameters are bitwise equal to
// a one-rank run, for every strategy it supports, on any power-of-two number of ranks; other
// rank counts are refused at start with a reason.
#include <catch2/catch.hpp>

#include <filesystem>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

struct Bits {
  std::vector<double> losses, norms;
  std::vector<std::vector<float>> params;
};

Bits run(const RunConfig& cfg, MPI_Comm comm) {
  Trainer t(cfg, comm, test::quiet());
  const TrainSummary s = t.run();
  Bits b{s.losses, s.grad_norms, {}};
  for (std::size_t u = 0; u < t.engine().units().size(); ++u)
    b.params.push_back(t.engine().full_params(int(u)));
  return b;
}

RunConfig deterministic_config(const std::string& strategy) {
  RunConfig cfg = test::tiny_config(strategy, 1);
  cfg.train.deterministic = true;
  cfg.train.batch_size = 16;
  cfg.train.micro_batch_size = 2;  // 8 micro-batches per step
  return cfg;
}

bool power_of_two(int n) { return (n & (n - 1)) == 0; }

}  // namespace

TEST_CASE("deterministic mode is bitwise identical to one rank", "[deterministic]") {
  if (!power_of_two(test::world_size())) return;
  const std::string strategy = GENERATE(std::string("zero3"), std::string("zero2"),
                                        std::string("zero1"), std::string("ddp"));
  const RunConfig cfg = deterministic_config(strategy);
  const Bits ref = run(cfg, MPI_COMM_SELF);
  const Bits got = run(cfg, MPI_COMM_WORLD);
  INFO(strategy << " on " << test::world_size() << " ranks");
  REQUIRE(got.losses == ref.losses);
  REQUIRE(got.norms == ref.norms);
  REQUIRE(got.params == ref.params);
}

TEST_CASE("deterministic mode composes with prefetch, offload and checkpointing",
          "[deterministic]") {
  if (!power_of_two(test::world_size())) return;
  RunConfig cfg = deterministic_config("zero3");
  const Bits ref = run(cfg, MPI_COMM_SELF);
  cfg.fsdp.prefetch = 2;
  cfg.fsdp.offload = "params";
  cfg.model.activation_checkpointing = "blocks";
  const Bits got = run(cfg, MPI_COMM_WORLD);
  REQUIRE(got.losses == ref.losses);
  REQUIRE(got.params == ref.params);
}

TEST_CASE("deterministic mode refuses what it cannot honour", "[deterministic]") {
  RunConfig cfg = deterministic_config("hybrid");
  cfg.train.batch_size = 24;  // divides over 1..4 ranks
  REQUIRE_THROWS_WITH(Trainer(cfg, MPI_COMM_WORLD, test::quiet()),
                      Catch::Contains("not hybrid"));
  if (!power_of_two(test::world_size())) {
    cfg = deterministic_config("zero3");
    cfg.train.batch_size = 24;  // divides over 3 ranks
    REQUIRE_THROWS_WITH(Trainer(cfg, MPI_COMM_WORLD, test::quiet()),
                        Catch::Contains("power-of-two number of ranks"));
  }
}

TEST_CASE("deterministic mode resumes bit-identically at another rank count", "[deterministic]") {
  if (!power_of_two(test::world_size())) return;
  RunConfig cfg = deterministic_config("zero3");
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
    for (int i = 0; i < 3; ++i) REQUIRE(s.losses[i] == straight.losses[i]);
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
    for (std::size_t u = 0; u < t.engine().units().size(); ++u)
      REQUIRE(t.engine().full_params(int(u)) == straight.params[u]);
    std::filesystem::remove_all(cfg.checkpoint.dir);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}
