// SPDX-License-Identifier: MIT
// Expert parallelism (fsdp.expert_parallel = P > 1): P consecutive ranks of a shard group share
// each sparse layer's experts, rank j of the group computing experts [j E/P, (j+1) E/P) for
// the tokens of all P. Around the grouped GEMMs of model/experts/experts.hpp:
//  forward:  counts (each rank tells each peer how many of its rows go to each of the peer's
//            experts), the rows (an all-to-all-v: the plan already groups them by expert, so a
//            peer's rows are one contiguous block), the experts, the outputs back (the inverse
//            all-to-all-v, into the rows the plan expects);
//  backward: the outputs' gradients out, the experts' backward, the inputs' gradients back.
// A rank's own rows for its own experts never travel: the exchanges leave this rank's block out,
// and the experts run on those rows in place (forward: from the plan's rows into its outputs;
// backward: the gradients in place) while the peers' rows are in flight, so the wait for the
// slowest peer overlaps 1/P of the expert work. The trace draws each exchange from issue to
// completion; the step's exchange time counts only the waits.
// Each source's rows stay a GEMM of their own ("virtual expert" s E/P + e): the GEMMs are those
// of P = 1, row for row, so outputs and input gradients have the same bits at any P. The
// weights' gradients accumulate over the sources on the expert's rank (this rank's own rows
// first, then the peers' in rank order), which the shard group's reduction then sums as any
// other gradient; in deterministic mode (ExpertSpec::grads_home) each source's weight gradients
// are computed into zeros and sent home instead, so each micro-batch's gradient is whole on the
// rank that ran it and fsdp/deterministic.cpp's tree sums it as at P = 1 (the price: one
// all-to-all of the layer's expert gradients per micro-batch).
// With bf16 GEMMs (kernels::bf16_dispatch) the two dispatches move the rows as bf16, cast as the
// GEMMs would cast them and widened on arrival (exactly): half the bytes, the same bits; the
// returns stay fp32 (GEMM outputs, which nothing rounds).
// Activation checkpointing recomputes a layer's forward inside backward, so the forward's two
// exchanges run again there (three round trips per layer and micro-batch instead of two).
#include <stdexcept>
#include <string>

#include "comm/communicator.hpp"
#include "core/bf16.hpp"
#include "core/clock.hpp"
#include "model/decoder/buffer_views.hpp"
#include "model/decoder/skeleton.hpp"
#include "model/experts/capacity.hpp"

