// SPDX-License-Identifier: MIT
// Checked calls into MPI (and, later, NCCL/CUDA/HDF5): a failure names the rank, host, call,
// file:line and the library's own message, then aborts the whole job so no rank hangs.
#pragma once
#include <mpi.h>
#include <string>

namespace fsdp {

[[noreturn]] void fatal(const std::string& what);
[[noreturn]] void mpi_failed(int code, const char* call, const char* file, int line);
std::string host_name();
int world_rank();

}  // namespace fsdp

#define FSDP_MPI_CHECK(call)                                         \
  do {                                                               \
    int fsdp_mpi_rc_ = (call);                                       \
    if (fsdp_mpi_rc_ != MPI_SUCCESS)                                 \
      ::fsdp::mpi_failed(fsdp_mpi_rc_, #call, __FILE__, __LINE__);   \
  } while (0)
