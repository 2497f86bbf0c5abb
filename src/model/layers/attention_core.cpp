// SPDX-License-Identifier: MIT
#include "model/layers/attention_core.hpp"

#include "core/bf16.hpp"
#include "model/attention.hpp"

namespace fsdp {
namespace k = kernels;

AttentionCore::AttentionCore(Shape s, AttentionPath path, bool bf16_qkv, MemoryTracker& tracker,
                             const std::string& tag)
    : s_(s),
      path_(path),
      bf16_qkv_(bf16_qkv && path == AttentionPath::Fused),
      flash_(tracker.counting() ? k::FlashPlan{} : k::flash_plan(s.D)) {
  if (path_ == AttentionPath::Materialized)
    work_ = TrackedBuffer(tracker, tag + "::att_work", k::attention_work_size(s.T, s.H),
                          MemCategory::Activations, MemSpace::Device);
}

std::int64_t AttentionCore::saved_elements() const {
  return std::int64_t(s_.B) * s_.T * s_.H * (path_ == AttentionPath::Fused ? 1 : s_.T);
}

void AttentionCore::forward(const TrackedBuffer& qkv32, const TrackedBuffer& kept, float* saved,
                            float* out, const int* doc_starts) const {
  const k::AttnDims dims{s_.B, s_.T, s_.H, s_.KV, s_.D, doc_starts};
  const std::int64_t QW = std::int64_t(s_.H) * s_.D, kv = std::int64_t(s_.KV) * s_.D;
  const std::int64_t QKV = QW + 2 * kv, BT = std::int64_t(s_.B) * s_.T;
  const k::HeadRows rows_out{out, QW};
  if (bf16_qkv_) {
    cast_to_bf16(qkv32.cvec(), kept.bf16());
    const std::uint16_t* q = kept.bf16().data();
    k::flash_attention_forward(dims, k::QkvRows<std::uint16_t>{q, q + QW, q + QW + kv, QKV, QKV, QKV},
                               rows_out, saved, flash_);
  } else if (path_ == AttentionPath::Fused) {
    const float* q = kept.data();
    k::flash_attention_forward(dims, k::QkvRows<float>{q, q + QW, q + QW + kv, QKV, QKV, QKV},
                               rows_out, saved, flash_);
  } else {
    k::attention_forward(Mat(out, BT, QW), Att3(saved, std::int64_t(s_.B) * s_.H, s_.T, s_.T),
                         ConstMat(kept.data(), BT, QKV), s_.B, s_.T, s_.H, s_.KV, doc_starts);
  }
}

void AttentionCore::backward(const TrackedBuffer& kept, const float* saved, const float* out,
                             const float* dout, float* dqkv, const int* doc_starts) const {
  const k::AttnDims dims{s_.B, s_.T, s_.H, s_.KV, s_.D, doc_starts};
  const std::int64_t QW = std::int64_t(s_.H) * s_.D, kv = std::int64_t(s_.KV) * s_.D;
  const std::int64_t QKV = QW + 2 * kv, BT = std::int64_t(s_.B) * s_.T;
  const k::QkvGrads grads{dqkv, dqkv + QW, dqkv + QW + kv, QKV, QKV, QKV};
  const k::ConstHeadRows o{out, QW}, d{dout, QW};
  if (bf16_qkv_) {
    const std::uint16_t* q = kept.bf16().data();
    k::flash_attention_backward(dims, k::QkvRows<std::uint16_t>{q, q + QW, q + QW + kv, QKV, QKV, QKV},
                                o, d, saved, grads, flash_);
  } else if (path_ == AttentionPath::Fused) {
    const float* q = kept.data();
    k::flash_attention_backward(dims, k::QkvRows<float>{q, q + QW, q + QW + kv, QKV, QKV, QKV}, o, d,
                                saved, grads, flash_);
  } else {
    k::attention_backward(Mat(dqkv, BT, QKV), ConstMat(dout, BT, QW),
                          ConstAtt3(saved, std::int64_t(s_.B) * s_.H, s_.T, s_.T),
                          ConstMat(kept.data(), BT, QKV), s_.B, s_.T, s_.H, s_.KV, work_.vec(),
                          doc_starts);
  }
}

LayerFlops AttentionCore::flops(std::int64_t rows) const {
  const double f = 4.0 * double(s_.T) * s_.H * s_.D * double(rows);
  return {f, 2.0 * f};
}

}  // namespace fsdp
