// SPDX-License-Identifier: MIT
#include "core/device_info.hpp"

#include <Kokkos_Core.hpp>
#include <cstdio>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include "core/memory.hpp"
#include "core/types.hpp"

namespace fsdp {

DeviceInfo this_device() {
  DeviceInfo d;
  d.concurrency = int(HostExecSpace().concurrency());
#if defined(KOKKOS_ENABLE_CUDA)
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, ExecSpace().cuda_device()) == cudaSuccess) {
    d.gpu = true;
    d.name = p.name;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.memory_bytes = std::int64_t(p.totalGlobalMem);
    return d;
  }
#endif
  d.name = ExecSpace::name();
  return d;
}

std::string describe(const DeviceInfo& d) {
  if (!d.gpu)
    return std::string("host, Kokkos ") + d.name + " (" + std::to_string(d.concurrency) +
           (d.concurrency == 1 ? " thread)" : " threads)");
  return d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
         format_bytes(d.memory_bytes) + ")";
}

double datasheet_peak_tflops(const std::string& n, bool bf16) {
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  // Dense (no sparsity) figures from NVIDIA's data sheets; the SXM parts (PCIe parts are lower).
  if (has("H100") && has("PCIe")) return bf16 ? 756.0 : 51.0;
  if (has("H100") || has("H200") || has("GH200")) return bf16 ? 989.0 : 67.0;
  if (has("A100")) return bf16 ? 312.0 : 19.5;
  if (has("L40S")) return bf16 ? 362.0 : 91.6;
  return 0.0;
}

std::int64_t device_bytes_in_use() {
#if defined(KOKKOS_ENABLE_CUDA)
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess) return std::int64_t(total - free);
#endif
  return -1;
}

}  // namespace fsdp
