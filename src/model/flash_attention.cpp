// SPDX-License-Identifier: MIT
#include "model/flash_attention.hpp"

#include <unistd.h>

#include <algorithm>

namespace fsdp::kernels {

using flash::Member;
using flash::Team;

std::size_t FlashPlan::forward_bytes() const {
  // Q^T, K, V, S^T, the partial output; m, l and the rescale per row.
  return sizeof(float) * (std::size_t(br) * dp * 2 + std::size_t(bc) * dp * 2 +
                          std::size_t(br) * bc + 3 * std::size_t(br));
}

std::size_t FlashPlan::backward_bytes() const {
  // The one-pass kernel's (the most any schedule needs): K^T, K, V^T, dK, dV; Q, dO; P and dS;
  // lse and D_i per row.
  return sizeof(float) * (std::size_t(bc) * dp * 5 + std::size_t(br) * dp * 3 +
                          std::size_t(br) * bc * 2 + 2 * std::size_t(br));
}

namespace {
// This core's L2 in bytes (glibc's sysconf), 512 kB where it does not say.
std::size_t l2_cache_bytes() {
  static const std::size_t bytes = [] {
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long b = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (b > 0) return std::size_t(b);
#endif
    return std::size_t(512) << 10;
  }();
  return bytes;
}
}  // namespace

FlashPlan flash_plan(int D) {
  FlashPlan p;
  p.dp = (D + flash::RN - 1) / flash::RN * flash::RN;
  if (!flash::kDeviceTeams) {
    // A CPU team is one core, and its "scratch" ordinary memory (level 1 has no small limit on
    // a host). The largest square tile up to 64 whose one-pass backward working set fills at
    // most half of this core's L2 (the rest is for the Q, dO and dQ rows streamed past it):
    // 64 x 64 is 160 kB at D = 64, 295 kB at D = 128. 128 x 128 fits a 1 MB L2 at D = 64 but
    // was slower (0.81x the materialised path at T = 1024 against 0.90x): its diagonal tiles
    // compute twice the masked work.
    p.level = 1;
    p.team = 1;
    p.own_dq = true;
    const std::size_t l2 = l2_cache_bytes();
    for (int t : {64, 32, 16}) {
      p.br = p.bc = t;
      if (p.backward_bytes() <= l2 / 2) break;
    }
    return p;
  }
  // A GPU: the largest square tile whose kernels fit the shared memory a team may have.
  p.own_dq = false;
  p.team = 128;
  const std::size_t limit = std::size_t(Team::scratch_size_max(0));
  for (int t : {64, 32, 16}) {
    p.br = p.bc = t;
    if (std::max(p.forward_bytes(), p.backward_bytes()) <= limit) {
      p.level = 0;
      return p;
    }
  }
  p.br = p.bc = 16;  // global-memory scratch: correct, slower
  p.level = 1;
  return p;
}

QkvRows<float> packed_qkv(const ConstMat& qkv) {
  const std::int64_t C3 = std::int64_t(qkv.extent(1)), C = C3 / 3;
  return {qkv.data(), qkv.data() + C, qkv.data() + 2 * C, C3, C3, C3};
}

QkvGrads packed_grads(const Mat& dqkv) {
  const std::int64_t C3 = std::int64_t(dqkv.extent(1)), C = C3 / 3;
  return {dqkv.data(), dqkv.data() + C, dqkv.data() + 2 * C, C3, C3, C3};
}

namespace {
int ceil_div(int a, int b) { return (a + b - 1) / b; }

Team team_policy(int league, const FlashPlan& p, std::size_t bytes) {
  Team policy(league, p.team);
  return policy.set_scratch_size(p.level, Kokkos::PerTeam(bytes));
}

// A backward team's scratch, carved the same way by every kernel (each leaves unused what it
// does not need).
struct Tiles {
  float *Kt, *Ks, *Vt, *dKs, *dVs, *Qs, *dOs, *S, *dP, *L, *Di;
};

// The pieces of a backward tile pair (query tile at q0 of head h, key tile at k0 of its K/V
// head) that both schedules share.
template <class In>
struct Backward {
  AttnDims s;
  QkvRows<In> x;
  ConstHeadRows out, dout;
  const float* lse;
  QkvGrads g;
  int br, bc, dp;
  float scale;

