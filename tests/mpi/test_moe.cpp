// SPDX-License-Identifier: MIT
// Mixtures of experts (qwen3_moe, mixtral) through everything the engine does, in deterministic
// mode against one rank of the same job, bit for bit (losses, gradient norms, every parameter):
// every strategy, each with features that touch the experts' path (gradient accumulation, bf16
// parameters and gathers, offload of the optimizer state and of the parameters to a file,
// sub-layer units with activation checkpointing, prefetch, Muon on every expert matrix, the
// bias balance with an expert capacity, bf16 GEMMs whose dispatches move bf16 rows), with
// expert parallelism over the whole shard group where it divides the 4 experts (zero1/2/3 at
// np 2 and 4, hybrid's groups of 2). Loss curves at np 4 with P = 1, 2 and 4 agree within 1e-5
// outside deterministic mode (the experts divided over the ranks; at P = 4 their shards
// offloaded, sub-layer units, checkpointing). And a NaN in one expert's gradient is named down
// to the expert's tensor.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

using test::RunResult;
RunResult run(const RunConfig& cfg, MPI_Comm comm) { return test::run_result(cfg, comm); }

using test::same_bits;

}  // namespace

TEST_CASE("Mixtures of experts: N ranks in deterministic mode are bitwise one rank", "[moe]") {
  const std::string arch = GENERATE(std::string("qwen3_moe"), std::string("mixtral"));
  const std::string strategy =
      GENERATE(std::string("ddp"), std::string("zero1"), std::string("zero2"),
               std::string("zero3"), std::string("hybrid"));
  RunConfig cfg = test::tiny_moe_config(arch, strategy, 1);
  cfg.train.steps = 3;
  cfg.train.deterministic = true;
  std::string what;
  const std::string nvme = "/tmp/fsdp_test_moe_" + std::to_string(::getpid());
  if (strategy == "ddp") {
    cfg.train.batch_size = 2 * test::world_size() * cfg.train.micro_batch_size;  // 2 micro-batches
    cfg.fsdp.mixed_precision = "bf16";
    what = "accumulation, bf16";
  } else if (strategy == "zero1") {
    cfg.moe.balance = "bias";
    cfg.moe.bias_rate = 0.01;
    cfg.moe.capacity_factor = 1.0;
    cfg.fsdp.offload = "optimizer";
    what = "bias balance, capacity 1, optimizer offload";
  } else if (strategy == "zero2") {
    cfg.fsdp.unit = "sublayer";
    cfg.fsdp.prefetch = 2;
    cfg.train.optimizer = "muon";
    what = "sub-layer units, prefetch 2, Muon";
  } else if (strategy == "zero3") {
    cfg.fsdp.unit = "sublayer";
    cfg.model_run.activation_checkpointing = "blocks";
    cfg.fsdp.offload = "nvme";
    cfg.offload.params = true;
    cfg.offload.path = nvme;
    what = "sub-layer units, checkpointing, parameters and state on NVMe";
  } else {
    cfg.model_run.activation_checkpointing = "blocks";
    cfg.fsdp.mixed_precision = "bf16";
    cfg.fsdp.gemm_dtype = "bf16";  // on every CPU: the dispatches then move bf16 rows
    what = "checkpointing, bf16 GEMMs";
  }
  INFO(arch << " " << strategy << " (" << what << ") on " << test::world_size() << " ranks");
  if (cfg.fsdp.offload == "nvme") std::filesystem::create_directories(nvme + "_1");
  RunConfig one = cfg;
  one.fsdp.shard_group_size = strategy == "hybrid" ? 1 : 0;
  if (one.fsdp.offload == "nvme") one.offload.path = nvme + "_1";
  const RunResult exact = run(one, MPI_COMM_SELF);
  if (strategy == "hybrid" && test::world_size() % 2 == 0) cfg.fsdp.shard_group_size = 2;
  // Expert parallelism over the shard group where it divides the experts: the same bits as one
  // rank computing every expert (model/decoder/moe_ep.cpp sends the weight gradients home).
  const int shard = strategy == "ddp" ? 1 : strategy == "hybrid" ? std::max(1, cfg.fsdp.shard_group_size) : test::world_size();
  if (cfg.model.n_experts % shard == 0) cfg.fsdp.expert_parallel = shard;
  INFO("fsdp.expert_parallel = " << cfg.fsdp.expert_parallel);
  if (cfg.fsdp.offload == "nvme") std::filesystem::create_directories(nvme);
  MPI_Barrier(MPI_COMM_WORLD);
  const RunResult got = run(cfg, MPI_COMM_WORLD);
  CHECK(same_bits(got.losses, exact.losses));
  CHECK(same_bits(got.norms, exact.norms));
  CHECK(got.params == exact.params);
  for (double l : exact.losses) CHECK(std::isfinite(l));
  MPI_Barrier(MPI_COMM_WORLD);
  std::filesystem::remove_all(nvme);
  std::filesystem::remove_all(nvme + "_1");
}

