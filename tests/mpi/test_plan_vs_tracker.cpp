// SPDX-License-Identifier: MIT
// The planner's memory model against the memory tracker of real runs: for every strategy,
// prefetch depth, resharding choice, activation checkpointing and gradient accumulation mode,
// the predicted per-category device peaks (and the total peak) must equal what the tracker
// measured over two training steps, byte for byte. Runs at np 1..4 on MPI_COMM_WORLD, and as a
// single process on MPI_COMM_SELF on every rank.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "engine_fixture.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "plan/counted_step.hpp"
#include "plan/memory_model.hpp"

using namespace fsdp;

namespace {

struct Case {
  std::string strategy;
  int prefetch = 1;
  bool reshard = true;
  bool checkpointing = false;
  int micro_batches = 1;  // per rank
  bool sharded_accumulate = false;
  std::string offload = "none";
  bool deterministic = false;
  std::string unit = "block";
  std::string attention = "materialized";
  std::string arch = "gpt2";
  // Experts: fsdp.expert_parallel over the shard group where it divides the 4 experts (the
  // received rows' worst case, the counts, and deterministic mode's gradients sent home).
  bool expert_parallel = false;
  bool lora = false;  // adapters on a frozen base: no gradient or optimizer state for the base
};

std::string describe(const Case& c) {
  std::ostringstream os;
  os << c.strategy << " k=" << c.prefetch << " reshard=" << c.reshard
     << " ckpt=" << c.checkpointing << " micro=" << c.micro_batches
     << " accumulate=" << (c.sharded_accumulate ? "sharded" : "unsharded")
     << " offload=" << c.offload << " deterministic=" << c.deterministic << " unit=" << c.unit
     << " attention=" << c.attention << " arch=" << c.arch << " ep=" << c.expert_parallel
     << " lora=" << c.lora;
  return os.str();
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char* s : {"ddp", "zero1", "zero2", "zero3", "hybrid"})
    for (int k : {0, 1, 2, 5}) v.push_back({s, k});
  for (const char* s : {"zero2", "zero3", "hybrid"}) {
    v.push_back({s, 1, false});
    v.push_back({s, 3, false});
  }
  for (const char* s : {"ddp", "zero1", "zero2", "zero3"}) {
    v.push_back({s, 1, true, true});
    v.push_back({s, 2, true, false, 3, false});
    v.push_back({s, 2, true, false, 3, true});
    v.push_back({s, 0, true, true, 2, true});
    v.push_back({s, 1, true, false, 2, false, "optimizer"});
    v.push_back({s, 1, true, false, 1, false, "none", true});
    v.push_back({s, 2, true, true, 4, false, "none", true});
    v.push_back({s, 0, true, false, 3, false, "none", true});
  }
  v.push_back({"zero3", 1, true, false, 2, false, "params"});
  v.push_back({"zero3", 2, false, true, 1, false, "params"});
  v.push_back({"hybrid", 1, true, false, 2, false, "params"});
  v.push_back({"hybrid", 0, true, false, 1, false, "optimizer"});
  // Sub-layer units: a smaller window, and checkpointing keeps each block's res2.
  for (const char* s : {"ddp", "zero2", "zero3", "hybrid"}) {
    v.push_back({s, 1, true, false, 1, false, "none", false, "sublayer"});
    v.push_back({s, 2, true, true, 2, false, "none", false, "sublayer"});
  }
  v.push_back({"zero3", 0, false, true, 3, true, "params", false, "sublayer"});
  v.push_back({"hybrid", 1, true, false, 3, false, "none", true});
  v.push_back({"hybrid", 2, true, true, 2, false, "params", true});
  // The fused attention keeps B*H*T log-sum-exps per layer and no score work space.
  v.push_back({"zero3", 1, true, false, 2, false, "none", false, "block", "fused"});
  v.push_back({"ddp", 2, true, true, 1, false, "none", false, "sublayer", "fused"});
  // Llama: grouped-query heads on either kernel, an untied head in the last unit, SwiGLU, the
  // rotary table; and plain multi-head attention.
  v.push_back({"zero3", 1, true, false, 2, false, "none", false, "block", "auto", "llama"});
  v.push_back({"zero2", 2, true, true, 1, false, "none", false, "sublayer", "fused", "llama"});
  v.push_back({"hybrid", 2, true, true, 2, false, "params", false, "sublayer", "auto", "llama"});
  v.push_back({"ddp", 0, true, true, 1, false, "optimizer", true, "block", "auto", "llama"});
  v.push_back({"zero2", 1, true, false, 3, true, "none", false, "sublayer", "materialized", "llama-mha"});
  // NVMe offload: the moments (and parameter shards) leave memory; the read slots and the
  // optimizer's I/O sets stay.
  v.push_back({"zero3", 1, true, false, 2, false, "nvme"});
  v.push_back({"zero3", 2, true, false, 2, false, "nvme+params"});
  v.push_back({"zero2", 0, true, true, 1, false, "nvme"});
  v.push_back({"hybrid", 1, false, false, 3, false, "nvme+params", false, "sublayer"});
  v.push_back({"ddp", 1, true, false, 1, false, "nvme", false, "block", "auto", "llama"});
  // Mixtures of experts: the routers' and experts' buffers per sparse layer (one set under
  // checkpointing), dense and sparse layers side by side, every strategy's model state.
  v.push_back({"zero3", 1, true, false, 2, false, "none", false, "block", "materialized", "qwen3_moe"});
  v.push_back({"hybrid", 2, true, true, 1, false, "params", false, "sublayer", "fused", "qwen3_moe"});
  v.push_back({"zero2", 0, true, true, 2, true, "none", false, "block", "auto", "mixtral"});
  v.push_back({"zero3", 1, true, false, 2, false, "none", false, "block", "materialized", "qwen3_moe", true});
  v.push_back({"hybrid", 2, true, true, 1, false, "params", false, "sublayer", "fused", "mixtral", true});
  v.push_back({"zero3", 0, true, true, 2, false, "none", true, "block", "auto", "mixtral", true});
  v.push_back({"ddp", 1, true, false, 1, false, "optimizer", true, "sublayer", "auto", "mixtral"});
  // LoRA: each block two parts (the frozen base, the adapters), the embedding and final units
  // frozen whole.
  v.push_back({"zero3", 1, true, false, 2, false, "none", false, "block", "auto", "llama", false, true});
  v.push_back({"hybrid", 2, true, true, 1, false, "params", false, "sublayer", "fused", "gpt2", false, true});
  v.push_back({"ddp", 1, true, false, 2, false, "optimizer", false, "block", "auto", "llama", false, true});
  v.push_back({"hybrid", 1, true, false, 2, false, "params", true, "sublayer", "auto", "llama", false, true});
  return v;
}