  // Q, dO (as tile operands: copied into Qs and dOs, or in place), lse and
  // D_i = rowsum(dO * O) of query rows [q0, q0 + br) of head h (taken from di_rows, head h's
  // D_i by row, where the team computed them once). Q is not scaled here: the scale goes into
  // P's exponent and dK's store, so an in-place Q needs no copy.
  struct Queries {
    flash::Rows q, dout;
  };
  KOKKOS_INLINE_FUNCTION Queries load_queries(const Member& mb, int b, int h, int q0, float* Qs,
                                              float* dOs, float* L, float* Di,
                                              const float* di_rows = nullptr) const {
    const std::int64_t row0 = std::int64_t(b) * s.T;
    const Queries r{
        flash::stage_rows(mb, Qs, br, dp, x.q + row0 * x.q_stride + h * s.D, x.q_stride, q0, s.T,
                          s.D, 1.f),
        flash::stage_rows(mb, dOs, br, dp, dout.p + row0 * dout.stride + h * s.D, dout.stride, q0,
                          s.T, s.D, 1.f)};
    const float* lrow = lse + (std::int64_t(b) * s.H + h) * s.T;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, br), [&](const int i) {
      const int t = q0 + i;
      if (t >= s.T) {  // padding rows: dO = 0, so they add nothing
        L[i] = 0.f;
        Di[i] = 0.f;
        return;
      }
      const float* o = out.p + (row0 + t) * out.stride + h * s.D;
      const float* dy = dout.p + (row0 + t) * dout.stride + h * s.D;
      L[i] = lrow[t];
      Di[i] = di_rows ? di_rows[t] : kmath::lane_sum(s.D, [&](int d) { return dy[d] * o[d]; });
    });
    return r;
  }

  // K^T, K (scaled, when dQ is wanted) and V^T of key rows [k0, k0 + bc) of K/V head kv.
  KOKKOS_INLINE_FUNCTION void load_keys(const Member& mb, int b, int kv, int k0, float* Kt,
                                        float* Ks, float* Vt) const {
    const std::int64_t row0 = std::int64_t(b) * s.T;
    const In* k = x.k + row0 * x.k_stride + kv * s.D;
    flash::load_rows_transposed(mb, Kt, bc, dp, k, x.k_stride, k0, s.T, s.D);
    if (Ks) flash::load_rows(mb, Ks, bc, dp, k, x.k_stride, k0, s.T, s.D, scale);
    flash::load_rows_transposed(mb, Vt, bc, dp, x.v + row0 * x.v_stride + kv * s.D, x.v_stride,
                                k0, s.T, s.D);
  }

