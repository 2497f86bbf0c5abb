// SPDX-License-Identifier: MIT
// Checked calls into the CUDA runtime and NCCL, like FSDP_MPI_CHECK: a failure names the rank,
// host, call, file:line, device and the library's own message, then aborts the whole job.
#pragma once
#include <cuda_runtime.h>
#include <nccl.h>

namespace fsdp {

[[noreturn]] void cuda_failed(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void nccl_failed(ncclResult_t code, ncclComm_t comm, const char* call,
                              const char* file, int line);
// For destructors: reports a failure on stderr without aborting (a teardown error must not
// hide the error that caused the teardown). Returns whether the call succeeded.
bool cuda_warn(cudaError_t code, const char* call, const char* file, int line);

}  // namespace fsdp

#define FSDP_CUDA_CHECK(call)                                        \
  do {                                                               \
    cudaError_t fsdp_cuda_rc_ = (call);                              \
    if (fsdp_cuda_rc_ != cudaSuccess)                                \
      ::fsdp::cuda_failed(fsdp_cuda_rc_, #call, __FILE__, __LINE__); \
  } while (0)

// NCCL_CHECK with the communicator (or nullptr) whose last error message is wanted.
#define FSDP_NCCL_CHECK_COMM(call, comm)                                     \
  do {                                                                       \
    ncclResult_t fsdp_nccl_rc_ = (call);                                     \
    if (fsdp_nccl_rc_ != ncclSuccess)                                        \
      ::fsdp::nccl_failed(fsdp_nccl_rc_, (comm), #call, __FILE__, __LINE__); \
  } while (0)

#define FSDP_NCCL_CHECK(call) FSDP_NCCL_CHECK_COMM(call, nullptr)

#define FSDP_CUDA_WARN(call) ((void)::fsdp::cuda_warn((call), #call, __FILE__, __LINE__))