RunConfig config_for(const Case& c, int ranks) {
  RunConfig cfg = c.arch == "gpt2" ? test::tiny_config(c.strategy, c.prefetch)
                  : c.arch == "qwen3_moe" || c.arch == "mixtral"
                      ? test::tiny_moe_config(c.arch, c.strategy, c.prefetch)
                      : test::tiny_llama_config(c.strategy, c.prefetch);
  if (c.arch == "llama-mha") cfg.model.n_kv_head = 0;
  cfg.train.steps = 2;
  cfg.train.micro_batch_size = 1;
  cfg.train.batch_size = ranks * c.micro_batches;
  cfg.fsdp.reshard_after_forward = c.reshard;
  cfg.model_run.activation_checkpointing = c.checkpointing ? "blocks" : "none";
  cfg.fsdp.accumulate = c.sharded_accumulate ? "sharded" : "unsharded";
  cfg.fsdp.offload = c.offload.rfind("nvme", 0) == 0 ? "nvme" : c.offload;
  if (cfg.fsdp.offload == "nvme") {
    // A directory per process: each process that runs alone (MPI_COMM_SELF) is a job of its own.
    cfg.offload.path = "/tmp/fsdp_plan_nvme_" + std::to_string(::getpid());
    std::filesystem::create_directories(cfg.offload.path);
    cfg.offload.params = c.offload == "nvme+params";
  }
  cfg.train.deterministic = c.deterministic;
  cfg.lora.enabled = c.lora;
  cfg.lora.rank = 4;
  cfg.fsdp.unit = c.unit;
  cfg.model_run.attention = c.attention;
  // Hybrid: shard groups of two ranks where the world divides by two, else the whole node.
  cfg.fsdp.shard_group_size = c.strategy == "hybrid" && ranks % 2 == 0 ? 2 : 0;
  if (c.expert_parallel) {
    const int shard = c.strategy == "hybrid" ? (ranks % 2 == 0 ? 2 : ranks) : ranks;
    for (int P : {4, 2, 1})
      if (shard % P == 0 && cfg.model.n_experts % P == 0) {
        cfg.fsdp.expert_parallel = P;
        break;
      }
    if (c.strategy == "hybrid") cfg.moe.capacity_factor = 1.5;  // the buffers' bound under a capacity
  }
  return cfg;
}

