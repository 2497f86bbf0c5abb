// SPDX-License-Identifier: MIT
// The skeleton's sparse MLP sub-layer (ExpertSpec): norm, the router in fp32 (its softmax, top-k
// and weights: model/experts/router.hpp), the dispatch plan on the host, the experts' grouped SwiGLU
// GEMMs on their rows (model/experts/experts.hpp), the weighted sum back into each token's row and
// the residual add; backward the transposes, plus the load-balancing loss's gradient through
// each layer's probabilities. N = B*T tokens, R = N*K expert rows (dropless: every token reaches
// its K experts).
#include "model/decoder/buffer_views.hpp"
#include "model/decoder/skeleton.hpp"
#include "model/gemm/bf16_gemm.hpp"
#include "model/gemm/gemm.hpp"
#include "model/experts/capacity.hpp"
#include "model/experts/router.hpp"
#include "model/residual.hpp"

#include <cmath>

namespace fsdp {
namespace k = kernels;
using MC = MemCategory;

using namespace skeleton_views;

namespace {
k::ExpertIds ids(const TrackedBuffer& b, std::int64_t rows, int cols) {
  return k::ExpertIds(reinterpret_cast<std::int32_t*>(b.data()), std::size_t(rows), std::size_t(cols));
}
k::Rows int_rows(const TrackedBuffer& b, std::int64_t at, std::int64_t n) {
  return k::Rows(reinterpret_cast<const std::int32_t*>(b.data()) + at, std::size_t(n));
}
}  // namespace

void DecoderSkeleton::allocate_moe(MemoryTracker& tracker) {
  const ExpertSpec& x = s_.moe;
  const std::int64_t N = std::int64_t(B_) * T_, R = N * x.K, E = x.E, K = x.K, F = x.F;
  // The rows one rank's experts may receive: with expert parallelism every source's R rows at
  // worst (all of P ranks' tokens choosing this rank's experts), bounded by a capacity; the
  // buffers take that worst case.
  const std::int64_t Rx = k::received_rows_bound(R, x.E, x.P, x.capacity_factor);
  const std::string& t = s_.tag;
  auto buf = [&](const std::string& name, std::int64_t n) {
    return TrackedBuffer(tracker, name, n, MC::Activations, MemSpace::Device, Dtype::F32);
  };
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const bool keep = checkpointing_ ? l == 0 : x.sparse_layer(l);
    if (!keep) {
      if (!checkpointing_) moe_.emplace_back();
      continue;
    }
    const std::string p = t + "::layer" + std::to_string(l) + "::moe_";
    auto a = std::make_unique<MoeActivations>();
    a->probs = buf(p + "probs", N * E);
    a->top = buf(p + "top", N * K);  // int32
    a->weights = buf(p + "weights", N * K);
    a->rows = buf(p + "rows", 2 * R);  // int32: row_of, then choice
    a->xe = buf(p + "xe", R * C_);
    a->gu = buf(p + "gate_up", Rx * 2 * F);
    a->h = buf(p + "h", Rx * F);
    a->ye = buf(p + "ye", R * C_);
    if (x.P > 1) a->xr = buf(p + "xr", Rx * C_);
    moe_.push_back(std::move(a));
  }
  router_logits_ = buf(t + "::router_logits", N * E);
  int Ls = 0;
  for (int l = 0; l < cfg_.n_layer; ++l) sparse_index_.push_back(x.sparse_layer(l) ? Ls++ : -1);
  if (x.bias) {
    bias_.assign(std::size_t(Ls) * std::size_t(E), 0.f);
    router_bias_ = buf(t + "::router_bias", Ls * E);
  }
  moe_dropped_.assign(std::size_t(cfg_.n_layer), 0);
  moe_dye_ = buf(t + "::moe_dye", R * C_);
  moe_dgu_ = buf(t + "::moe_dgate_up", Rx * 2 * F);
  moe_dh_ = buf(t + "::moe_dh", Rx * F);
  if (x.P > 1) {
    moe_yr_ = buf(t + "::moe_yr", Rx * C_);
    moe_cnt_ = buf(t + "::moe_counts", 2 * E);
  }
  if (x.grads_home) {  // each expert's gate|up [2F, C] and down [C, F]
    moe_gsend_ = buf(t + "::moe_grads_home", E * 3 * F * C_);
    moe_grecv_ = buf(t + "::moe_grads_away", E * 3 * F * C_);
  }
  moe_dw_ = buf(t + "::moe_dweights", N * K);
  aux_dp_ = buf(t + "::aux_dp", E);
  moe_counts_.assign(std::size_t(cfg_.n_layer), std::vector<std::int64_t>(std::size_t(E), 0));
  moe_psum_.assign(std::size_t(cfg_.n_layer), std::vector<double>(std::size_t(E), 0.0));
}

