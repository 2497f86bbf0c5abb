// SPDX-License-Identifier: MIT
// The two published results the planner is held to (tests/unit/test_plan.cpp,
// docs/planner.md, `fsdp-plan --published-checks`): the ZeRO paper's model-state memory for a
// 7.5B model on 64 GPUs, and PyTorch FSDP's GPT-175B throughput on 128 to 512 A100s.
#pragma once
#include <string>
#include <vector>

#include "plan/machine.hpp"
#include "plan/memory_model.hpp"
#include "plan/time_model.hpp"

namespace fsdp::plan {

// Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models"
// (SC 2020), Figure 1: 7.5B parameters, 64 GPUs, mixed-precision Adam (K = 12).
struct ZeroPaperRow {
  Strategy strategy;
  double planned_gb;  // zero_model_state_bytes in paper mode, GB = 1e9 bytes
  double paper_gb;
};
std::vector<ZeroPaperRow> zero_paper_check();

// Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel" (VLDB 2023):
// GPT-175B with FULL_SHARD reaches 173 (batch 1 per GPU) and 186 (batch 2) TFLOPS per A100.
// The setup the planner assumes for it: sequence length 2048, vocabulary 50257, bf16
// parameters and gradient reduction with fp32 master weights and AdamW state, activation
// checkpointing of every block, prefetch 1, one micro-batch per step, 8 GPUs per node.
ModelConfig gpt3_175b_shape();
Setup fsdp_paper_setup(int gpus, int batch_per_gpu);
std::vector<std::string> fsdp_paper_assumptions();
struct FsdpPaperRow {
  int gpus;
  int batch_per_gpu;
  double paper_tflops;  // 0 where the paper gives no number
  MemoryPlan memory;
  TimePlan time;
};
// 128, 256 and 512 GPUs at batch 1 and 2 per GPU on `machine` (the a100 preset by default).
std::vector<FsdpPaperRow> fsdp_paper_check(const Machine& machine);

// Both checks as the text fsdp-plan --published-checks prints.
std::string published_checks_report(const Machine& machine);

}  // namespace fsdp::plan