TEST_CASE("Expert parallelism: loss curves at P = 1, 2 and 4 agree within 1e-5", "[moe]") {
  if (test::world_size() != 4) return;  // the acceptance's np 4
  RunConfig cfg = test::tiny_moe_config("qwen3_moe", "zero3", 1);
  cfg.train.steps = 20;
  cfg.train.lr = 3e-3;
  cfg.train.warmup_steps = 2;
  cfg.train.batch_size = 8 * cfg.train.micro_batch_size;  // 2 micro-batches per rank
  std::vector<std::vector<double>> curves;
  for (int P : {1, 2, 4}) {
    cfg.fsdp.expert_parallel = P;
    if (P == 4) {  // the divided experts' shards offloaded, sub-layer units, the exchange recomputed
      cfg.fsdp.offload = "params";
      cfg.fsdp.unit = "sublayer";
      cfg.model_run.activation_checkpointing = "blocks";
    }
    curves.push_back(run(cfg, MPI_COMM_WORLD).losses);
  }
  REQUIRE(curves[0].size() == 20);
  double worst = 0.0;
  for (std::size_t p = 1; p < curves.size(); ++p)
    for (std::size_t s = 0; s < curves[0].size(); ++s)
      worst = std::max(worst, std::abs(curves[p][s] - curves[0][s]) / std::abs(curves[0][s]));
  INFO("largest relative difference from P = 1: " << worst);
  CHECK(worst < 1e-5);
  CHECK(curves[0].back() < curves[0].front() - 0.05);  // it trains
}

TEST_CASE("a NaN in one expert's gradient names that expert's tensor", "[moe]") {
  const std::string tensor = "model.layers.1.block_sparse_moe.experts.3.w2.weight";
  setenv("FSDP_TEST_INJECT_NAN", ("model.layers.1/" + tensor + "@1").c_str(), 1);
  RunConfig cfg = test::tiny_moe_config("mixtral", "zero3", 1);
  cfg.train.on_nonfinite = "skip_step";
  Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
  const int T = cfg.model.block_size, B = cfg.train.micro_batch_size;
  std::vector<std::int32_t> tok(std::size_t(B) * T);
  for (std::size_t i = 0; i < tok.size(); ++i) tok[i] = std::int32_t((i * 31 + 7) % 256);
  auto load = [&](int, Decoder& m) { m.set_batch(tok.data(), tok.data()); };
  const int n_micro = cfg.train.batch_size / test::world_size() / B;
  REQUIRE_FALSE(t.engine().train_step(0, n_micro, load).skipped);
  const StepResult r = t.engine().train_step(1, n_micro, load);
  unsetenv("FSDP_TEST_INJECT_NAN");
  REQUIRE(r.skipped);
  REQUIRE(r.nonfinite_unit == "model.layers.1 (tensor " + tensor + ")");
}