void DecoderSkeleton::allocate_bf16_dispatch(MemoryTracker& tracker) {
  const ExpertSpec& x = s_.moe;
  if (!k::bf16_dispatch(x.P, C_)) return;
  const std::int64_t R = std::int64_t(B_) * T_ * x.K, Rx = k::received_rows_bound(R, x.E, x.P, x.capacity_factor);
  auto buf = [&](const std::string& name, std::int64_t n) {
    return TrackedBuffer(tracker, name, n, MC::Activations, MemSpace::Device, Dtype::BF16, Fill::None);
  };
  moe_send_bf16_ = buf(s_.tag + "::moe_send_bf16", R * C_);
  moe_recv_bf16_ = buf(s_.tag + "::moe_recv_bf16", Rx * C_);
}

k::ExpertLinear DecoderSkeleton::expert_linear(const UnitParams& p, const ExpertOffsets& o, Vec g,
                                               const ExpertOffsets* grads_at) const {
  const int C = C_, F = s_.moe.F;
  const ExpertOffsets& go = grads_at ? *grads_at : o;
  // Expert e's weight `which` (0: gate|up [2F, C], 1: down [C, F]): offset, rows, columns.
  struct Shape {
    std::int64_t off, out, in;
  };
  const auto at = [&o, C, F](int e, int which) {
    return which == 0 ? Shape{o.gate_up[std::size_t(e)], 2 * F, C} : Shape{o.down[std::size_t(e)], C, F};
  };
  k::Bf16Gemms* bf16 = bf16_.get();
  constexpr k::GemmRows ragged = k::GemmRows::Ragged;  // an expert's rows: its tokens this step
  k::ExpertLinear lin;
  lin.forward = [&p, at, bf16](int e, int which, const Mat& y, const ConstMat& x) {
    const Shape s = at(e, which);
    if (bf16) return bf16->head_forward(y, x, p.weight_bf16(s.off, s.out, s.in), ragged);
    k::gemm("N", "T", 1.f, x, p.weight(s.off, s.out, s.in), 0.f, y);
  };
  lin.backward = [&p, &go, at, bf16, g](int e, int which, const Mat& dx, const ConstMat& dy, const ConstMat& x) {
    const Shape s = at(e, which);
    const Mat dw = gm(g, which == 0 ? go.gate_up[std::size_t(e)] : go.down[std::size_t(e)], s.out, s.in);
    if (bf16) return bf16->head_backward(dx, dw, dy, x, p.weight_bf16(s.off, s.out, s.in), ragged);
    k::gemm("N", "N", 1.f, dy, p.weight(s.off, s.out, s.in), 0.f, dx);
    k::gemm("T", "N", 1.f, dy, x, 1.f, dw);
  };
  return lin;
}

