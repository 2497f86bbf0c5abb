// SPDX-License-Identifier: MIT
// fsdp-plan's report: the predicted per-rank memory and step time of a run deck for every
// sharding strategy, the largest model that fits a budget, as tables or JSON.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace fsdp::plan {

struct PlanOptions {
  std::string machine = "a100";  // a100, h100, h200, or a JSON file written by fsdp-bench
  std::string budget;            // "80GiB", "7.5e10"; "" = memory.device_budget or the machine's
  int ranks = 1, nodes = 0;      // nodes 0: ranks / the machine's GPUs per node
  int head_dim = 128;
  double params = 0.0, aspect = 128.0, gemm_efficiency = 0.0;
  bool largest_model = false;
};

// Prints the report (tables, or JSON with `json`) of deck `cfg`. Throws std::invalid_argument
// for a setup or option that cannot be planned (exit code 2), std::exception otherwise.
void print_plan(const RunConfig& cfg, const PlanOptions& options, bool json);

}  // namespace fsdp::plan
