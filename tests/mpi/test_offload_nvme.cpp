// SPDX-License-Identifier: MIT
// fsdp.offload = nvme against the same run in memory, at whatever N this runs on (1, 2, 3):
// every step's loss and gradient norm, and the final parameters and both AdamW moments, bit for
// bit, for zero3, zero2 and hybrid, with and without offload.params (zero2 keeps full
// parameters, so only without), fp32 and bf16, deterministic mode; and a checkpoint taken under NVMe offload
// resumed without it, and the other way, equal to the straight run.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "engine_fixture.hpp"

using namespace fsdp;
namespace fs = std::filesystem;

namespace {

struct State {
  std::vector<double> losses, norms;
  std::vector<float> params, exp_avg, exp_avg_sq;
};

State finish(Trainer& t, const TrainSummary& s) {
  return {s.losses, s.grad_norms,
          test::gather_state(t, MPI_COMM_WORLD, &Engine::param_shard),
          test::gather_state(t, MPI_COMM_WORLD, &Engine::exp_avg_shard),
          test::gather_state(t, MPI_COMM_WORLD, &Engine::exp_avg_sq_shard)};
}

State run(const RunConfig& cfg, const std::string& resume = "") {
  TrainOptions o = test::quiet();
  o.resume = resume;
  Trainer t(cfg, MPI_COMM_WORLD, o);
  const TrainSummary s = t.run();
  return finish(t, s);
}

using test::same_bits;

void require_same(const State& got, const State& want) {
  REQUIRE(same_bits(got.losses, want.losses));
  REQUIRE(same_bits(got.norms, want.norms));
  REQUIRE(same_bits(got.params, want.params));
  REQUIRE(same_bits(got.exp_avg, want.exp_avg));
  REQUIRE(same_bits(got.exp_avg_sq, want.exp_avg_sq));
}

RunConfig nvme(RunConfig c, const std::string& dir, bool params) {
  c.fsdp.offload = "nvme";
  c.offload.path = dir;
  c.offload.params = params;
  return c;
}

}  // namespace

TEST_CASE("NVMe offload trains bit for bit as the run in memory", "[offload][nvme]") {
  struct Case {
    const char* strategy;
    bool params, bf16;
    int prefetch;
    const char* piece;  // the optimizer's piece (elements): several per shard of these units
    bool deterministic = false;
  };
  const Case c = GENERATE(Case{"zero3", false, false, 1, "0"}, Case{"zero3", true, false, 1, "1024"},
                          Case{"zero3", true, true, 2, "0"}, Case{"zero2", false, false, 1, "1024"},
                          Case{"hybrid", false, false, 1, "0"}, Case{"hybrid", true, false, 0, "2048"},
                          Case{"zero3", true, false, 1, "1024", true});
  INFO(c.strategy << " offload.params " << c.params << (c.bf16 ? " bf16" : " fp32")
                  << " prefetch " << c.prefetch << " piece " << c.piece
                  << (c.deterministic ? " deterministic" : "") << " on "
                  << test::world_size() << " ranks");
  ::setenv("FSDP_TEST_STREAM_PIECE", c.piece, 1);
  test::SharedTmpDir tmp("fsdp_nvme_test");
  RunConfig cfg = test::tiny_config(c.strategy, c.prefetch);
  cfg.train.steps = 3;
  cfg.train.micro_batch_size = 2;  // accumulation over micro-batches reads the shards again
  if (c.bf16) cfg.fsdp.mixed_precision = "bf16";
  cfg.train.deterministic = c.deterministic;  // 6 micro-batches: 1, 2 or 3 ranks
  const State memory = run(cfg);
  const State disk = run(nvme(cfg, tmp.path, c.params));
  require_same(disk, memory);
  ::unsetenv("FSDP_TEST_STREAM_PIECE");
  // Nothing is left in offload.path: the files had no names, and the lock went at exit.
  REQUIRE(fs::is_empty(tmp.path));
}

TEST_CASE("a checkpoint taken under NVMe offload resumes without it, and the other way",
          "[offload][nvme][checkpoint]") {
  test::SharedTmpDir tmp("fsdp_nvme_test");
  RunConfig cfg = test::tiny_config("zero3", 1);
  cfg.train.steps = 4;
  const State straight = run(cfg);
  for (const bool saved_on_disk : {true, false}) {
    INFO((saved_on_disk ? "saved under nvme, resumed in memory" : "saved in memory, resumed under nvme"));
    const std::string dir = tmp.path + (saved_on_disk ? "/a" : "/b");
    RunConfig first = saved_on_disk ? nvme(cfg, tmp.path, true) : cfg;
    first.train.steps = 2;
    first.checkpoint.every = 2;
    first.checkpoint.dir = dir;
    run(first);
    RunConfig second = saved_on_disk ? cfg : nvme(cfg, tmp.path, true);
    second.checkpoint.dir = dir + "_resumed";
    const State resumed = run(second, dir + "/step_000002.h5");
    REQUIRE(resumed.losses.size() == 2);
    REQUIRE(std::memcmp(resumed.losses.data(), straight.losses.data() + 2, 2 * sizeof(double)) == 0);
    REQUIRE(same_bits(resumed.params, straight.params));
    REQUIRE(same_bits(resumed.exp_avg, straight.exp_avg));
    REQUIRE(same_bits(resumed.exp_avg_sq, straight.exp_avg_sq));
  }
}
