// SPDX-License-Identifier: MIT
// A norm over the channels of each row: LayerNorm (weight and bias, eps fixed at 1e-5, as
// GPT-2) or RMSNorm (weight only, the architecture's eps), on the tensors at the offsets it was
// built with in the unit's parameters. Forward keeps each row's statistics for backward (mean
// and 1/std, or 1/rms alone); backward assigns dx and accumulates the weight's (and bias's)
// gradient into the unit's gradient buffer.
#pragma once
#include <cstdint>

#include "core/types.hpp"
#include "model/layers/layer_flops.hpp"
#include "model/unit_params.hpp"

namespace fsdp {

enum class NormKind { LayerNorm, RMSNorm };

class Norm {
 public:
  Norm() = default;
  // weight and bias: offsets in the unit (RMSNorm: bias -1). frozen: in a frozen part (an
  // adapter run's base), so backward computes dx alone.
  Norm(NormKind kind, int channels, float eps, std::int64_t weight, std::int64_t bias,
       bool frozen = false)
      : kind_(kind), C_(channels), eps_(eps), w_(weight), b_(bias), frozen_(frozen) {}
  bool layer_norm() const { return kind_ == NormKind::LayerNorm; }

  // mean: unused by RMSNorm (an empty view will do).
  void forward(const Mat& out, const Vec& mean, const Vec& rstd, const ConstMat& x,
               const UnitParams& p) const;
  void backward(const Mat& dx, Vec g, const ConstMat& dout, const ConstMat& x, const UnitParams& p,
                const ConstVec& mean, const ConstVec& rstd) const;
  // As a model FLOP count reads a norm: its parameters times the rows.
  LayerFlops flops(std::int64_t rows) const {
    return param_flops(double(C_) * (b_ >= 0 ? 2 : 1), double(rows));
  }

 private:
  NormKind kind_ = NormKind::RMSNorm;
  int C_ = 0;
  float eps_ = 1e-5f;
  std::int64_t w_ = -1, b_ = -1;
  bool frozen_ = false;
};

}  // namespace fsdp
