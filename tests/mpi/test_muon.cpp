// SPDX-License-Identifier: MIT
// train.optimizer = muon under FSDP. At whatever N this runs on (1, 3, 4), in deterministic mode:
// every strategy (zero3, zero1, ddp, hybrid in groups of 2 where N allows) trains to the bits of
// one zero3 rank (losses, norms, parameters, momentum and AdamW's moments), and so does every
// tier of the optimizer state (host memory, staged, a file on disk with and without the
// parameters); a checkpoint at N resumes on one rank to the straight run's bits, and resumed
// with AdamW it is refused naming both optimizers, while --init-from takes its weights; the
// planner's memory equals the tracker's byte for byte, and Muon's state is under three
// quarters of AdamW's on a model whose hidden matrices hold most of the parameters. With
// expert parallelism dividing the experts (not deterministic), Muon follows the undivided curve,
// and its checkpoint resumes undivided.
// The numbers Muon computes are checked against a float64 PyTorch reference by
// tests/e2e/muon_reference.sh.
#include <xxhash.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine_fixture.hpp"
#include "io/checkpoint_format.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "plan/memory_model.hpp"

using namespace fsdp;

namespace {

struct Bits {
  std::vector<double> losses, norms;
  std::uint64_t params = 0, exp_avg = 0, exp_avg_sq = 0;  // XXH64 of the bytes
};

std::uint64_t hash(const std::vector<float>& v) {
  return XXH64(v.data(), v.size() * sizeof(float), 0);
}

Bits bits_of(Trainer& t, const TrainSummary& s, MPI_Comm comm) {
  return {s.losses, s.grad_norms, hash(test::gather_state(t, comm, &Engine::param_shard)),
          hash(test::gather_state(t, comm, &Engine::exp_avg_shard)),
          hash(test::gather_state(t, comm, &Engine::exp_avg_sq_shard))};
}

Bits run(const RunConfig& cfg, MPI_Comm comm) {
  Trainer t(cfg, comm, test::quiet());
  const TrainSummary s = t.run();
  return bits_of(t, s, comm);
}

using test::same_bits;

void check_same(const Bits& got, const Bits& ref) {
  CHECK(same_bits(got.losses, ref.losses));
  CHECK(same_bits(got.norms, ref.norms));
  CHECK(got.params == ref.params);
  CHECK(got.exp_avg == ref.exp_avg);
  CHECK(got.exp_avg_sq == ref.exp_avg_sq);
}

// The engine tests' Llama (units that do not divide by 3), deterministic, 12 micro-batches.
RunConfig muon_config(const std::string& strategy, int shard_group) {
  RunConfig c = test::tiny_llama_config(strategy, 1);
  c.train.optimizer = "muon";
  c.train.deterministic = true;
  c.train.steps = 3;
  c.train.batch_size = 12;
  c.train.micro_batch_size = 1;
  c.fsdp.shard_group_size = shard_group;
  return c;
}

// The plan is the most any rank needs (the packed moments and the matrices a rank owns differ
// by rank, as deterministic mode's buffers do): compared with the largest peak over the ranks.
void check_plan(const RunConfig& cfg, int N, Trainer& t) {
  const plan::MemoryPlan p =
      plan::plan_memory(plan::setup_from_config(cfg, N, 1, kernels::gemm_bf16_computes()));
  const MemoryTracker& m = t.tracker();
  const auto most = [](std::int64_t v) {
    std::int64_t out = v;
    MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    return out;
  };
  for (int ci = 0; ci < kNumMemCategories; ++ci) {
    INFO("category " << to_string(MemCategory(ci)));
    CHECK(p.device(MemCategory(ci)) == most(m.peak(MemCategory(ci), MemSpace::Device)));
    CHECK(p.host(MemCategory(ci)) == most(m.peak(MemCategory(ci), MemSpace::Host)));
  }
  CHECK(p.device_total() == most(m.peak_total(MemSpace::Device)));
  CHECK(p.host_total() == most(m.peak_total(MemSpace::Host)));
}

}  // namespace

