// SPDX-License-Identifier: MIT
// `count` row-major products of one shape whose operands lie at fixed strides (the heads of a
// sequence, side by side in the qkv matrix): one cublasSgemmStridedBatched on a GPU, a loop of
// gemm() calls on a CPU. Attention uses it to treat every head of a sequence in one call.
#pragma once
#include <cstdint>

#include "core/types.hpp"
#include "model/gemm/colmajor_gemm.hpp"

namespace fsdp::kernels {

// C_i = alpha * op(A_i) * op(B_i) + beta * C_i for i < count.
void gemm_strided_batched(const char* ta, const char* tb, float alpha, const Strided& a,
                          const Strided& b, float beta, const Strided& c, int count);

}  // namespace fsdp::kernels
