// SPDX-License-Identifier: MIT
// Golden outputs of the training step, recorded before the engine was restructured (issue "One
// step, one place") and reproduced bit for bit since: per-step losses and gradient norms, and
// an XXH3 of every rank's parameter shards and both AdamW moments after the run, for every
// strategy x {fp32, bf16} x {prefetch 0, 1, 2} x {block, sublayer} x deterministic on/off the
// engine accepts, plus the memory features, at this run's rank count. The file is
// tests/golden/step_np<N>.txt; FSDP_GOLDEN_WRITE=1 rewrites it (only for a deliberate change
// of the numerics, which the commit must say).
//
// What the bits depend on: every GEMM is OpenBLAS's sgemm (fp32 GEMMs here, never oneDNN's),
// and OpenBLAS's kernel family sets their summation order. The files were recorded with Debian
// 12's OpenBLAS 0.3.21 and its Haswell kernels (AVX2 + FMA; "Zen" is the same code), so CTest
// runs this test with OPENBLAS_CORETYPE=Haswell whatever the machine's environment pins
// (tests/engine.cmake); OPENBLAS_L2_SIZE does not change these kernels' blocking. The rest is
// the build's own code at -march=x86-64-v3 (the same instructions on every machine that runs
// it) and the materialised attention (T = 8: the fused kernel's AVX-512 copy is not used).
// Where those kernels cannot run (no AVX2 + FMA, or a BLAS that is not OpenBLAS), the test
// says SKIPPED with the reason and CTest reports it skipped, never passed.
#include <catch2/catch.hpp>
#include <xxhash.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "core/blas_setup.hpp"
#include "engine_fixture.hpp"

using namespace fsdp;

