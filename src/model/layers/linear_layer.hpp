// SPDX-License-Identifier: MIT
// A linear layer of a unit: y[N, out] = x[N, in] W (+ b), on the weight the engine hands over
// in the unit's parameters (UnitParams) at the offsets the layer was built with. LinearLayer is
// what the skeleton calls; each kind of linear is a class beside `Linear` (an adapter on a
// frozen weight, a column- or row-parallel shard) and the skeleton's builder picks it
// (model/decoder/decoder_layer.cpp). The grouped experts are their own kind
// (model/experts/experts.hpp): each expert's rows are a different count each step.
#pragma once
#include <cstdint>

#include "core/types.hpp"
#include "model/layers/layer_flops.hpp"
#include "model/unit_params.hpp"

namespace fsdp {
namespace kernels {
class Bf16Gemms;
}

class LinearLayer {
 public:
  LinearLayer(int in, int out) : in_(in), out_(out) {}
  virtual ~LinearLayer() = default;
  int in() const { return in_; }
  int out() const { return out_; }

  // y = x W for the parameters p, with the bias unless the layer leaves it to its consumer
  // (bias_for_consumer). bf16: the bf16 GEMMs of fsdp.gemm_dtype = bf16, or null for fp32.
  virtual void forward(const Mat& y, const ConstMat& x, const UnitParams& p,
                       kernels::Bf16Gemms* bf16) const = 0;
  // dx = dy W^T (assigned); the parameters' gradients accumulate (+=) into the unit's gradient
  // buffer g at the parameters' offsets.
  virtual void backward(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x,
                        const UnitParams& p, kernels::Bf16Gemms* bf16) const = 0;
  // The bias's offset in the unit when the consumer of y adds it as it reads y (the residual
  // add, the GELU): one pass less over y. -1: none, or forward adds it.
  virtual std::int64_t bias_for_consumer() const { return -1; }
  virtual LayerFlops flops(std::int64_t rows) const = 0;

 private:
  int in_, out_;
};

// A weight of the unit, trained or frozen: stored [in, out] (GPT-2's Conv1D, `input_major`) or [out, in]
// (nn.Linear), with an optional bias [out] (b < 0: none).
class Linear final : public LinearLayer {
 public:
  enum class Bias { InForward, ByConsumer };
  struct Where {
    std::int64_t weight = -1, bias = -1;  // offsets in the unit
    bool input_major = false;
    // In a frozen part (an adapter run's base): backward computes dx alone, no weight-gradient
    // GEMM and no bias sum.
    bool frozen = false;
  };
  Linear(int in, int out, Where at, Bias bias = Bias::InForward);

  void forward(const Mat& y, const ConstMat& x, const UnitParams& p,
               kernels::Bf16Gemms* bf16) const override;
  void backward(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x, const UnitParams& p,
                kernels::Bf16Gemms* bf16) const override;
  // backward with dx += dy W^T where another branch's gradient is already in dx (a router beside
  // its experts): fp32, an [out, in] weight without a bias.
  void backward_adding(const Mat& dx, Vec g, const ConstMat& dy, const ConstMat& x,
                       const UnitParams& p) const;
  std::int64_t bias_for_consumer() const override {
    return bias_ == Bias::ByConsumer ? at_.bias : -1;
  }
  LayerFlops flops(std::int64_t rows) const override;

 private:
  Where at_;
  Bias bias_;
};

}  // namespace fsdp
