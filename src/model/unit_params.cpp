// SPDX-License-Identifier: MIT
#include "model/unit_params.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace fsdp {

bool is_gemm_weight(const TensorSpec& t) { return t.gemm; }

ParamWidener::ParamWidener(MemoryTracker& tracker, const std::vector<UnitLayout>& units) {
  // The slot holds the longest run of GEMM weights stored next to each other: a model may
  // read such a run as one matrix (Llama's q | k | v and gate | up projections).
  std::int64_t weight = 0, small = 0;
  for (const auto& u : units) {
    std::int64_t unit_small = 0, run = 0;
    for (const auto& t : u.tensors) {
      if (is_gemm_weight(t)) {
        run += t.numel;
        weight = std::max(weight, run);
      } else {
        unit_small += t.numel;
        run = 0;
      }
    }
    small = std::max(small, unit_small);
  }
  slot_ = TrackedBuffer(tracker, "widened::weight_slot", weight, MemCategory::WidenedParams);
  small_ = TrackedBuffer(tracker, "widened::small_tensors", small, MemCategory::WidenedParams);
}

UnitParams UnitParams::from_bf16(ConstBf16Vec unit, const UnitLayout& layout, ParamWidener& w) {
  UnitParams p;
  p.bf16_ = unit;
  p.bind(layout, w);
  return p;
}

UnitParams UnitParams::rounded(ConstVec unit, const UnitLayout& layout, ParamWidener& w) {
  UnitParams p(unit);
  p.bind(layout, w);
  return p;
}

void UnitParams::bind(const UnitLayout& layout, ParamWidener& w) {
  widener_ = &w;
  std::int64_t at = 0;
  for (const auto& t : layout.tensors) {
    if (is_gemm_weight(t)) continue;
    const Vec dst(widener_->small() + at, t.numel);
    if (bf16_.data())
      widen_bf16(ConstBf16Vec(bf16_.data() + t.offset, t.numel), dst);
    else
      round_through_bf16(ConstVec(f32_.data() + t.offset, t.numel), dst);
    small_.push_back({t.offset, t.numel, at});
    at += t.numel;
  }
}

const float* UnitParams::small_at(std::int64_t off, std::int64_t n) const {
  for (const auto& s : small_)
    if (off >= s.offset && off + n <= s.offset + s.numel)
      return widener_->small() + s.at + (off - s.offset);
  fatal("UnitParams: elements [" + std::to_string(off) + ", " + std::to_string(off + n) +
        ") are not inside one non-GEMM tensor of the unit");
}

ConstMat UnitParams::weight(std::int64_t off, std::int64_t rows, std::int64_t cols) const {
  if (!widener_) return ConstMat(f32_.data() + off, rows, cols);
  const std::int64_t n = rows * cols;
  const Vec dst(widener_->slot(), n);
  if (bf16_.data())
    widen_bf16(ConstBf16Vec(bf16_.data() + off, n), dst);
  else
    round_through_bf16(ConstVec(f32_.data() + off, n), dst);
  return ConstMat(widener_->slot(), rows, cols);
}

ConstBf16Mat UnitParams::weight_bf16(std::int64_t off, std::int64_t rows, std::int64_t cols) const {
  if (!widener_) fatal("a bf16 GEMM was handed fp32 parameters (fsdp.gemm_dtype = bf16 needs bf16 units)");
  if (bf16_.data()) return ConstBf16Mat(bf16_.data() + off, rows, cols);
  const std::int64_t n = rows * cols;
  const Bf16Vec dst(reinterpret_cast<std::uint16_t*>(widener_->slot()), n);
  cast_to_bf16(ConstVec(f32_.data() + off, n), dst);
  return ConstBf16Mat(dst.data(), rows, cols);
}

ConstVec UnitParams::vec(std::int64_t off, std::int64_t n) const {
  if (!widener_) return ConstVec(f32_.data() + off, n);
  return ConstVec(small_at(off, n), n);
}

ConstMat UnitParams::table(std::int64_t off, std::int64_t rows, std::int64_t cols) const {
  if (!widener_) return ConstMat(f32_.data() + off, rows, cols);
  return ConstMat(small_at(off, rows * cols), rows, cols);
}

}  // namespace fsdp
