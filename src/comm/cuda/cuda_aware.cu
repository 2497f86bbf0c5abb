// SPDX-License-Identifier: MIT
#include <mpi.h>

#include "comm/cuda/cuda_aware.hpp"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace fsdp::comm {

bool mpi_is_cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

const char* mpi_cuda_aware_compile_time() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return "yes";
#elif defined(MPIX_CUDA_AWARE_SUPPORT)
  return "no";
#else
  return "unknown";
#endif
}

}  // namespace fsdp::comm
