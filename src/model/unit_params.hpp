// SPDX-License-Identifier: MIT
// One unit's parameters as the model's kernels read them. With fp32 they are views straight
// into the unit's flat float buffer. Under fsdp.mixed_precision = bf16 the values are bf16 (a
// gathered bf16 unit, or a float buffer rounded through bf16) and the kernels, whose GEMMs are
// float (Debian's OpenBLAS has no bf16 GEMM), read widened copies: each GEMM weight is widened
// into one shared slot when a kernel asks for it, and the unit's other tensors (biases,
// LayerNorms, position tables) once when the unit is bound. So a widened copy never exceeds one weight
// matrix plus the small tensors, whatever the prefetch depth.
#pragma once
#include <cstdint>
#include <vector>

#include "core/bf16.hpp"
#include "core/memory.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// A tensor the kernels use as a GEMM operand (TensorSpec::gemm, as the architecture lists it).
bool is_gemm_weight(const TensorSpec& t);

// The float scratch that bf16 units are widened into (MemCategory::WidenedParams).
class ParamWidener {
 public:
  ParamWidener(MemoryTracker& tracker, const std::vector<UnitLayout>& units);
  float* slot() const { return slot_.data(); }
  float* small() const { return small_.data(); }

 private:
  TrackedBuffer slot_, small_;
};

class UnitParams {
 public:
  // fp32: no copies. Implicit, so code and tests that hold a float unit pass it as it is.
  UnitParams(ConstVec fp32) : f32_(fp32) {}  // NOLINT(google-explicit-constructor)
  // A bf16 unit (the gathered buffer), widened on use.
  static UnitParams from_bf16(ConstBf16Vec unit, const UnitLayout& layout, ParamWidener& w);
  // A float unit computed with as bf16 (ddp, zero1 and zero2 keep full float parameters).
  static UnitParams rounded(ConstVec unit, const UnitLayout& layout, ParamWidener& w);

  // A GEMM weight at flat offset `off`. Under bf16 it is valid until the next weight() call.
  ConstMat weight(std::int64_t off, std::int64_t rows, std::int64_t cols) const;
  // The same weight as bf16 for a bf16 GEMM (fsdp.gemm_dtype = bf16): the gathered bf16 unit
  // itself, or a float unit's weight cast into the widening slot (valid until the next
  // weight() or weight_bf16() call). Fatal for a plain fp32 unit.
  ConstBf16Mat weight_bf16(std::int64_t off, std::int64_t rows, std::int64_t cols) const;
  // Any other tensor (or a part of one).
  ConstVec vec(std::int64_t off, std::int64_t n) const;
  ConstMat table(std::int64_t off, std::int64_t rows, std::int64_t cols) const;

 private:
  UnitParams() = default;
  void bind(const UnitLayout& layout, ParamWidener& w);
  const float* small_at(std::int64_t off, std::int64_t n) const;

  ConstVec f32_;                     // the float unit (fp32 mode, or the source of `rounded`)
  ConstBf16Vec bf16_;                // the bf16 unit (from_bf16)
  ParamWidener* widener_ = nullptr;  // null: plain fp32
  struct Small {
    std::int64_t offset, numel, at;  // flat offset in the unit, position in the small area
  };
  std::vector<Small> small_;
};

}  // namespace fsdp