void compare(const Case& c, MPI_Comm comm) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  const RunConfig cfg = config_for(c, ranks);
  Trainer t(cfg, comm, test::quiet());
  t.run();
  const MemoryTracker& m = t.tracker();
  // All ranks are on this one node, so hybrid's default shard group is the whole world.
  const plan::MemoryPlan p = plan::plan_memory(plan::setup_from_config(cfg, ranks, 1, kernels::gemm_bf16_computes()));
  INFO(describe(c) << " on " << ranks << " rank(s)");
  REQUIRE(p.shard_group == t.engine().shard_group_size());
  REQUIRE(p.padded_params == t.engine().padded_params());
  REQUIRE(p.largest_unit == t.engine().largest_unit());
  // Deterministic mode's buffers depend on the rank's share of the summation tree: the plan is
  // the most any rank needs, so it is compared with the largest peak over the ranks.
  auto most = [&](std::int64_t v) {
    if (!c.deterministic) return v;
    std::int64_t out = v;
    MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MAX, comm);
    return out;
  };
  for (int ci = 0; ci < kNumMemCategories; ++ci) {
    const MemCategory cat = MemCategory(ci);
    INFO("category " << to_string(cat));
    CHECK(p.device(cat) == most(m.peak(cat, MemSpace::Device)));
    CHECK(p.host(cat) == most(m.peak(cat, MemSpace::Host)));
  }
  CHECK(p.device_total() == most(m.peak_total(MemSpace::Device)));
  CHECK(p.host_total() == most(m.peak_total(MemSpace::Host)));
  if (!cfg.offload.path.empty()) {
    REQUIRE(p.disk_bytes == t.offload_file()->size());
    std::filesystem::remove_all(cfg.offload.path);  // the lock file (the data file has no name)
  }
}

}  // namespace

TEST_CASE("planned memory equals the tracker's peaks on MPI_COMM_WORLD", "[plan]") {
  for (const Case& c : cases()) compare(c, MPI_COMM_WORLD);
}

TEST_CASE("planned memory equals the tracker's peaks of a single process", "[plan]") {
  // Every rank runs its own one-rank job: no collective spans ranks.
  for (const char* s : {"ddp", "zero1", "zero2", "zero3"})
    for (int k : {0, 1, 2}) compare({s, k}, MPI_COMM_SELF);
  compare({"zero3", 1, true, true, 2, false}, MPI_COMM_SELF);
}

TEST_CASE("the device budget the planner predicts is the one a run needs", "[plan]") {
  // Exactly the predicted peak runs; one float less fails with OutOfMemory on every rank.
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const Case c{"zero3", 1};
  RunConfig cfg = config_for(c, ranks);
  const std::int64_t need =
      plan::plan_memory(plan::setup_from_config(cfg, ranks, 1, kernels::gemm_bf16_computes())).device_total();
  cfg.memory.device_budget = need;
  {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    REQUIRE_NOTHROW(t.run());
  }
  cfg.memory.device_budget = need - 4;
  bool oom = false;
  try {
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    t.run();
  } catch (const OutOfMemory&) {
    oom = true;
  }
  REQUIRE(oom);
}