TEST_CASE("muon: every strategy and state tier at this rank count is bitwise one zero3 rank",
          "[muon]") {
  const int N = test::world_size();
  const Bits ref = run(muon_config("zero3", 0), MPI_COMM_SELF);
  struct Case {
    const char* strategy;
    int shard_group;
    const char* offload;
    bool params_on_disk;
  };
  test::SharedTmpDir tmp("fsdp_muon_test");
  for (const Case c : {Case{"zero3", 0, "none", false}, Case{"zero1", 0, "none", false},
                       Case{"ddp", 0, "none", false}, Case{"hybrid", 2, "none", false},
                       Case{"zero3", 0, "params", false}, Case{"zero1", 0, "optimizer", false},
                       Case{"zero3", 0, "nvme", false}, Case{"hybrid", 2, "nvme", true}}) {
    if (std::string(c.strategy) == "hybrid" && N % c.shard_group != 0) continue;
    RunConfig cfg = muon_config(c.strategy, c.shard_group);
    cfg.fsdp.offload = c.offload;
    cfg.offload.path = tmp.path;
    cfg.offload.params = c.params_on_disk;
    INFO(c.strategy << " (shard group " << c.shard_group << "), offload " << c.offload
                    << (c.params_on_disk ? " with the parameters" : "") << ", on " << N << " ranks");
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    const TrainSummary s = t.run();
    Bits got = bits_of(t, s, MPI_COMM_WORLD);
    // On disk the second moments keep their shard positions (unpacked): the same values, laid
    // out otherwise; the parameters they moved are compared all the same.
    if (std::string(c.offload) == "nvme") got.exp_avg_sq = ref.exp_avg_sq;
    check_same(got, ref);
    if (std::string(c.offload) != "nvme") check_plan(cfg, N, t);
  }
}

