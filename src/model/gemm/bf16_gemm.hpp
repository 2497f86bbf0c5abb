// SPDX-License-Identifier: MIT
// GEMMs with bf16 inputs and fp32 products, accumulation and output (fsdp.gemm_dtype = bf16):
// cuBLAS's tensor-core GEMM on GPUs; oneDNN's matmul on CPUs that have bf16 kernels (AMX,
// AVX512-BF16). Elsewhere the same call widens both inputs to fp32 and runs the fp32 GEMM: the
// same arithmetic (a product of two bf16 values is exact in fp32) in another summation order,
// and no speed-up.
//
// Bf16Gemms is what the model's linear layers and tied LM head call in that mode: weights come
// as bf16 (the gathered bf16 unit itself, no widening), activations and their gradients are
// cast into two scratch matrices as each GEMM reads them; LayerNorm, softmax, GELU, the loss and
// the bias sums stay fp32.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/memory.hpp"
#include "core/types.hpp"
#include "model/gemm/gemm_rows.hpp"

namespace fsdp::kernels {

// C = alpha * op(A) * op(B) + beta * C on row-major views, 'N' or 'T' per operand.
// `rows` says whether A's token rows keep their count from call to call (model/gemm/gemm_rows.hpp).
void gemm_bf16(const char* ta, const char* tb, float alpha, const ConstBf16Mat& a,
               const ConstBf16Mat& b, float beta, const Mat& c, GemmRows rows = GemmRows::Fixed);
// Which implementation gemm_bf16 runs here, for the start-up log.
std::string gemm_bf16_path();
// Whether gemm_bf16 computes in bf16 here (tensor cores, or oneDNN's bf16 kernels) rather than
// widening: what fsdp.gemm_dtype = auto chooses by.
bool gemm_bf16_computes();

// The elements of each cast scratch matrix for a model with B*T rows, C channels and V tokens
// (the planner counts the same): the largest linear operand (B*T x 4C), or the head's backward
// chunk of dlogits, at least 512 rows (all of them below that) so its GEMMs keep a full M and K.
inline std::int64_t bf16_gemm_scratch_elements(std::int64_t BT, std::int64_t C, std::int64_t V) {
  return std::max(BT * 4 * C, V * std::min<std::int64_t>(BT, 512));
}

class Bf16Gemms {
 public:
  // `elements`: the largest activation a linear layer reads or writes (B*T x 4C).
  Bf16Gemms(MemoryTracker& tracker, std::int64_t elements);

  // out = inp @ w + beta * out (beta = 1 after linear_bias_init).
  void forward(const Mat& out, const ConstMat& inp, const ConstBf16Mat& w, float beta);
  // dinp = dout @ w^T; dw += inp^T @ dout (skipped for an empty dw: a frozen weight).
  void backward(const Mat& dinp, const Mat& dw, const ConstMat& dout, const ConstMat& inp,
                const ConstBf16Mat& w);
  // The LM head, emb [V, C] (the token embedding when tied): logits = x @ emb^T, and backward
  // dx = dlogits @ emb, demb += dlogits^T @ x (none for an empty demb), in row chunks whose cast fits the scratch
  // (dlogits is B*T x V). The experts call these too, with their weights [out, in] and
  // `row_kind` = Ragged: each takes however many tokens the router sent it.
  void head_forward(const Mat& logits, const ConstMat& x, const ConstBf16Mat& emb,
                    GemmRows row_kind = GemmRows::Fixed);
  void head_backward(const Mat& dx, const Mat& demb, const ConstMat& dlogits, const ConstMat& x,
                     const ConstBf16Mat& emb, GemmRows row_kind = GemmRows::Fixed);

 private:
  ConstBf16Mat cast(const TrackedBuffer& into, const float* rows, std::int64_t n, std::int64_t cols);
  TrackedBuffer first_, second_;
  std::int64_t elements_;
};

}  // namespace fsdp::kernels