void DecoderSkeleton::moe_compute(int l, const UnitParams& p, const Vec& x_out) {
  const ExpertSpec& x = s_.moe;
  const int N = B_ * T_, C = C_, E = x.E, K = x.K, F = x.F;
  const std::int64_t R = std::int64_t(N) * K;
  const DecoderLayer& d = layers_[std::size_t(l)];
  LayerActivations& a = acts(l);
  MoeActivations& e = moe_acts(l);
  const Vec res2 = res2_of(l);
  d.mlp_norm.forward(m(a.ln2, N, C), a.ln2_mean.vec(), a.ln2_rstd.vec(), ConstMat(res2.data(), N, C), p);
  // The router in fp32 whatever the GEMMs' dtype: its choices must not depend on rounding.
  d.router->forward(m(router_logits_, N, E), cm(a.ln2, N, C), p, nullptr);
  const ConstVec bias = x.bias ? ConstVec(router_bias_.data() + std::int64_t(sparse_index_[std::size_t(l)]) * E,
                                          std::size_t(E))
                               : ConstVec();
  k::router_forward(cm(router_logits_, N, E), m(e.probs, N, E), ids(e.top, N, K), m(e.weights, N, K),
                    x.renorm, bias);
  // The plan on the host (the choices are N*K ints), its two index maps back to the device.
  std::vector<std::int32_t> top(static_cast<std::size_t>(R));
  Kokkos::deep_copy(Kokkos::View<std::int32_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(top.data(), top.size()),
                    k::Rows(reinterpret_cast<const std::int32_t*>(e.top.data()), std::size_t(R)));
  e.plan = k::dispatch_plan(top.data(), N, K, E, k::expert_capacity(R, E, x.capacity_factor));
  moe_dropped_[std::size_t(l)] = e.plan.dropped;
  const std::int64_t rows = e.plan.rows();  // R, less what the capacity dropped
  std::vector<std::int32_t> both(e.plan.row_of);
  both.insert(both.end(), e.plan.choice.begin(), e.plan.choice.end());
  Kokkos::deep_copy(Kokkos::View<std::int32_t*, DeviceSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        reinterpret_cast<std::int32_t*>(e.rows.data()), both.size()),
                    Kokkos::View<const std::int32_t*, HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(both.data(), both.size()));
  std::vector<std::int64_t>& counts = moe_counts_[std::size_t(l)];
  std::vector<double>& psum = moe_psum_[std::size_t(l)];
  std::fill(counts.begin(), counts.end(), 0);
  std::fill(psum.begin(), psum.end(), 0.0);
  k::router_balance_sums(cm(e.probs, N, E), ids(e.top, N, K), counts.data(), psum.data());

  k::moe_gather(m(e.xe, rows, C), cm(a.ln2, N, C), int_rows(e.rows, R, rows), K);
  if (x.P > 1)
    experts_forward_ep(p, d.experts, e);
  else
    k::experts_forward(m(e.ye, rows, C), m(e.gu, rows, 2 * F), m(e.h, rows, F), cm(e.xe, rows, C),
                       e.plan.offsets, expert_linear(p, d.experts, Vec()));
  k::moe_combine(m(tmp_, N, C), cm(e.ye, rows, C), cm(e.weights, N, K), int_rows(e.rows, 0, R));
  k::residual_forward(x_out, ConstVec(res2.data(), res2.extent(0)), tmp_.cvec());
}

void DecoderSkeleton::moe_grads(int l, const UnitParams& p, Vec g) {
  const ExpertSpec& x = s_.moe;
  const int N = B_ * T_, C = C_, E = x.E, K = x.K, F = x.F;
  const std::int64_t R = std::int64_t(N) * K;
  const DecoderLayer& d = layers_[std::size_t(l)];
  LayerActivations& a = acts(l);
  MoeActivations& e = moe_acts(l);
  const Vec res2 = res2_of(l);
  const ConstMat dout(dres_out_.data(), N, C);
  const k::Rows row_of = int_rows(e.rows, 0, R);
  const std::int64_t rows = e.plan.rows();
  k::moe_combine_backward(m(moe_dye_, rows, C), m(moe_dw_, N, K), dout, cm(e.ye, rows, C),
                          cm(e.weights, N, K), row_of);
  // d xe overwrites d ye in place: each expert reads its rows of d ye before it writes them.
  if (x.P > 1)
    experts_backward_ep(p, d.experts, e, g);
  else
    k::experts_backward(m(moe_dye_, rows, C), m(moe_dgu_, rows, 2 * F), m(moe_dh_, rows, F),
                        cm(moe_dye_, rows, C), cm(e.xe, rows, C), cm(e.gu, rows, 2 * F),
                        cm(e.h, rows, F), e.plan.offsets, expert_linear(p, d.experts, g));
  k::moe_gather_backward(m(d_ln_, N, C), cm(moe_dye_, rows, C), row_of, K);
  const Mat dlogits = m(router_logits_, N, E);
  k::router_backward(dlogits, cm(e.probs, N, E), ids(e.top, N, K), cm(e.weights, N, K),
                     cm(moe_dw_, N, K), aux_dp_.cvec(), x.renorm);
  // The router's input gradient adds to the experts' (already in d_ln_).
  d.router->backward_adding(m(d_ln_, N, C), g, dlogits, cm(a.ln2, N, C), p);
  d.mlp_norm.backward(m(d_tmp_, N, C), g, cm(d_ln_, N, C), ConstMat(res2.data(), N, C), p,
                      a.ln2_mean.cvec(), a.ln2_rstd.cvec());
  k::residual_backward(d_tmp_.vec(), ConstVec(dres_out_.data(), dres_out_.extent(0)));  // d res2
}

