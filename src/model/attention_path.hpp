// SPDX-License-Identifier: MIT
// Which attention kernel a run uses (model.attention): the materialised reference
// (model/attention.hpp: B*H*T*T probabilities kept per layer) or the fused one
// (model/flash_attention.hpp: B*H*T log-sum-exps). "auto" picks per backend and sequence length,
// from fsdp-bench attention's figures (docs/attention.md).
#pragma once
#include <Kokkos_Macros.hpp>
#include <string>

namespace fsdp {

enum class AttentionPath { Materialized, Fused };

// On a GPU the fused kernel always: the materialised path's T x T squares are what a GPU's
// memory and bandwidth run out of first. On a CPU core the materialised path's BLAS GEMMs are
// faster at every length measured (fused 0.85x at T = 256-2048, 0.88x at 4096: it recomputes
// the scores in backward, and its register-tiled products run below OpenBLAS's), so auto keeps
// it while the squares are small; from kFusedFromCpu on they are 64 MB per head per layer
// (9.7 GB for GPT-2 124M at B = 1), which costs more than the fused kernel's ~12%.
constexpr int kFusedFromCpu = 4096;

inline AttentionPath resolve_attention(const std::string& choice, int T) {
  if (choice == "fused") return AttentionPath::Fused;
  if (choice == "materialized") return AttentionPath::Materialized;
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  (void)T;
  return AttentionPath::Fused;
#else
  return T >= kFusedFromCpu ? AttentionPath::Fused : AttentionPath::Materialized;
#endif
}

inline const char* attention_name(AttentionPath p) {
  return p == AttentionPath::Fused ? "fused" : "materialized";
}

}  // namespace fsdp