namespace fsdp {
namespace k = kernels;
using namespace skeleton_views;

namespace {

// Virtual expert v (source v / El, local expert v % El) as the model's expert first + v % El.
k::ExpertLinear on_local(const k::ExpertLinear& lin, int first, int El) {
  k::ExpertLinear out;
  out.forward = [lin, first, El](int v, int which, const Mat& y, const ConstMat& x) {
    lin.forward(first + v % El, which, y, x);
  };
  out.backward = [lin, first, El](int v, int which, const Mat& dx, const ConstMat& dy, const ConstMat& x) {
    lin.backward(first + v % El, which, dx, dy, x);
  };
  return out;
}

// dst += src elementwise. A free function: nvcc refuses an extended device lambda whose
// enclosing function is a private member (docs/gpu.md), as experts_backward_ep is.
void add_into(const Vec& dst, const ConstVec& src) {
  Kokkos::parallel_for("moe_ep::grads_home", Kokkos::RangePolicy<ExecSpace>(0, dst.extent(0)),
                       KOKKOS_LAMBDA(const std::int64_t q) { dst(q) += src(q); });
}

Mat rows_of(const TrackedBuffer& b, std::int64_t first, std::int64_t n, std::int64_t cols) {
  return Mat(b.data() + first * cols, n, cols);
}

// Source s's local experts' row offsets in the received layout, counted from its first row.
std::vector<std::int64_t> source_offsets(const std::vector<std::int64_t>& voff, int s, int El) {
  std::vector<std::int64_t> off(std::size_t(El) + 1);
  for (int i = 0; i <= El; ++i) off[std::size_t(i)] = voff[std::size_t(s * El + i)] - voff[std::size_t(s * El)];
  return off;
}

}  // namespace

void DecoderSkeleton::set_expert_group(comm::Communicator* group) {
  const ExpertSpec& x = s_.moe;
  if (x.P <= 1) return;
  if (group && group->size() != x.P)
    throw std::invalid_argument("fsdp.expert_parallel = " + std::to_string(x.P) +
                                ": the model needs an expert group of that many ranks (got " +
                                (group ? std::to_string(group->size()) : std::string("none")) + ")");
  ep_ = group;
}

void DecoderSkeleton::exchange(const char* what, const ConstVec& send, const comm::PeerBlocks& sb,
                               const Vec& recv, const comm::PeerBlocks& rb) {
  ExecSpace().fence();  // the rows are written by kernels: complete before they move
  const double t0 = now_s();
  ep_->all_to_all_v(send, sb, recv, rb);
  const double t1 = now_s();
  exchanges_.push_back({t0, t1, t1 - t0, std::int64_t(sizeof(float)) * sb.total(), what});
}

comm::Handle DecoderSkeleton::start_exchange(const ConstVec& send, const comm::PeerBlocks& sb,
                                             const Vec& recv, const comm::PeerBlocks& rb, double& t0) {
  ExecSpace().fence();
  t0 = now_s();
  return ep_->iall_to_all_v(send, sb, recv, rb);
}

void DecoderSkeleton::finish_exchange(const char* what, comm::Handle& h, double t0, std::int64_t bytes) {
  const double w0 = now_s();
  h.wait();
  const double t1 = now_s();
  exchanges_.push_back({t0, t1, t1 - w0, bytes, what});
}

comm::Handle DecoderSkeleton::start_dispatch(const TrackedBuffer& src, std::int64_t rows, const MoeActivations& e,
                                             const TrackedBuffer& dst, std::int64_t got, double& t0) {
  const std::int64_t C = C_;
  if (!moe_send_bf16_.size())
    return start_exchange(ConstVec(src.data(), std::size_t(rows * C)), e.send,
                          Vec(dst.data(), std::size_t(got * C)), e.recv, t0);
  // bf16 GEMMs: the rows as the GEMMs will read them (kernels::bf16_dispatch), only the peers'.
  const Bf16Vec send = moe_send_bf16_.bf16();
  for (std::size_t d = 0; d < e.send.counts.size(); ++d) {
    const std::int64_t at = e.send.displs[d], n = e.send.counts[d];
    if (n > 0) cast_to_bf16(ConstVec(src.data() + at, std::size_t(n)), Bf16Vec(send.data() + at, std::size_t(n)));
  }
  ExecSpace().fence();
  t0 = now_s();
  return ep_->iall_to_all_v(ConstBf16Vec(send.data(), std::size_t(rows * C)), e.send,
                            Bf16Vec(moe_recv_bf16_.bf16().data(), std::size_t(got * C)), e.recv);
}

void DecoderSkeleton::finish_dispatch(const char* what, comm::Handle& h, double t0, const MoeActivations& e,
                                      const TrackedBuffer& dst) {
  const bool b16 = moe_send_bf16_.size() > 0;
  finish_exchange(what, h, t0, std::int64_t(b16 ? sizeof(std::uint16_t) : sizeof(float)) * e.send.total());
  if (!b16) return;
  const Bf16Vec recv = moe_recv_bf16_.bf16();
  for (std::size_t d = 0; d < e.recv.counts.size(); ++d) {  // exact: bf16 widens to fp32 losslessly
    const std::int64_t at = e.recv.displs[d], n = e.recv.counts[d];
    if (n > 0) widen_bf16(ConstBf16Vec(recv.data() + at, std::size_t(n)), Vec(dst.data() + at, std::size_t(n)));
  }
}

void DecoderSkeleton::experts_forward_ep(const UnitParams& p, const ExpertOffsets& o, MoeActivations& e) {
  const ExpertSpec& x = s_.moe;
  if (!ep_)
    throw std::logic_error("fsdp.expert_parallel = " + std::to_string(x.P) +
                           ": a model built without its expert group (ParallelContext::experts)");
  const int P = x.P, El = x.E / P, j = ep_->rank(), C = C_, F = x.F;
  const k::DispatchPlan& plan = e.plan;
  // Counts: El per peer, as floats (exact: a micro-batch's rows per expert are far below 2^24).
  std::vector<float> mine(std::size_t(x.E)), theirs(std::size_t(x.E));
  for (int v = 0; v < x.E; ++v) mine[std::size_t(v)] = float(plan.counts[std::size_t(v)]);
  const Vec cnt_send(moe_cnt_.data(), std::size_t(x.E)), cnt_recv(moe_cnt_.data() + x.E, std::size_t(x.E));
  Kokkos::deep_copy(cnt_send, HostConstVec(mine.data(), mine.size()));
  const double t0 = now_s();
  ep_->all_to_all(cnt_send, cnt_recv);
  const double t1 = now_s();
  exchanges_.push_back({t0, t1, t1 - t0, std::int64_t(sizeof(float)) * (x.E - El), "expert counts"});
  Kokkos::deep_copy(HostVec(theirs.data(), theirs.size()), cnt_recv);
  // Received layout: source d's rows for local expert i at voff[d El + i] (this rank's own
  // block too, where only its activations live); the exchanges' blocks leave this rank out.
  std::vector<std::int64_t> sc(static_cast<std::size_t>(P), 0), rc(sc), sd(sc), rd(sc);
  e.voff.assign(std::size_t(x.E) + 1, 0);
  for (int d = 0; d < P; ++d) {
    sd[std::size_t(d)] = plan.offsets[std::size_t(d * El)] * C;
    sc[std::size_t(d)] = (plan.offsets[std::size_t((d + 1) * El)] - plan.offsets[std::size_t(d * El)]) * C;
    rd[std::size_t(d)] = e.voff[std::size_t(d * El)] * C;
    for (int i = 0; i < El; ++i) {
      const std::size_t v = std::size_t(d * El + i);
      e.voff[v + 1] = e.voff[v] + std::int64_t(theirs[v]);
      rc[std::size_t(d)] += std::int64_t(theirs[v]) * C;
    }
  }
  sc[std::size_t(j)] = rc[std::size_t(j)] = 0;
  e.send = comm::PeerBlocks{sc, sd};
  e.recv = comm::PeerBlocks{rc, rd};
  const std::int64_t rows = plan.rows(), got = e.voff.back();
  if (got * C > std::int64_t(moe_yr_.size()))  // received_rows_bound is a bound: a bug otherwise
    throw std::logic_error("expert parallelism: " + std::to_string(got) + " rows received, buffers for " +
                           std::to_string(std::int64_t(moe_yr_.size()) / C));
  const k::ExpertLinear lin = on_local(expert_linear(p, o, Vec()), j * El, El);
  double issued = 0.0;
  comm::Handle h = start_dispatch(e.xe, rows, e, e.xr, got, issued);
  // This rank's rows meanwhile: from the plan's rows straight into its outputs.
  const std::int64_t s0 = plan.offsets[std::size_t(j * El)], r0 = e.voff[std::size_t(j * El)];
  const std::int64_t n0 = e.voff[std::size_t((j + 1) * El)] - r0;
  k::experts_forward(rows_of(e.ye, s0, n0, C), rows_of(e.gu, r0, n0, 2 * F), rows_of(e.h, r0, n0, F),
                     rows_of(e.xe, s0, n0, C), source_offsets(e.voff, j, El), lin);
  finish_dispatch("expert dispatch", h, issued, e, e.xr);
  for (int s = 0; s < P; ++s) {
    if (s == j) continue;
    const std::int64_t a = e.voff[std::size_t(s * El)], n = e.voff[std::size_t((s + 1) * El)] - a;
    k::experts_forward(rows_of(moe_yr_, a, n, C), rows_of(e.gu, a, n, 2 * F), rows_of(e.h, a, n, F),
                       rows_of(e.xr, a, n, C), source_offsets(e.voff, s, El), lin);
  }
  exchange("expert combine", ConstVec(moe_yr_.data(), std::size_t(got * C)), e.recv,
           Vec(e.ye.data(), std::size_t(rows * C)), e.send);
}

void DecoderSkeleton::experts_backward_ep(const UnitParams& p, const ExpertOffsets& o, MoeActivations& e,
                                          Vec g) {
  const ExpertSpec& x = s_.moe;
  const int P = x.P, El = x.E / P, j = ep_->rank(), C = C_, F = x.F;
  const std::int64_t rows = e.plan.rows(), got = e.voff.back();
  const std::int64_t X = 3 * std::int64_t(F) * C;
  // Source s's rows: on this rank's own, the plan's rows (the gradients in moe_dye_, replaced in
  // place by the inputs' gradients); on a peer's, the received ones (in moe_yr_, likewise).
  // grads_home: source s's weight gradients into block s of the send buffer, from zeros: expert
  // j El + i's gate|up at (s El + i) X, its down 2FC further.
  if (x.grads_home) Kokkos::deep_copy(moe_gsend_.vec(), 0.f);
  auto backward_of = [&](int s) {
    const std::int64_t a = e.voff[std::size_t(s * El)], n = e.voff[std::size_t((s + 1) * El)] - a;
    const std::int64_t b = s == j ? e.plan.offsets[std::size_t(j * El)] : a;
    const TrackedBuffer& dy = s == j ? moe_dye_ : moe_yr_;
    const TrackedBuffer& xin = s == j ? e.xe : e.xr;
    k::ExpertLinear lin;
    ExpertOffsets home;  // lin keeps a pointer to it
    if (!x.grads_home) {
      lin = on_local(expert_linear(p, o, g), j * El, El);
    } else {
      home.gate_up.assign(std::size_t(x.E), -1);
      home.down.assign(std::size_t(x.E), -1);
      for (int i = 0; i < El; ++i) {
        home.gate_up[std::size_t(j * El + i)] = (std::int64_t(s) * El + i) * X;
        home.down[std::size_t(j * El + i)] = (std::int64_t(s) * El + i) * X + 2 * std::int64_t(F) * C;
      }
      lin = on_local(expert_linear(p, o, moe_gsend_.vec(), &home), j * El, El);
    }
    // d x overwrites d y in place (experts_backward reads an expert's rows before writing them).
    k::experts_backward(rows_of(dy, b, n, C), rows_of(moe_dgu_, a, n, 2 * F), rows_of(moe_dh_, a, n, F),
                        rows_of(dy, b, n, C), rows_of(xin, b, n, C), rows_of(e.gu, a, n, 2 * F),
                        rows_of(e.h, a, n, F), source_offsets(e.voff, s, El), lin);
  };
  double issued = 0.0;
  comm::Handle h = start_dispatch(moe_dye_, rows, e, moe_yr_, got, issued);
  backward_of(j);
  finish_dispatch("expert dispatch grad", h, issued, e, moe_yr_);
  for (int s = 0; s < P; ++s)
    if (s != j) backward_of(s);
  if (x.grads_home) {
    ExecSpace().fence();
    const double t0 = now_s();
    ep_->all_to_all(moe_gsend_.cvec(), moe_grecv_.vec());
    const double t1 = now_s();
    exchanges_.push_back({t0, t1, t1 - t0, std::int64_t(sizeof(float)) * (P - 1) * El * X, "expert grads home"});
    // Block d holds what rank d computed for this rank's tokens: its experts d El + i. Added into
    // zeros (a deterministic micro-batch's gradient), the bits are those computed there.
    for (int d = 0; d < P; ++d)
      for (int i = 0; i < El; ++i) {
        const int ex = d * El + i;
        const std::int64_t at = (std::int64_t(d) * El + i) * X;
        const ConstVec gu(moe_grecv_.data() + at, std::size_t(2 * F * C));
        const ConstVec down(moe_grecv_.data() + at + 2 * std::int64_t(F) * C, std::size_t(F * C));
        const Vec gg = gv(g, o.gate_up[std::size_t(ex)], 2 * std::int64_t(F) * C);
        const Vec gd = gv(g, o.down[std::size_t(ex)], std::int64_t(F) * C);
        add_into(gg, gu);
        add_into(gd, down);
      }
  }
  exchange("expert combine grad", ConstVec(moe_yr_.data(), std::size_t(got * C)), e.recv,
           Vec(moe_dye_.data(), std::size_t(rows * C)), e.send);
}

}  // namespace fsdp