TEST_CASE("under bf16 the planner pads as the engine and plans its model state byte for byte",
          "[plan]") {
  // One padding rule (config/run_setup.hpp): bf16 shards are whole 4-byte words and a bf16
  // reduction splits each shard over the replicas. The planner models bf16 as a GPU build runs
  // it (bf16 activations, a staged cast per gather); the CPU build keeps fp32 activations and a
  // widening slot, so only the model state and the gathered window are compared here.
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  for (const char* s : {"zero3", "hybrid", "ddp", "zero2"})
    for (const char* reduce : {"fp32", "bf16"}) {
      RunConfig cfg = config_for({s, 1}, ranks);
      cfg.fsdp.mixed_precision = "bf16";
      cfg.fsdp.reduce_dtype = reduce;
      Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
      t.run();
      const MemoryTracker& m = t.tracker();
      const plan::MemoryPlan p = plan::plan_memory(plan::setup_from_config(cfg, ranks, 1, kernels::gemm_bf16_computes()));
      INFO(s << " bf16, reduce " << reduce << ", on " << ranks << " rank(s)");
      REQUIRE(p.padded_params == t.engine().padded_params());
      REQUIRE(p.largest_unit == t.engine().largest_unit());
      CHECK(p.device(MemCategory::OptimizerState) == m.peak(MemCategory::OptimizerState, MemSpace::Device));
      if (std::string(s) == "zero3" || std::string(s) == "hybrid") {
        CHECK(p.device(MemCategory::ParamShard) == m.peak(MemCategory::ParamShard, MemSpace::Device));
        CHECK(p.device(MemCategory::GatheredParams) ==
              m.peak(MemCategory::GatheredParams, MemSpace::Device));
        if (std::string(reduce) == "fp32")
          CHECK(p.device(MemCategory::Grads) == m.peak(MemCategory::Grads, MemSpace::Device));
      }
    }
}

TEST_CASE("the engine counted without data allocates what it allocates training, in bf16 too",
          "[plan]") {
  // plan/counted_step.hpp runs the engine on a counting tracker and a mesh that moves nothing.
  // fp32 plans are read from it (compared with real runs above); here every case of the list
  // runs again in bf16 (bf16 gathers, casts, widening slots and bf16 reductions: the code paths
  // the counting mode had to learn to skip), and this rank's counted peaks must equal its real
  // ones in every category and space.
  int ranks = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  for (const Case& c : cases()) {
    RunConfig cfg = config_for(c, ranks);
    cfg.fsdp.mixed_precision = "bf16";
    cfg.fsdp.reduce_dtype = c.prefetch % 2 == 0 ? "bf16" : "fp32";
    INFO(describe(c) << " bf16, reduce " << cfg.fsdp.reduce_dtype << ", on " << ranks << " rank(s)");
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    t.run();
    const MemoryTracker& m = t.tracker();
    const plan::CountedStep counted =
        plan::count_step(plan::setup_from_config(cfg, ranks, 1, kernels::gemm_bf16_computes()), rank);
    for (int s = 0; s < 2; ++s) {
      for (int ci = 0; ci < kNumMemCategories; ++ci) {
        INFO(to_string(MemCategory(ci)) << " " << to_string(MemSpace(s)));
        CHECK(counted.tracker.peak(MemCategory(ci), MemSpace(s)) == m.peak(MemCategory(ci), MemSpace(s)));
      }
      CHECK(counted.tracker.peak_total(MemSpace(s)) == m.peak_total(MemSpace(s)));
    }
    if (!cfg.offload.path.empty()) std::filesystem::remove_all(cfg.offload.path);
  }
}
