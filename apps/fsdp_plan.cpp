// SPDX-License-Identifier: MIT
// fsdp-plan: predicts one rank's memory by category and the step time, tokens/s, MFU and
// scaling efficiency of a run deck on N ranks of a machine, for every sharding strategy side
// by side; and the largest GPT of the family that fits a device budget. No MPI, no GPU.
// Exit codes (core/exit_codes.hpp): 0 done; 2 bad run deck or arguments; 1 any other error.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "config/load_config.hpp"
#include "comm/safety.hpp"
#include "core/check.hpp"
#include "core/faults.hpp"
#include "core/exit_codes.hpp"
#include "plan/machine.hpp"
#include "plan/plan_report.hpp"
#include "plan/published_checks.hpp"

namespace {

using namespace fsdp;
using namespace fsdp::plan;

constexpr int kExitBadConfig = fsdp::exit_code::kBadConfig;
constexpr int kExitError = fsdp::exit_code::kError;

}  // namespace

int main(int argc, char** argv) {
  fsdp::install_terminate_handler("fsdp-plan");
  // Reading the deck is watched: a stuck disk ends with exit 6 (a FIFO is refused at open).
  fsdp::comm::start_watchdog(fsdp::comm::kStartupTimeoutS);
  std::optional<fsdp::comm::Watch> reading(std::in_place, "fsdp-plan: reading the deck");
  fsdp::faults::throw_if_asked("fsdp-plan");
  CLI::App app{
      "fsdp-plan: predicted per-rank memory and step time of a run deck on N ranks, per sharding "
      "strategy; the largest model that fits a device budget"};
  std::string config_path = "inputs/default.toml";
  std::vector<std::string> overrides;
  PlanOptions options;
  bool json = false, published = false;
  app.add_option("--config", config_path, "TOML run deck")->capture_default_str();
  app.add_option("--set", overrides, "override one key, section.key=value (repeatable)");
  app.add_option("--ranks", options.ranks, "ranks (GPUs) in the job")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--nodes", options.nodes, "nodes the ranks are spread over (default: ranks / the machine's GPUs per node)")
      ->check(CLI::PositiveNumber);
  app.add_option("--machine", options.machine, "a100, h100, h200, or a JSON file written by fsdp-bench")
      ->capture_default_str();
  app.add_option("--params", options.params,
                 "replace the deck's model by the family member nearest this many parameters "
                 "(e.g. 7.5e9)");
  app.add_option("--aspect", options.aspect, "family shape: n_embd / n_layer")->capture_default_str();
  app.add_option("--head-dim", options.head_dim, "family shape: n_embd / n_head")->capture_default_str();
  app.add_option("--gemm-efficiency", options.gemm_efficiency,
                 "fraction of the GEMM peak the step achieves (default: the machine's)");
  app.add_flag("--largest-model", options.largest_model, "search the family for the largest model that fits");
  app.add_option("--budget", options.budget,
                 "device bytes per rank (\"80GiB\", \"7.5e10\"; default: memory.device_budget, "
                 "else the machine's memory)");
  app.add_flag("--json", json, "print JSON instead of tables");
  app.add_flag("--published-checks", published,
               "print the planner's numbers for the ZeRO paper's 7.5B memory table and PyTorch "
               "FSDP's GPT-175B throughput (on --machine, default a100), with their assumptions");
  app.footer(
      "Memory is what this trainer allocates (exact for fp32 without offload); time is a model:\n"
      "docs/planner.md lists its equations and assumptions. " +
      fsdp::exit_code::help("fsdp-plan"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadConfig;
  }
  // 0 is the option's "not given"; given, it must be a model.
  if (app.count("--params") > 0 && !(options.params >= 1)) {
    std::fprintf(stderr, "fsdp-plan: --params: expected a parameter count in [1, 2^50], got %g\n",
                 options.params);
    return kExitBadConfig;
  }

  if (published) {
    try {
      std::printf("%s", published_checks_report(load_machine(options.machine)).c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fsdp-plan: %s\n", fsdp::one_line(e.what()).c_str());
      return kExitError;
    }
    return 0;
  }

  RunConfig cfg;
  try {
    cfg = load_config(config_path, overrides);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "fsdp-plan: %s\n", fsdp::one_line(e.what()).c_str());
    return kExitBadConfig;
  }
  reading.reset();  // a --largest-model search may take longer than start-up's timeout

  try {
    fsdp::plan::print_plan(cfg, options, json);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "fsdp-plan: %s\n", fsdp::one_line(e.what()).c_str());
    return kExitBadConfig;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fsdp-plan: %s\n", fsdp::one_line(e.what()).c_str());
    return kExitError;
  }
  return 0;
}