  // S = Q K^T and dP = dO V^T, then S becomes P = e^(scale S - lse) (0 where masked) and dP
  // becomes dS = P * (dP - D_i).
  KOKKOS_INLINE_FUNCTION void scores(const Member& mb, int q0, int k0, const Queries& qs,
                                     const float* Kt, const float* Vt, const float* L,
                                     const float* Di, float* S, float* dP) const {
    flash::tile_product<false, false>(mb, br, bc, dp, qs.q.p, qs.q.ld, Kt, bc, S, bc, br, bc);
    flash::tile_product<false, false>(mb, br, bc, dp, qs.dout.p, qs.dout.ld, Vt, bc, dP, bc, br,
                                      bc);
    mb.team_barrier();
    const int T = s.T, n_bc = bc;
    const float sc = scale;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, br), [&](const int r) {
      const int n = flash::visible_keys(q0 + r, k0, n_bc, T);
      float* sr = S + r * n_bc;
      float* dr = dP + r * n_bc;
      const float lr = L[r], dr0 = Di[r];
      for (int c = 0; c < n; ++c) {
        const float p = kmath::exp_fast(sc * sr[c] - lr);
        sr[c] = p;
        dr[c] = p * (dr[c] - dr0);
      }
      for (int c = n; c < n_bc; ++c) sr[c] = dr[c] = 0.f;
    });
    mb.team_barrier();
  }

  // dV += P^T dO and dK += dS^T Q for the key tile (dK's scale is applied as it is stored).
  KOKKOS_INLINE_FUNCTION void key_grads(const Member& mb, const float* S, const float* dP,
                                        const Queries& qs, float* dKs, float* dVs) const {
    flash::tile_product<true, true>(mb, bc, dp, br, S, bc, qs.dout.p, qs.dout.ld, dVs, dp, bc,
                                    dp);
    flash::tile_product<true, true>(mb, bc, dp, br, dP, bc, qs.q.p, qs.q.ld, dKs, dp, bc, dp);
  }

  // Key tile rows of dK and dV (scratch [bc][dp]) to the gradients of K/V head kv.
  KOKKOS_INLINE_FUNCTION void store_keys(const Member& mb, int b, int kv, int k0, const float* dKs,
                                         const float* dVs) const {
    const std::int64_t row0 = std::int64_t(b) * s.T;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, bc), [&](const int r) {
      const int t = k0 + r;
      if (t >= s.T) return;
      float* dk = g.dk + (row0 + t) * g.k_stride + kv * s.D;
      float* dv = g.dv + (row0 + t) * g.v_stride + kv * s.D;
      for (int d = 0; d < s.D; ++d) {
        dk[d] = scale * dKs[r * dp + d];
        dv[d] = dVs[r * dp + d];
      }
    });
  }

  KOKKOS_INLINE_FUNCTION Tiles carve(const Member& mb, int level, std::size_t bytes) const {
    Tiles t;
    t.Kt = static_cast<float*>(mb.team_scratch(level).get_shmem(bytes));
    t.Ks = t.Kt + dp * bc;
    t.Vt = t.Ks + bc * dp;
    t.dKs = t.Vt + dp * bc;
    t.dVs = t.dKs + bc * dp;
    t.Qs = t.dVs + bc * dp;
    t.dOs = t.Qs + br * dp;
    t.S = t.dOs + br * dp;
    t.dP = t.S + br * bc;
    t.L = t.dP + br * bc;
    t.Di = t.L + br;
    return t;
  }

  KOKKOS_INLINE_FUNCTION void zero(const Member& mb, float* a, int n) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, n), [&](const int i) { a[i] = 0.f; });
  }
};
}  // namespace

