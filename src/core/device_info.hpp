// SPDX-License-Identifier: MIT
// What the compute runs on, for the log and for MFU: the GPU by name, compute capability and
// memory (a CUDA build), or the host execution space; and the dense peak MFU is measured against.
#pragma once
#include <cstdint>
#include <string>

namespace fsdp {

struct DeviceInfo {
  bool gpu = false;
  std::string name;  // "NVIDIA H200", or the Kokkos host space ("Serial", "OpenMP")
  int cc_major = 0, cc_minor = 0;
  std::int64_t memory_bytes = 0;  // the GPU's total memory; 0 on a host
  int concurrency = 1;            // host threads Kokkos uses
};
DeviceInfo this_device();
std::string describe(const DeviceInfo& d);  // one line: "NVIDIA H200 (sm_90, 139.8 GiB)"

// The data-sheet dense peak (TFLOP/s) of a known GPU for fp32 (CUDA cores) or bf16 (tensor
// cores), from its name; 0 when the GPU is not in the table (the trainer then measures a GEMM).
double datasheet_peak_tflops(const std::string& gpu_name, bool bf16);

// Bytes the GPU has in use now (cudaMemGetInfo: total - free); -1 without a GPU.
std::int64_t device_bytes_in_use();

}  // namespace fsdp
