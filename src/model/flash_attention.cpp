// SPDX-License-Identifier: MIT
#include "model/flash_attention.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace fsdp::kernels {


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
  const std::size_t limit = std::size_t(Kokkos::TeamPolicy<ExecSpace>::scratch_size_max(0));
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

// The kernels, compiled once for the build's target and, on x86-64 CPUs with GCC, once more for
// AVX-512 (chosen at run time where the CPU has it): on a core with AVX-512 the wider vectors take
// the fused path from 0.83x to 1.15x of the materialised one at T = 1024 (docs/attention.md),
// while the build stays runnable on AVX2 machines. Only this file's own code (the kernels, their
// lambdas and the tile helpers) is compiled for AVX-512: the Kokkos and library code it calls
// was defined before the target switch, so the one copy of it every file shares stays portable.
namespace isa_base {
namespace flash {
#include "model/flash_tiles.inc"
}  // namespace flash
#include "model/flash_kernels.inc"
}  // namespace isa_base

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__AVX512F__) && \
    !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP)
#define FSDP_FLASH_AVX512 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512cd,fma,bmi,bmi2,lzcnt,movbe")
namespace isa_avx512 {
namespace flash {
#include "model/flash_tiles.inc"
}  // namespace flash
#include "model/flash_kernels.inc"
}  // namespace isa_avx512
#pragma GCC pop_options
#endif

namespace {
// FSDP_FLASH_ISA=base runs the build's own copy where the AVX-512 one would run (the tests run
// both; a user can rule the AVX-512 copy out).
bool use_avx512() {
#if defined(FSDP_FLASH_AVX512)
  const char* asked = std::getenv("FSDP_FLASH_ISA");
  if (asked && std::string(asked) == "base") return false;
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512cd");
  return yes;
#else
  return false;
#endif
}
}  // namespace

const char* flash_isa() { return use_avx512() ? "AVX-512" : "the build's target"; }

template <class In>
void flash_attention_forward(const AttnDims& s, const QkvRows<In>& x, HeadRows out, float* lse,
                             const FlashPlan& p) {
#if defined(FSDP_FLASH_AVX512)
  if (use_avx512()) return isa_avx512::flash_attention_forward(s, x, out, lse, p);
#endif
  isa_base::flash_attention_forward(s, x, out, lse, p);
}

template <class In>
void flash_attention_backward(const AttnDims& s, const QkvRows<In>& x, ConstHeadRows out,
                              ConstHeadRows dout, const float* lse, const QkvGrads& g,
                              const FlashPlan& p) {
#if defined(FSDP_FLASH_AVX512)
  if (use_avx512()) return isa_avx512::flash_attention_backward(s, x, out, dout, lse, g, p);
#endif
  isa_base::flash_attention_backward(s, x, out, dout, lse, g, p);
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