template <class In>
void flash_attention_forward(const AttnDims& s, const QkvRows<In>& x, HeadRows out, float* lse,
                             const FlashPlan& p) {
  const int br = p.br, bc = p.bc, dp = p.dp, T = s.T, D = s.D, H = s.H, G = s.group();
  const int nq = ceil_div(T, br), level = p.level;
  const float scale = 1.f / kmath::sqrt(static_cast<float>(D));
  const std::size_t bytes = p.forward_bytes();
  Kokkos::parallel_for(
      "attention::flash_forward", team_policy(s.B * H * nq, p, bytes),
      KOKKOS_LAMBDA(const Member& mb) {
        const int i = mb.league_rank() % nq, bh = mb.league_rank() / nq;
        const int h = bh % H, b = bh / H, kv = h / G, q0 = i * br;
        // The scores are formed transposed, S^T = K (Q/sqrt(D))^T, [bc][br]: Q is transposed once
        // per team rather than K once per tile pair, K and V are read as rows (in place on a
        // CPU), and the softmax runs down the columns, vectorised across query rows.
        float* Qt = static_cast<float*>(mb.team_scratch(level).get_shmem(bytes));
        float* Ks = Qt + dp * br;
        float* Vs = Ks + bc * dp;
        float* St = Vs + bc * dp;
        float* Os = St + bc * br;
        float* m = Os + br * dp;
        float* l = m + br;
        float* alpha = l + br;
        const std::int64_t row0 = std::int64_t(b) * T;
        const In* q = x.q + row0 * x.q_stride + h * D;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, br), [&](const int r) {
          const int n = q0 + r < T ? D : 0;
          const In* row = q + std::int64_t(q0 + r) * x.q_stride;
          for (int d = 0; d < n; ++d) Qt[d * br + r] = scale * flash::widen(row[d]);
          for (int d = n; d < dp; ++d) Qt[d * br + r] = 0.f;
          m[r] = -1e30f;  // finite: e^(m - m_new) is then 0, never NaN
          l[r] = 0.f;
          for (int d = 0; d < dp; ++d) Os[r * dp + d] = 0.f;
        });
        // Key tiles up to the one holding this tile's last real query; later ones are masked.
        const int last = (q0 + br < T ? q0 + br : T) - 1, nk = last / bc + 1;
        for (int j = 0; j < nk; ++j) {
          const int k0 = j * bc;
          mb.team_barrier();
          const flash::Rows K = flash::stage_rows(mb, Ks, bc, dp, x.k + row0 * x.k_stride + kv * D,
                                                  x.k_stride, k0, T, D, 1.f);
          const flash::Rows V = flash::stage_rows(mb, Vs, bc, dp, x.v + row0 * x.v_stride + kv * D,
                                                  x.v_stride, k0, T, D, 1.f);
          mb.team_barrier();
          flash::tile_product<false, false>(mb, bc, br, dp, K.p, K.ld, Qt, br, St, br, bc, br);
          mb.team_barrier();
          // The online softmax: a new running max rescales what has been summed so far. Query
          // q0 + r sees key k0 + c when k0 + c <= q0 + r and k0 + c < T.
          Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, br / flash::RV), [&](const int rc) {
            const int r0 = rc * flash::RV, kmax = T - 1 - k0;  // c <= kmax: a real key
            float mx[flash::RV], sum[flash::RV];
            for (int v = 0; v < flash::RV; ++v) {
              mx[v] = m[r0 + v];
              sum[v] = 0.f;
            }
            // Branch-free (& on the comparisons, a blend for the mask) so the loops over v
            // vectorise: a && or a conditional max here makes them scalar.
            const int d0 = q0 + r0 - k0;  // row v sees column c when c <= d0 + v
            for (int c = 0; c < bc; ++c) {
              const float* sc = St + c * br + r0;
              for (int v = 0; v < flash::RV; ++v) {
                const bool seen = (c <= d0 + v) & (c <= kmax);
                const float s = kmath::select(seen, sc[v], -1e30f);
                mx[v] = s > mx[v] ? s : mx[v];
              }
            }
            for (int c = 0; c < bc; ++c) {
              float* sc = St + c * br + r0;
              for (int v = 0; v < flash::RV; ++v) {
                const bool seen = (c <= d0 + v) & (c <= kmax);
                const float e = kmath::select(seen, kmath::exp_fast(sc[v] - mx[v]), 0.f);
                sc[v] = e;
                sum[v] += e;
              }
            }
            for (int v = 0; v < flash::RV; ++v) {
              const float a = kmath::exp_fast(m[r0 + v] - mx[v]);
              alpha[r0 + v] = a;
              l[r0 + v] = l[r0 + v] * a + sum[v];
              m[r0 + v] = mx[v];
            }
            for (int v = 0; v < flash::RV; ++v) {
              float* o = Os + (r0 + v) * dp;
              const float a = alpha[r0 + v];
              for (int d = 0; d < dp; ++d) o[d] *= a;
            }
          });
          mb.team_barrier();
          flash::tile_product<true, true>(mb, br, dp, bc, St, br, V.p, V.ld, Os, dp, br, dp);
        }
        mb.team_barrier();
        Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, br), [&](const int r) {
          const int t = q0 + r;
          if (t >= T) return;
          const float inv = 1.f / l[r];
          float* o = out.p + (row0 + t) * out.stride + h * D;
          for (int d = 0; d < D; ++d) o[d] = Os[r * dp + d] * inv;
          lse[(std::int64_t(b) * H + h) * T + t] = m[r] + kmath::log(l[r]);
        });
      });
}