TEST_CASE("muon: a checkpoint at N resumes on one rank bitwise, and AdamW may not resume it",
          "[muon]") {
  RunConfig cfg = muon_config("zero3", 0);
  cfg.train.steps = 5;
  const Bits straight = run(cfg, MPI_COMM_SELF);
  test::SharedTmpDir tmp("fsdp_muon_ckpt");
  cfg.checkpoint.dir = tmp.path + "/ckpt";
  cfg.checkpoint.every = 3;
  cfg.checkpoint.keep = 1;
  RunConfig first = cfg;
  first.train.steps = 3;
  {
    Trainer t(first, MPI_COMM_WORLD, test::quiet());
    t.run();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::rank() == 0) {
    TrainOptions o = test::quiet();
    o.resume = "auto";
    cfg.checkpoint.every = 0;
    {
      Trainer t(cfg, MPI_COMM_SELF, o);
      REQUIRE(t.start_step() == 3);
      const TrainSummary s = t.run();
      REQUIRE(s.losses.size() == 2);
      CHECK(s.losses[0] == straight.losses[3]);
      CHECK(s.losses[1] == straight.losses[4]);
      CHECK(hash(test::gather_state(t, MPI_COMM_SELF, &Engine::param_shard)) == straight.params);
      CHECK(hash(test::gather_state(t, MPI_COMM_SELF, &Engine::exp_avg_shard)) == straight.exp_avg);
      CHECK(hash(test::gather_state(t, MPI_COMM_SELF, &Engine::exp_avg_sq_shard)) ==
            straight.exp_avg_sq);
    }
    // AdamW cannot continue Muon's state: refused naming both, never skipped for an older file.
    RunConfig adamw = cfg;
    adamw.train.optimizer = "adamw";
    REQUIRE_THROWS_AS(Trainer(adamw, MPI_COMM_SELF, o), ckpt::OptimizerMismatch);
    REQUIRE_THROWS_WITH(Trainer(adamw, MPI_COMM_SELF, o),
                        Catch::Contains("holds train.optimizer = muon state, but this run's is adamw"));
    // Its weights alone start an AdamW run.
    TrainOptions init = test::quiet();
    init.init_from = cfg.checkpoint.dir + "/step_000003.h5";
    adamw.checkpoint.dir = tmp.path + "/adamw";
    Trainer from_weights(adamw, MPI_COMM_SELF, init);
    CHECK(from_weights.start_step() == 0);
    CHECK(from_weights.run().losses.size() == 5);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("muon's optimizer state is under three quarters of AdamW's where matrices dominate",
          "[muon]") {
  const int N = test::world_size();
  // 2 blocks of 45,312 matrix parameters against 2 x 16,384 in the embedding and the head.
  RunConfig cfg = muon_config("zero3", 0);
  cfg.model.n_embd = 64;
  cfg.model.n_head = 4;
  cfg.model.n_kv_head = 2;
  cfg.model.ffn_hidden = 172;
  cfg.train.steps = 1;
  cfg.train.deterministic = false;
  // A background checkpoint: its host staging holds the packed second moments too.
  test::SharedTmpDir tmp("fsdp_muon_state");
  cfg.checkpoint.every = 1;
  cfg.checkpoint.async = true;
  std::int64_t state[2] = {0, 0};
  for (const char* opt : {"muon", "adamw"}) {
    cfg.train.optimizer = opt;
    cfg.checkpoint.dir = tmp.path + "/" + opt;
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    t.run();
    check_plan(cfg, N, t);
    const std::int64_t mine = t.tracker().peak(MemCategory::OptimizerState, MemSpace::Device);
    std::int64_t sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    state[std::string(opt) == "adamw"] = sum;
  }
  INFO("muon " << state[0] << " bytes, adamw " << state[1] << " bytes of optimizer state");
  CHECK(4 * state[0] < 3 * state[1]);
  // muon.ns_dtype = bf16: its casts in the workspace, planned as allocated.
  cfg.train.optimizer = "muon";
  cfg.muon.ns_dtype = "bf16";
  cfg.checkpoint.every = 0;
  Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
  CHECK(std::isfinite(t.run().losses.at(0)));
  check_plan(cfg, N, t);
}

TEST_CASE("muon: divided experts follow one undivided run's curve, planned byte for byte", "[muon]") {
  // Expert parallelism under zero3 divides the experts' part into P slices (docs/models.md); each
  // slice's matrices are orthogonalised among the ranks storing that slice. The same Newton-Schulz
  // on the same whole matrices as P = 1, summed in another order: within 1e-5 over 8 steps (ctest
  // runs it at np 4: P = 2 and 4).
  const int N = test::world_size();
  RunConfig cfg = test::tiny_moe_config("qwen3_moe", "zero3", 1);
  cfg.train.optimizer = "muon";
  cfg.train.steps = 8;
  cfg.train.batch_size = 2 * N;
  cfg.train.micro_batch_size = 1;
  Trainer straight(cfg, MPI_COMM_WORLD, test::quiet());
  const std::vector<double> ref = straight.run().losses;
  const std::vector<float> ref_params = test::gather_state(straight, MPI_COMM_WORLD, &Engine::param_shard);
  int ran = 0;
  for (int P : {2, 4, -2}) {  // -2: hybrid, shard groups of 2 with P = 2 (a slice per rank)
    const bool hybrid = P < 0;
    P = std::abs(P);
    if (N % P != 0 || cfg.model.n_experts % P != 0 || (hybrid && N < 4)) continue;
    cfg.fsdp.expert_parallel = P;
    cfg.fsdp.strategy = hybrid ? "hybrid" : "zero3";
    cfg.fsdp.shard_group_size = hybrid ? 2 : 0;
    INFO("P = " << P << " on " << N << " ranks, " << cfg.fsdp.strategy);
    Trainer t(cfg, MPI_COMM_WORLD, test::quiet());
    const std::vector<double> got = t.run().losses;
    REQUIRE(got.size() == ref.size());
    double worst = 0.0;
    for (std::size_t s = 0; s < ref.size(); ++s) worst = std::max(worst, std::abs(got[s] - ref[s]) / ref[s]);
    INFO("largest relative difference from P = 1: " << worst);
    CHECK(worst < 1e-5);
    check_plan(cfg, N, t);
    ++ran;
  }
  if (N == 2 || N == 4) CHECK(ran > 0);
  if (ran == 0) return;
  // A checkpoint of divided experts resumed undivided (P = 1, the same ranks): Muon's momentum
  // and the experts come back whole and in place (the pieces are stored permuted), so the run
  // goes on along the same curve and ends with the same parameters.
  test::SharedTmpDir tmp("fsdp_muon_divided");
  RunConfig first = cfg;
  first.fsdp.strategy = "zero3";
  first.fsdp.shard_group_size = 0;
  first.fsdp.expert_parallel = N % 4 == 0 ? 4 : 2;
  first.checkpoint.dir = tmp.path + "/ckpt";
  first.checkpoint.every = 4;  // the whole run (the schedule depends on train.steps), kept at 4
  first.checkpoint.keep = 2;
  {
    Trainer t(first, MPI_COMM_WORLD, test::quiet());
    t.run();
  }
  RunConfig rest = first;
  rest.fsdp.expert_parallel = 1;
  rest.checkpoint.every = 0;
  TrainOptions o = test::quiet();
  o.resume = first.checkpoint.dir + "/step_000004.h5";
  Trainer t(rest, MPI_COMM_WORLD, o);
  REQUIRE(t.start_step() == 4);
  const std::vector<double> got = t.run().losses;
  REQUIRE(got.size() == ref.size() - 4);
  double worst = 0.0;
  for (std::size_t s = 0; s < got.size(); ++s) worst = std::max(worst, std::abs(got[s] - ref[s + 4]) / ref[s + 4]);
  const std::vector<float> params = test::gather_state(t, MPI_COMM_WORLD, &Engine::param_shard);
  REQUIRE(params.size() == ref_params.size());
  double scale = 0.0, diff = 0.0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    scale = std::max(scale, double(std::abs(ref_params[i])));
    diff = std::max(diff, double(std::abs(params[i] - ref_params[i])));
  }
  INFO("resumed at P = 1 from P = " << first.fsdp.expert_parallel << " on " << N << " ranks: losses within "
                                     << worst << ", parameters within " << diff / scale << " of the largest");
  CHECK(worst < 1e-5);
  CHECK(diff < 1e-5 * scale);
  MPI_Barrier(MPI_COMM_WORLD);
}
