// SPDX-License-Identifier: MIT
// Causal attention without the T x T matrix: the FlashAttention-2 algorithm as Kokkos team
// kernels, one source for CPUs and GPUs. B = batch, T = time, H = query heads, KV = key/value
// heads (query head h reads K/V head h / (H / KV): grouped-query attention without copies),
// D = head size. Q, K and V are rows b*T + t of row-major matrices (any row stride; head h of q
// at column h*D, K/V head g of k and v at column g*D), so GPT-2's packed qkv and separate q, k, v
// buffers both work in place.
//
// Forward: a team takes one tile of query rows of one (b, h) and walks the key tiles left of the
// diagonal (the causal tiles above it are never touched), keeping a running max m and sum l
// per row and rescaling its partial output by e^(m_old - m_new) whenever the max grows (the
// online softmax). Its scores are formed transposed, S^T = K Q^T, so that Q is transposed once
// per team, K and V are read as rows, and the softmax runs down the columns. It writes the
// normalised output and lse = m + log(l) per row: B*H*T floats are what backward needs instead
// of B*H*T*T probabilities.
// Backward: D_i = rowsum(dO * O), P recomputed tile by tile as e^(S - lse), then
// dV += P^T dO, dS = P * (dO V^T - D_i), dK += dS^T Q, dQ += dS K. Every output element has one
// owner, so nothing races and the sums run in a fixed order (deterministic):
//   - on a CPU one team owns a (b, K/V head) pair: its key tiles' dK and dV, and the dQ rows of
//     the query heads that read them (one pass, five tile products per tile pair);
//   - on a GPU, where that is too few teams, one kernel owns (b, K/V head, key tile) for dK and
//     dV and a second owns (b, h, query tile) for dQ (two passes, seven products per pair).
// dq, dk and dv are assigned (=). The 1/sqrt(D) goes where it costs nothing: into forward's
// transposed Q tile, backward's exponent, the K tile dQ reads, and dK as it is stored.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/bf16.hpp"
#include "core/math.hpp"
#include "core/types.hpp"

// Fully unrolled register tiles: GCC keeps acc[][] in vector registers only when every index
// is a constant; nvcc unrolls constant trip counts with its own pragma.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define FSDP_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__) || defined(__HIPCC__)
#define FSDP_UNROLL  // a GPU build's host pass: nvcc's front end rejects GCC's pragma
#elif defined(__clang__)
#define FSDP_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define FSDP_UNROLL _Pragma("GCC unroll 16")
#else
#define FSDP_UNROLL
#endif

namespace fsdp::kernels {

struct AttnDims {
  int B, T, H, KV, D;
  // Packed documents (data.packing = documents): [B*T] on the device, the window position where
  // each row's document begins; row t sees keys starts[t]..t. Null: one document per window.
  // Within a sequence starts never decrease, so a tile's first row has its smallest start: key
  // tiles before it are skipped whole, and masking inside the others is per element.
  const int* starts = nullptr;
  KOKKOS_INLINE_FUNCTION int group() const { return H / KV; }  // query heads per K/V head
};

// Where the rows live. In is float, or std::uint16_t for bf16 inputs (widened in the tiles;
// the softmax statistics and every sum stay fp32).
template <class In>
struct QkvRows {
  const In *q, *k, *v;
  std::int64_t q_stride, k_stride, v_stride;  // floats (elements) between consecutive rows
};
struct QkvGrads {
  float *dq, *dk, *dv;
  std::int64_t q_stride, k_stride, v_stride;
};
// out and dout: [B*T, H*D] rows with their stride; lse: [B, H, T].
struct HeadRows {
  float* p;
  std::int64_t stride;
};
struct ConstHeadRows {
  const float* p;
  std::int64_t stride;
};

// Tile shape and schedule for one backend and head size.
struct FlashPlan {
  int br = 64, bc = 64;  // query rows and keys per tile
  int dp = 64;           // D padded to the register tile's width
  int level = 1;         // team scratch level: 0 is a GPU's shared memory
  int team = 1;          // threads per team
  bool own_dq = true;    // one backward pass (a team per (b, K/V head)) or two (GPU)
  std::size_t forward_bytes() const;
  std::size_t backward_bytes() const;
};

namespace flash {
// Register tile of the tile products: RM rows by RN columns per thread. On a CPU 4 x 16 floats
// are eight AVX2 registers of accumulators, with two loads and four broadcasts per eight FMAs;
// on a GPU a thread keeps 4 x 4 so that a team's threads cover a tile.
// RV: query rows one thread takes in the softmax passes, which run down the columns of the
// transposed scores: a GPU thread per row (its reads coalesce across the threads), a CPU core 16
// rows at once (two AVX2 vectors across the rows).
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
constexpr int RM = 4, RN = 4, RV = 1;
constexpr bool kDeviceTeams = true;
#else
constexpr int RM = 4, RN = 16, RV = 16;
constexpr bool kDeviceTeams = false;
#endif
}  // namespace flash

// The instruction set the CPU kernels run with: "AVX-512" where the build compiled a copy for it
// and the CPU has it, else "the build's target".
const char* flash_isa();

// The plan this backend uses for head size D (tests may change own_dq to run the other
// schedule on a CPU).
FlashPlan flash_plan(int D);

// out = softmax(Q K^T / sqrt(D), causal) V per head; lse [B, H, T] = the rows' log-sum-exp.
template <class In>
void flash_attention_forward(const AttnDims& s, const QkvRows<In>& x, HeadRows out, float* lse,
                             const FlashPlan& p);

// dq, dk, dv = (assigned) gradients of sum(out * dout), from the forward's out and lse.
template <class In>
void flash_attention_backward(const AttnDims& s, const QkvRows<In>& x, ConstHeadRows out,
                              ConstHeadRows dout, const float* lse, const QkvGrads& g,
                              const FlashPlan& p);

// GPT-2's packed layout: qkv [B*T, 3C] = q | k | v, out and dout [B*T, C], dqkv [B*T, 3C].
QkvRows<float> packed_qkv(const ConstMat& qkv);
QkvGrads packed_grads(const Mat& dqkv);

}  // namespace fsdp::kernels
