// SPDX-License-Identifier: MIT
// The planner's counted run of the engine (plan/counted_step.hpp) launches no kernel and copies
// nothing through Kokkos: it runs where there is no device (fsdp-plan on a GPU cluster's login
// node, a build whose execution space is CUDA), so every kernel the engine's step launches must
// be skipped on a counting tracker, not merely run over empty views. Checked with the Kokkos
// Tools callbacks (core/kernel_hooks.hpp for the kernels; deep copies directly) over the
// strategies, offload tiers, deterministic mode, Muon, bf16 and expert parallelism. (Fences
// have no callback on the Serial backend this suite runs on: they sit behind the same checks.)
#include <catch2/catch.hpp>

#include <Kokkos_Core.hpp>
#include <string>
#include <vector>

#include "core/kernel_hooks.hpp"
#include "config/load_config.hpp"
#include "config/run_setup.hpp"
#include "plan/counted_step.hpp"

using namespace fsdp;

namespace {

bool g_watching = false;
std::vector<std::string> g_launched;  // kernels and deep copies while watching

void on_kernel(const char* name, std::uint64_t) {
  if (g_watching) g_launched.push_back(name);
}
void on_kernel_end(std::uint64_t) {}
void on_deep_copy(Kokkos::Tools::SpaceHandle, const char* dst, const void*, Kokkos::Tools::SpaceHandle,
                  const char* src, const void*, std::uint64_t) {
  if (g_watching) g_launched.push_back(std::string("deep_copy ") + dst + " <- " + src);
}

// A deck on 4 ranks of one node, with overrides.
RunSetup deck(const std::string& name, std::vector<std::string> sets) {
  sets.push_back("train.batch_size=16");
  sets.push_back("train.micro_batch_size=2");
  return setup_from_config(load_config(std::string(FSDP_SOURCE_DIR) + "/inputs/" + name, sets), 4,
                           1, false);
}

}  // namespace

TEST_CASE("the planner's counted step launches no kernel and copies nothing", "[plan]") {
  hooks::add_kernel_listener({on_kernel, on_kernel_end});
  Kokkos::Tools::Experimental::set_begin_deep_copy_callback(on_deep_copy);
  int planned = 0;
  for (const char* strategy : {"ddp", "zero1", "zero2", "zero3", "hybrid"})
    for (int variant = 0; variant < 8; ++variant) {
      std::vector<std::string> sets{std::string("fsdp.strategy=") + strategy};
      if (std::string(strategy) == "hybrid") sets.push_back("fsdp.shard_group_size=2");
      const char* path = variant == 7 ? "qwen3_moe_tiny.toml" : "llama_tiny.toml";
      if (variant == 1) sets.push_back("fsdp.prefetch_across_steps=true");
      if (variant == 2) sets.push_back("train.deterministic=true");
      if (variant == 3) sets.push_back("fsdp.offload=optimizer");
      if (variant == 4) sets.push_back("fsdp.offload=params");
      if (variant == 5) {
        sets.push_back("fsdp.offload=nvme");
        sets.push_back("offload.path=/nonexistent");  // the counted run opens no file
      }
      if (variant == 6) {
        sets.push_back("fsdp.mixed_precision=bf16");
        sets.push_back("fsdp.reduce_dtype=bf16");
        sets.push_back("train.optimizer=muon");
      }
      if (variant == 7) sets.push_back("fsdp.expert_parallel=2");
      INFO(strategy << " variant " << variant);
      RunSetup s;
      try {
        s = deck(path, sets);
        s.validate();
      } catch (const std::exception&) {
        continue;  // a combination the trainer refuses
      }
      g_launched.clear();
      g_watching = true;
      const plan::CountedStep c = plan::count_step(s, 1);
      g_watching = false;
      ++planned;
      INFO("first: " << (g_launched.empty() ? std::string() : g_launched.front()));
      CHECK(g_launched.size() == 0);
    }
  Kokkos::Tools::Experimental::set_begin_deep_copy_callback(nullptr);
  // Refused, and only these: offload = params with ddp, zero1 and zero2 (they keep full
  // parameters on the device), and expert parallelism with ddp (a shard dimension of 1).
  CHECK(planned == 40 - 4);
}
