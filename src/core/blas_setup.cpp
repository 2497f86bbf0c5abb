// SPDX-License-Identifier: MIT
#include "core/blas_setup.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>

namespace fsdp {
namespace {

// The widest OpenBLAS kernel family this CPU runs, from its feature flags.
const char* best_core() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return nullptr;
}

// How wide a kernel family's vectors are: 3 AVX-512, 2 AVX2 + FMA, 1 AVX, 0 older or unknown.
int width(std::string core) {
  for (char& c : core) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* k : {"skylakex", "cooperlake", "sapphirerapids"})
    if (core == k) return 3;
  for (const char* k : {"haswell", "zen"})
    if (core == k) return 2;
  for (const char* k : {"sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"})
    if (core == k) return 1;
  return 0;
}

}  // namespace

void select_blas_kernel(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("FSDP_NO_BLAS_SETUP")) return;
  const char* core = best_core();
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);  // only returns on failure: carry on with the default kernels
}

std::string blas_kernel_in_use() {
  // Looked up rather than linked: a site's BLAS may not be OpenBLAS.
  using CoreName = char* (*)();
  const auto f = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = f ? f() : nullptr;
  return name ? std::string(name) : std::string();
}

std::string blas_config() {
  using Config = char* (*)();
  const auto f = reinterpret_cast<Config>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  const char* text = f ? f() : nullptr;
  return text ? std::string(text) : std::string();
}

std::string blas_best_kernel() {
  const char* best = best_core();
  return best ? std::string(best) : std::string();
}

std::string blas_kernel_warning() {
  const char* pinned = std::getenv("OPENBLAS_CORETYPE");
  const char* best = best_core();
  const std::string used = blas_kernel_in_use();
  if (!pinned || !best || used.empty() || width(used) >= width(best)) return {};
  return std::string("OPENBLAS_CORETYPE=") + pinned + " pins OpenBLAS to its " + used +
         " kernels on a CPU that runs " + best +
         "'s (wider vectors): fp32 GEMMs run at about half speed; unset it to let fsdp choose";
}

}  // namespace fsdp
