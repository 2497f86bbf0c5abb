// SPDX-License-Identifier: MIT
// Which attention kernel a run uses (model.attention): the materialised reference
// (model/attention.hpp: B*H*T*T probabilities kept per layer) or the fused one
// (model/flash_attention.hpp: B*H*T log-sum-exps). "auto" picks per backend and sequence length,
// from fsdp-bench attention's figures (docs/attention.md).
#pragma once
#include <Kokkos_Macros.hpp>
#include <cstdint>
#include <string>

namespace fsdp {

enum class AttentionPath { Materialized, Fused };

// On a GPU the fused kernel always: the materialised path's T x T squares are what a GPU's
// memory and bandwidth run out of first. On an AVX2 CPU core the materialised path is faster at
// every length measured (fused: 0.77x at T = 256, 0.85-0.90x at 1024 and 4096; a GPT-2 124M step
// at T = 1024, 0.97x): the fused backward recomputes the scores, five tile products per tile
// pair against four. With AVX-512 the fused kernel's own copy is 1.07-1.18x from T = 1024
// (docs/attention.md), but the choice stays the same on every CPU, so that a run's memory and
// its plan do not depend on the machine it lands on. So auto keeps the materialised path while
// the squares are small; from kFusedFromCpu on they are 64 MB per head per layer (9.7 GB for
// GPT-2 124M at B = 1), and soon do not fit at all.
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

namespace kernels {
// Floats of work space the materialised attention_backward needs (model/attention.hpp): one
// head's score gradients on a CPU, a whole sequence's on a GPU (attention_batched.hpp). Here,
// with no kernel, so the planner's counts need no Kokkos kernels.
inline std::int64_t attention_work_size(int T, int H) {
#if defined(KOKKOS_ENABLE_CUDA)
  return std::int64_t(H) * T * T;
#else
  (void)H;
  return std::int64_t(T) * T;
#endif
}
}  // namespace kernels

inline const char* attention_name(AttentionPath p) {
  return p == AttentionPath::Fused ? "fused" : "materialized";
}

}  // namespace fsdp