namespace {

struct Case {
  std::string name;
  RunConfig cfg;
};

std::vector<Case> cases(int nranks) {
  std::vector<Case> out;
  for (const char* strategy : {"ddp", "zero1", "zero2", "zero3", "hybrid"})
    for (const char* precision : {"fp32", "bf16"})
      for (int prefetch : {0, 1, 2})
        for (const char* unit : {"block", "sublayer"})
          for (bool det : {false, true}) {
            RunConfig c = test::tiny_config(strategy, prefetch);
            c.train.steps = 3;
            c.train.batch_size = 24;  // 2-sequence micro-batches divide it over 1-4 ranks
            c.train.micro_batch_size = det ? 1 : 2;
            if (std::string(strategy) == "hybrid") c.fsdp.shard_group_size = nranks % 2 ? 1 : 2;
            c.fsdp.mixed_precision = precision;
            c.fsdp.reduce_dtype = precision;
            c.fsdp.unit = unit;
            c.train.deterministic = det;
            std::ostringstream name;
            name << strategy << "/" << precision << "/k" << prefetch << "/" << unit
                 << (det ? "/det" : "");
            out.push_back({name.str(), c});
          }
  // The memory features, on zero3 and zero2 (one case each: their code paths, not a product).
  auto extra = [&](const std::string& name, const std::string& strategy, auto&& edit) {
    RunConfig c = test::tiny_config(strategy, 1);
    c.train.steps = 3;
    c.train.batch_size = 24;
    c.train.micro_batch_size = 2;
    edit(c);
    out.push_back({name, c});
  };
  extra("zero3/offload_params", "zero3", [](RunConfig& c) { c.fsdp.offload = "params"; });
  extra("zero2/offload_optimizer", "zero2", [](RunConfig& c) { c.fsdp.offload = "optimizer"; });
  extra("zero3/checkpointing", "zero3",
        [](RunConfig& c) { c.model_run.activation_checkpointing = "blocks"; });
  extra("zero3/sublayer_checkpointing", "zero3", [](RunConfig& c) {
    c.model_run.activation_checkpointing = "blocks";
    c.fsdp.unit = "sublayer";
  });
  extra("zero3/accumulate_sharded", "zero3", [](RunConfig& c) { c.fsdp.accumulate = "sharded"; });
  extra("zero2/accumulate_sharded", "zero2", [](RunConfig& c) { c.fsdp.accumulate = "sharded"; });
  extra("zero3/keep_after_forward", "zero3", [](RunConfig& c) { c.fsdp.reshard_after_forward = false; });
  extra("zero3/no_cross_step_prefetch", "zero3", [](RunConfig& c) { c.fsdp.prefetch_across_steps = false; });
  extra("zero3/no_clip", "zero3", [](RunConfig& c) { c.train.grad_clip = 0.0; });
  extra("zero3/bf16_params_fp32_reduce", "zero3", [](RunConfig& c) { c.fsdp.mixed_precision = "bf16"; });
  extra("ddp/fp32_params_bf16_reduce", "ddp", [](RunConfig& c) { c.fsdp.reduce_dtype = "bf16"; });
  extra("zero1/checkpointing_bf16", "zero1", [](RunConfig& c) {
    c.model_run.activation_checkpointing = "blocks";
    c.fsdp.mixed_precision = "bf16";
  });
  // The golden files were written with fp32 GEMMs; auto would pick oneDNN's bf16 kernels on a
  // CPU that has them, whose bits are another machine's (test_mixed_precision covers them).
  for (Case& k : out) k.cfg.fsdp.gemm_dtype = "fp32";
  return out;
}

std::string hex(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// One line: the case, its losses and norms in hex, and the XXH3 of every rank's shards.
std::string run(const Case& k) {
  Trainer t(k.cfg, MPI_COMM_WORLD, test::quiet());
  const TrainSummary s = t.run();
  Engine& e = t.engine();
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  for (int u = 0; u < int(e.units().size()); ++u)
    for (const ShardVec& v : {e.param_shard(u), e.exp_avg_shard(u), e.exp_avg_sq_shard(u)}) {
      const std::vector<float> h = v.values();
      XXH3_64bits_update(st, h.data(), h.size() * sizeof(float));
    }
  unsigned long long mine = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  std::vector<unsigned long long> all(std::size_t(test::world_size()));
  MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all.data(), 1, MPI_UNSIGNED_LONG_LONG,
                MPI_COMM_WORLD);
  std::ostringstream line;
  line << k.name << " loss";
  for (double l : s.losses) line << " " << hex(l);
  line << " norm";
  for (double n : s.grad_norms) line << " " << hex(n);
  line << " state " << std::hex << XXH3_64bits(all.data(), all.size() * sizeof(all[0]));
  return line.str();
}

// The OpenBLAS kernel family the golden files hold for.
constexpr const char* kGoldenKernel = "Haswell";

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Why the goldens cannot hold in this process, or "" when they can.
std::string why_not_comparable() {
  const std::string used = blas_kernel_in_use(), best = blas_best_kernel();
  if (used.empty())
    return "the BLAS is not OpenBLAS: the golden files hold for OpenBLAS's " +
           std::string(kGoldenKernel) + " kernels only";
  if (best.empty())
    return "this CPU has no AVX2 + FMA: OpenBLAS's " + std::string(kGoldenKernel) +
           " kernels, which the golden files hold for, cannot run here";
  const std::string u = lower(used);
  if (u != lower(kGoldenKernel) && u != "zen")
    return "OpenBLAS runs its " + used + " kernels in this process; the golden files hold for " +
           kGoldenKernel + "'s (run it through CTest, or with OPENBLAS_CORETYPE=" + kGoldenKernel +
           ")";
  return {};
}

std::string golden_path() {
  return std::string(FSDP_SOURCE_DIR) + "/tests/golden/step_np" +
         std::to_string(test::world_size()) + ".txt";
}

}  // namespace

TEST_CASE("the training step reproduces its golden outputs bit for bit", "[golden]") {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::vector<Case> all = cases(test::world_size());
  if (const std::string why = why_not_comparable(); !why.empty()) {
    if (rank == 0) std::printf("SKIPPED: %s\n", why.c_str());  // CTest: SKIP_REGULAR_EXPRESSION
    return;
  }
  if (std::getenv("FSDP_GOLDEN_WRITE")) {
    std::ostringstream text;
    for (const Case& k : all) text << run(k) << "\n";
    if (rank == 0) std::ofstream(golden_path()) << text.str();
    WARN("wrote " << golden_path() << " (" << all.size() << " cases)");
    return;
  }
  std::ifstream in(golden_path());
  REQUIRE(in.good());
  std::map<std::string, std::string> want;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) want[line.substr(0, line.find(' '))] = line;
  REQUIRE(want.size() == all.size());
  for (const Case& k : all) {
    INFO("case " << k.name << " on " << test::world_size() << " ranks; recorded with OpenBLAS "
                 << kGoldenKernel << " kernels, this run: " << blas_kernel_in_use() << " ("
                 << blas_config() << ")");
    CHECK(run(k) == want[k.name]);
  }
}
