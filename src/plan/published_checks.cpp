// SPDX-License-Identifier: MIT
#include "plan/published_checks.hpp"

#include <cstdio>

namespace fsdp::plan {

std::vector<ZeroPaperRow> zero_paper_check() {
  const double psi = 7.5e9;
  const int n = 64;
  std::vector<ZeroPaperRow> rows;
  const std::pair<Strategy, double> paper[] = {{Strategy::DDP, 120.0},
                                               {Strategy::Zero1, 31.4},
                                               {Strategy::Zero2, 16.6},
                                               {Strategy::Zero3, 1.9}};
  for (const auto& [s, gb] : paper)
    rows.push_back({s, zero_model_state_bytes(psi, n, s, paper_mixed_precision()) / 1e9, gb});
  return rows;
}

ModelConfig gpt3_175b_shape() {
  ModelConfig s;
  s.n_layer = 96;
  s.n_head = 96;
  s.n_embd = 12288;
  s.vocab_size = 50257;
  s.block_size = 2048;
  return s;
}

Setup fsdp_paper_setup(int gpus, int batch_per_gpu) {
  Setup s;
  s.model = gpt3_175b_shape();
  s.strategy = Strategy::Zero3;  // FULL_SHARD
  s.ranks = gpus;
  s.nodes = (gpus + 7) / 8;
  s.prefetch = 1;
  s.precision = Precision::BF16;
  s.bf16_gemms = true;  // the paper's GEMMs ran on the A100s' bf16 tensor cores
  s.reduce_bf16 = true;
  s.choices.checkpoint_blocks = true;
  s.micro_batch = batch_per_gpu;
  s.batch_size = gpus * batch_per_gpu;
  return s;
}

std::vector<std::string> fsdp_paper_assumptions() {
  return {"GPT-175B: 96 layers, 12288 channels, 96 heads, vocabulary 50257, sequence length 2048",
          "FULL_SHARD (zero3), prefetch 1, bf16 parameters, activations and gradient reduction; "
          "fp32 master weights and AdamW moments",
          "activation checkpointing of every block; one micro-batch of 1 or 2 sequences per GPU "
          "per step",
          "A100-80GB, 8 per node: GEMMs at 60% of the 312 TFLOPS bf16 peak, NVLink busbw 240 "
          "GB/s, 8x HDR 200 Gb/s per node (busbw 180 GB/s)",
          "TFLOPS per GPU count the recomputed forward (8P + 16LTC per token), as hardware "
          "throughput; MFU counts 6P + 12LTC"};
}

std::vector<FsdpPaperRow> fsdp_paper_check(const Machine& machine) {
  std::vector<FsdpPaperRow> rows;
  for (int batch : {1, 2})
    for (int gpus : {128, 256, 512}) {
      const Setup s = fsdp_paper_setup(gpus, batch);
      const double paper = gpus == 512 ? (batch == 1 ? 173.0 : 186.0) : 0.0;
      rows.push_back({gpus, batch, paper, plan_memory(s), plan_time(s, machine)});
    }
  return rows;
}

std::string published_checks_report(const Machine& machine) {
  std::string out;
  char buf[256];
  out += "ZeRO (Rajbhandari et al. 2020): 7.5B parameters on 64 GPUs, mixed-precision Adam "
         "(2 + 2 + K bytes, K = 12), model states per GPU\n";
  std::snprintf(buf, sizeof buf, "  %-8s %12s %12s\n", "strategy", "planned GB", "paper GB");
  out += buf;
  for (const auto& r : zero_paper_check()) {
    std::snprintf(buf, sizeof buf, "  %-8s %12.3f %12.1f\n", strategy_name(r.strategy),
                  r.planned_gb, r.paper_gb);
    out += buf;
  }
  out += "\nPyTorch FSDP (Zhao et al. 2023): GPT-175B, FULL_SHARD, on machine " + machine.name + "\n";
  std::snprintf(buf, sizeof buf, "  %5s %6s %9s %10s %10s %9s %7s %8s %11s %9s\n", "GPUs", "batch",
                "step s", "exposed s", "tok/s/GPU", "TFLOPS", "MFU", "paper", "device GB", "eff");
  out += buf;
  for (const auto& r : fsdp_paper_check(machine)) {
    const std::string paper = r.paper_tflops > 0 ? std::to_string(int(r.paper_tflops)) : "-";
    std::snprintf(buf, sizeof buf, "  %5d %6d %9.3f %10.4f %10.2f %9.1f %6.1f%% %8s %11.1f %9.3f\n",
                  r.gpus, r.batch_per_gpu, r.time.step_s, r.time.comm_exposed_s,
                  r.time.tokens_per_s_per_rank, r.time.hardware_tflops_per_rank,
                  100 * r.time.mfu, paper.c_str(), r.memory.device_total() / 1e9,
                  r.time.scaling_efficiency);
    out += buf;
  }
  out += "  assumptions:\n";
  for (const auto& a : fsdp_paper_assumptions()) out += "    - " + a + "\n";
  return out;
}

}  // namespace fsdp::plan