template <class In>
void flash_attention_backward(const AttnDims& s, const QkvRows<In>& x, ConstHeadRows out,
                              ConstHeadRows dout, const float* lse, const QkvGrads& g,
                              const FlashPlan& p) {
  const Backward<In> bw{s, x, out, dout, lse, g, p.br, p.bc, p.dp,
                        1.f / kmath::sqrt(static_cast<float>(s.D))};
  const int br = p.br, bc = p.bc, dp = p.dp, T = s.T, D = s.D, H = s.H, KV = s.KV, G = s.group();
  const int nq = ceil_div(T, br), nk = ceil_div(T, bc), level = p.level;
  const std::size_t bytes = p.backward_bytes();
  if (p.own_dq) {
    // One team per (b, K/V head): it owns the dQ rows of the heads that read that K/V head.
    // D_i of all of them is computed once, at the start, rather than once per tile pair
    // (G * T floats more scratch: a host team's scratch is ordinary memory).
    const int rows = nq * br;
    const std::size_t own_bytes = bytes + sizeof(float) * std::size_t(G) * rows;
    Kokkos::parallel_for(
        "attention::flash_backward", team_policy(s.B * KV, p, own_bytes),
        KOKKOS_LAMBDA(const Member& mb) {
          const int b = mb.league_rank() / KV, kv = mb.league_rank() % KV;
          const Tiles t = bw.carve(mb, level, own_bytes);
          float* di_all = t.Di + br;  // [G][rows]
          const std::int64_t row0 = std::int64_t(b) * T;
          Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, T), [&](const int r) {
            float* dq = g.dq + (row0 + r) * g.q_stride + kv * G * D;
            for (int d = 0; d < G * D; ++d) dq[d] = 0.f;
            for (int hh = 0; hh < G; ++hh) {
              const int h = kv * G + hh;
              const float* o = out.p + (row0 + r) * out.stride + h * D;
              const float* dy = dout.p + (row0 + r) * dout.stride + h * D;
              di_all[hh * rows + r] = kmath::lane_sum(D, [&](int d) { return dy[d] * o[d]; });
            }
          });
          for (int j = 0; j < nk; ++j) {
            const int k0 = j * bc;
            mb.team_barrier();
            bw.load_keys(mb, b, kv, k0, t.Kt, t.Ks, t.Vt);
            bw.zero(mb, t.dKs, 2 * bc * dp);  // dKs and dVs are adjacent
            for (int hh = 0; hh < G; ++hh) {
              const int h = kv * G + hh;
              for (int i = k0 / br; i < nq; ++i) {
                const int q0 = i * br;
                mb.team_barrier();
                const auto qs = bw.load_queries(mb, b, h, q0, t.Qs, t.dOs, t.L, t.Di,
                                                di_all + hh * rows);
                mb.team_barrier();
                bw.scores(mb, q0, k0, qs, t.Kt, t.Vt, t.L, t.Di, t.S, t.dP);
                bw.key_grads(mb, t.S, t.dP, qs, t.dKs, t.dVs);
                flash::tile_product<false, true>(mb, br, dp, bc, t.dP, bc, t.Ks, dp,
                                                 g.dq + (row0 + q0) * g.q_stride + h * D,
                                                 g.q_stride, T - q0 < br ? T - q0 : br, D);
              }
            }
            mb.team_barrier();
            bw.store_keys(mb, b, kv, k0, t.dKs, t.dVs);
          }
        });
    return;
  }

  // Two passes. dK and dV: one team per (b, K/V head, key tile).
  Kokkos::parallel_for(
      "attention::flash_backward_kv", team_policy(s.B * KV * nk, p, bytes),
      KOKKOS_LAMBDA(const Member& mb) {
        const int j = mb.league_rank() % nk, bkv = mb.league_rank() / nk;
        const int b = bkv / KV, kv = bkv % KV, k0 = j * bc;
        const Tiles t = bw.carve(mb, level, bytes);
        bw.load_keys(mb, b, kv, k0, t.Kt, nullptr, t.Vt);
        bw.zero(mb, t.dKs, 2 * bc * dp);
        for (int hh = 0; hh < G; ++hh) {
          const int h = kv * G + hh;
          for (int i = k0 / br; i < nq; ++i) {
            mb.team_barrier();
            const auto qs = bw.load_queries(mb, b, h, i * br, t.Qs, t.dOs, t.L, t.Di);
            mb.team_barrier();
            bw.scores(mb, i * br, k0, qs, t.Kt, t.Vt, t.L, t.Di, t.S, t.dP);
            bw.key_grads(mb, t.S, t.dP, qs, t.dKs, t.dVs);
          }
        }
        mb.team_barrier();
        bw.store_keys(mb, b, kv, k0, t.dKs, t.dVs);
      });
  // dQ: one team per (b, h, query tile), over the key tiles left of the diagonal. dQ
  // accumulates in the (now unused) dK slot.
  Kokkos::parallel_for(
      "attention::flash_backward_q", team_policy(s.B * H * nq, p, bytes),
      KOKKOS_LAMBDA(const Member& mb) {
        const int i = mb.league_rank() % nq, bh = mb.league_rank() / nq;
        const int h = bh % H, b = bh / H, kv = h / G, q0 = i * br;
        const Tiles t = bw.carve(mb, level, bytes);
        float* dQs = t.dKs;  // [br][dp]: br <= bc * 2 rows fit the dK and dV slots
        const auto qs = bw.load_queries(mb, b, h, q0, t.Qs, t.dOs, t.L, t.Di);
        bw.zero(mb, dQs, br * dp);
        const int last = (q0 + br < T ? q0 + br : T) - 1, nkq = last / bc + 1;
        for (int j = 0; j < nkq; ++j) {
          mb.team_barrier();
          bw.load_keys(mb, b, kv, j * bc, t.Kt, t.Ks, t.Vt);
          mb.team_barrier();
          bw.scores(mb, q0, j * bc, qs, t.Kt, t.Vt, t.L, t.Di, t.S, t.dP);
          flash::tile_product<false, true>(mb, br, dp, bc, t.dP, bc, t.Ks, dp, dQs, dp, br, dp);
        }
        mb.team_barrier();
        const std::int64_t row0 = std::int64_t(b) * T;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(mb, br), [&](const int r) {
          if (q0 + r >= T) return;
          float* dq = g.dq + (row0 + q0 + r) * g.q_stride + h * D;
          for (int d = 0; d < D; ++d) dq[d] = dQs[r * dp + d];
        });
      });
}

template void flash_attention_forward<float>(const AttnDims&, const QkvRows<float>&, HeadRows,
                                             float*, const FlashPlan&);
template void flash_attention_forward<std::uint16_t>(const AttnDims&,
                                                     const QkvRows<std::uint16_t>&, HeadRows,
                                                     float*, const FlashPlan&);
template void flash_attention_backward<float>(const AttnDims&, const QkvRows<float>&,
                                              ConstHeadRows, ConstHeadRows, const float*,
                                              const QkvGrads&, const FlashPlan&);
template void flash_attention_backward<std::uint16_t>(const AttnDims&,
                                                      const QkvRows<std::uint16_t>&, ConstHeadRows,
                                                      ConstHeadRows, const float*, const QkvGrads&,
                                                      const FlashPlan&);

}  // namespace fsdp::kernels
