// SPDX-License-Identifier: MIT
#include "model/layers/norm_layer.hpp"

#include "model/layernorm.hpp"
#include "model/rmsnorm.hpp"

namespace fsdp {
namespace k = kernels;

void Norm::forward(const Mat& out, const Vec& mean, const Vec& rstd, const ConstMat& x,
                   const UnitParams& p) const {
  if (kind_ == NormKind::LayerNorm)
    k::layernorm_forward(out, mean, rstd, x, p.vec(w_, C_), p.vec(b_, C_));
  else
    k::rmsnorm_forward(out, rstd, x, p.vec(w_, C_), eps_);
}

void Norm::backward(const Mat& dx, Vec g, const ConstMat& dout, const ConstMat& x,
                    const UnitParams& p, const ConstVec& mean, const ConstVec& rstd) const {
  // Frozen: empty gradient views, which the kernels read as "dx only".
  const Vec dw = frozen_ ? Vec() : Vec(g.data() + w_, std::size_t(C_));
  if (kind_ == NormKind::LayerNorm)
    k::layernorm_backward(dx, dw, frozen_ ? Vec() : Vec(g.data() + b_, std::size_t(C_)), dout, x,
                          p.vec(w_, C_), mean, rstd);
  else
    k::rmsnorm_backward(dx, dw, dout, x, p.vec(w_, C_), rstd);
}

}  // namespace fsdp
