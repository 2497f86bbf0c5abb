// SPDX-License-Identifier: MIT
// Checked calls into MPI (and, later, NCCL/CUDA/HDF5): a failure names the rank, host, call,
// file:line and the library's own message, then aborts the whole job so no rank hangs.
#pragma once
#include <mpi.h>
#include <string>

namespace fsdp {

[[noreturn]] void fatal(const std::string& what);
// An exception no handler catches ends the whole job through fatal(), naming the program, this
// rank and what() in one line: never std::terminate's abort and core dump, and never an unwind
// through collective destructors that would leave the other ranks waiting. First in main.
void install_terminate_handler(const char* program);
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