// The sparse layers' choices per expert and summed probabilities from their last forward,
// together, and the number of (layer, token) pairs they cover.
DecoderSkeleton::BalanceSums DecoderSkeleton::balance_sums() const {
  const ExpertSpec& x = s_.moe;
  BalanceSums b{std::vector<double>(std::size_t(x.E), 0.0), std::vector<double>(std::size_t(x.E), 0.0), 0.0};
  for (int l = 0; l < cfg_.n_layer; ++l) {
    if (!x.sparse_layer(l)) continue;
    b.tokens += double(B_) * T_;
    for (std::size_t e = 0; e < std::size_t(x.E); ++e) {
      b.count[e] += double(moe_counts_[std::size_t(l)][e]);
      b.psum[e] += moe_psum_[std::size_t(l)][e];
    }
  }
  return b;
}

// Hugging Face's load_balancing_loss_func over the sparse layers' tokens together:
// E sum_e f_e P_e with f_e = count_e / n, P_e = psum_e / n (n = sparse layers x N).
double DecoderSkeleton::balance_loss() const {
  const BalanceSums b = balance_sums();
  double loss = 0.0;
  for (std::size_t e = 0; e < b.count.size(); ++e) loss += b.count[e] * b.psum[e];
  return s_.moe.E * loss / (b.tokens * b.tokens);
}

// d(dloss coef loss)/dp_{t,e} = dloss coef E f_e / n, the same for every token of every sparse
// layer (f is a count: no gradient).
void DecoderSkeleton::set_balance_grad(float dloss) {
  const ExpertSpec& x = s_.moe;
  std::vector<float> dp(std::size_t(x.E), 0.f);
  if (x.aux_coef != 0.f) {
    const BalanceSums b = balance_sums();
    for (std::size_t e = 0; e < dp.size(); ++e)
      dp[e] = float(double(dloss) * x.aux_coef * x.E * b.count[e] / (b.tokens * b.tokens));
  }
  Kokkos::deep_copy(aux_dp_.vec(), HostConstVec(dp.data(), dp.size()));
}

std::int64_t DecoderSkeleton::dropped_choices() const {
  std::int64_t n = 0;
  for (std::int64_t d : moe_dropped_) n += d;
  return n;
}

void DecoderSkeleton::set_router_bias(const std::vector<float>& bias) {
  if (bias.size() != bias_.size())
    throw std::invalid_argument("router bias of " + std::to_string(bias.size()) + " values for " +
                                std::to_string(bias_.size()) + " (sparse layers x experts)");
  bias_ = bias;
  if (!bias_.empty()) Kokkos::deep_copy(router_bias_.vec(), HostConstVec(bias_.data(), bias_.size()));
}

// DeepSeek-V3's update: each expert's bias moves by rate toward the mean load (sign only).
void DecoderSkeleton::update_router_bias(const std::vector<double>& counts) {
  if (bias_.empty()) return;
  const std::size_t E = std::size_t(s_.moe.E);
  for (std::size_t l = 0; l * E < bias_.size(); ++l) {
    double mean = 0.0;
    for (std::size_t e = 0; e < E; ++e) mean += counts[l * E + e];
    mean /= double(E);
    for (std::size_t e = 0; e < E; ++e) {
      const double d = mean - counts[l * E + e];
      bias_[l * E + e] += d > 0 ? s_.moe.bias_rate : d < 0 ? -s_.moe.bias_rate : 0.f;
    }
  }
  Kokkos::deep_copy(router_bias_.vec(), HostConstVec(bias_.data(), bias_.size()));
}

std::vector<std::int64_t> DecoderSkeleton::expert_counts() const {
  std::vector<std::int64_t> out;
  for (int l = 0; l < cfg_.n_layer; ++l)
    if (s_.moe.sparse_layer(l))
      out.insert(out.end(), moe_counts_[std::size_t(l)].begin(), moe_counts_[std::size_t(l)].end());
  return out;
}

}  // namespace fsdp
