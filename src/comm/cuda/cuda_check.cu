// SPDX-License-Identifier: MIT
#include <cstdio>
#include <string>

#include "comm/cuda/cuda_check.hpp"
#include "core/check.hpp"

namespace fsdp {
namespace {

std::string where(const char* call, const char* file, int line) {
  int device = -1;
  // Not checked: this already reports a failure, and the device is only context.
  if (cudaGetDevice(&device) != cudaSuccess) device = -1;
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + " (device " +
         std::to_string(device) + "): ";
}

std::string cuda_message(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

}  // namespace

[[noreturn]] void cuda_failed(cudaError_t code, const char* call, const char* file, int line) {
  fatal(where(call, file, line) + cuda_message(code));
}

[[noreturn]] void nccl_failed(ncclResult_t code, ncclComm_t comm, const char* call,
                              const char* file, int line) {
  std::string msg = where(call, file, line) + ncclGetErrorString(code);
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  // NCCL's own account of the failure (a peer that vanished, a bad argument), when it has one.
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') msg += " (" + std::string(last) + ")";
#else
  (void)comm;
#endif
  fatal(msg);
}

bool cuda_warn(cudaError_t code, const char* call, const char* file, int line) {
  if (code == cudaSuccess) return true;
  // At process exit the runtime may already be gone; that is not worth a message.
  if (code == cudaErrorCudartUnloading) return false;
  std::fprintf(stderr, "fsdp: warning on rank %d (%s): %s%s\n", world_rank(), host_name().c_str(),
               where(call, file, line).c_str(), cuda_message(code).c_str());
  return false;
}

}  // namespace fsdp
