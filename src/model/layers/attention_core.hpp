// SPDX-License-Identifier: MIT
// The attention between a layer's projections: per query head, softmax(q k^T / sqrt(D)) v over
// the keys at or before each row (and within its packed document), reading rows of q | k | v as
// the q|k|v projection writes them (grouped-query heads read in place). Two kernels
// (AttentionPath): the materialised one keeps the probabilities [B*H, T, T] for backward, the
// fused (flash) one the rows' log-sum-exps [B*H, T]; with bf16_qkv the fused kernel reads q, k
// and v as bf16, cast from the projection's fp32 output and kept as bf16 for backward.
// A ring over the context dimension (issue 67) would be another core beside this one.
#pragma once
#include <cstdint>
#include <string>

#include "core/memory.hpp"
#include "model/attention_path.hpp"
#include "model/flash_attention.hpp"
#include "model/layers/layer_flops.hpp"

namespace fsdp {

class AttentionCore {
 public:
  struct Shape {
    int B = 1, T = 1, H = 1, KV = 1, D = 1;  // micro-batch, rows, query and key/value heads, head size
  };
  // Allocates the materialised kernel's backward work space (activations). Under a counting
  // tracker (the planner's counted run, which computes nothing) it plans no flash tiles: a GPU's
  // plan asks the device for its shared memory, and fsdp-plan runs where there is no device; the
  // tiles size no buffer, so the count is the same.
  AttentionCore(Shape s, AttentionPath path, bool bf16_qkv, MemoryTracker& tracker,
                const std::string& tag);

  AttentionPath path() const { return path_; }
  bool bf16_qkv() const { return bf16_qkv_; }
  // What a layer keeps for backward besides q | k | v: elements of the probabilities or of the
  // log-sum-exps, and the dtype q | k | v are kept in.
  std::int64_t saved_elements() const;
  Dtype kept_qkv_dtype() const { return bf16_qkv_ ? Dtype::BF16 : Dtype::F32; }

  // out [B*T, H*D] from the projection's rows qkv32 [B*T, (H + 2 KV) D]; kept: the layer's q | k
  // | v for backward (qkv32 itself unless bf16_qkv: then its bf16 cast, written here); saved:
  // saved_elements() floats. doc_starts: packed documents, or null.
  void forward(const TrackedBuffer& qkv32, const TrackedBuffer& kept, float* saved, float* out,
               const int* doc_starts) const;
  // dqkv [B*T, (H + 2 KV) D] assigned, from the kept rows, the forward's out and saved, and dout.
  void backward(const TrackedBuffer& kept, const float* saved, const float* out, const float* dout,
                float* dqkv, const int* doc_starts) const;
  // Model FLOPs of `rows` rows: q k^T and the weighted sum of v, 2 T H D each forward (the
  // convention's 12 L T C per token with backward: PaLM's appendix B).
  LayerFlops flops(std::int64_t rows) const;

 private:
  Shape s_;
  AttentionPath path_;
  bool bf16_qkv_;
  kernels::FlashPlan flash_;
  TrackedBuffer work_;  // the materialised kernel's backward work space
};

}  // namespace fsdp
