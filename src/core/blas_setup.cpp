// SPDX-License-Identifier: MIT
#include "core/blas_setup.hpp"

#include <unistd.h>

#include <cstdlib>

namespace fsdp {

void select_blas_kernel(char** argv) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("FSDP_NO_BLAS_SETUP")) return;
  const char* core = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    core = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    core = "Haswell";
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);  // only returns on failure: carry on with the default kernels
#else
  (void)argv;
#endif
}

}  // namespace fsdp
