// SPDX-License-Identifier: MIT
// What a layer declares it computes: model FLOPs of one call over `rows` token rows, forward
// and backward. The counts follow the convention of MFU (PaLM's appendix B, as fsdp-train and
// the planner report it): 2 FLOPs per parameter per row for a forward product, twice that for
// backward (the input's gradient and the parameter's), recompute not included (the caller
// adds a forward where it recomputes).
#pragma once

namespace fsdp {

struct LayerFlops {
  double forward = 0.0;
  double backward = 0.0;
  LayerFlops& operator+=(const LayerFlops& o) {
    forward += o.forward;
    backward += o.backward;
    return *this;
  }
};

// A layer whose parameters are all multiplied with every row: 2 n rows forward, twice that back.
inline LayerFlops param_flops(double params, double rows) {
  const double f = 2.0 * params * rows;
  return {f, 2.0 * f};
}

// The same layer frozen (an adapter run's base): backward computes the input's gradient alone.
inline LayerFlops frozen_flops(double params, double rows) {
  const double f = 2.0 * params * rows;
  return {f, f};
}

}  // namespace fsdp
