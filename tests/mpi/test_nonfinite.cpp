// SPDX-License-Identifier: MIT
// The NaN/Inf guard: an injected NaN in one unit's gradient is reported with that unit's name on
// every rank; skip_step leaves parameters and optimizer state untouched; abort throws.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

struct Snapshot {
  std::vector<std::vector<float>> params, m, v;
  int steps;
};

Snapshot snapshot(Engine& e) {
  Snapshot s;
  for (std::size_t u = 0; u < e.units().size(); ++u) {
    s.params.push_back(e.full_params(int(u)));
    s.m.push_back(e.exp_avg_shard(int(u)).values());
    s.v.push_back(e.exp_avg_sq_shard(int(u)).values());
  }
  s.steps = e.optimizer_steps();
  return s;
}

}  // namespace

TEST_CASE("a NaN in one unit's gradient is named and handled per on_nonfinite", "[nonfinite]") {
  setenv("FSDP_TEST_INJECT_NAN", "h.1@1", 1);  // unit h.1, second step
  RunConfig cfg = test::tiny_config("zero3", 1);
  const int T = cfg.model.block_size, B = cfg.train.micro_batch_size;
  std::vector<std::int32_t> tok(std::size_t(B) * T);
  for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = std::int32_t((i * 31 + 7) % 256);
  auto load = [&](int, Decoder& m) { m.set_batch(tok.data(), tok.data()); };
  const int n_micro = cfg.train.batch_size / test::world_size() / B;

  SECTION("skip_step") {
    cfg.train.on_nonfinite = "skip_step";
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    Engine& e = t.engine();
    REQUIRE_FALSE(e.train_step(0, n_micro, load).skipped);
    const Snapshot before = snapshot(e);
    const StepResult r = e.train_step(1, n_micro, load);
    REQUIRE(r.skipped);
    REQUIRE(r.nonfinite_unit == "h.1 (tensor h.1.ln_1.weight)");
    const Snapshot after = snapshot(e);
    REQUIRE(after.params == before.params);
    REQUIRE(after.m == before.m);
    REQUIRE(after.v == before.v);
    REQUIRE(after.steps == before.steps);
    REQUIRE_FALSE(e.train_step(2, n_micro, load).skipped);  // and training goes on
  }
  SECTION("abort") {
    cfg.train.on_nonfinite = "abort";
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    t.engine().train_step(0, n_micro, load);
    REQUIRE_THROWS_WITH(t.engine().train_step(1, n_micro, load),
                        Catch::Contains("first unit with non-finite gradients: h.1"));
  }
}
