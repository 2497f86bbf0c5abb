// SPDX-License-Identifier: MIT
// What fsdp-train reports about the device it computes on, and the peak its MFU is against.
#include <catch2/catch.hpp>
#include <string>

#include "core/device_info.hpp"

namespace {
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("MFU's data-sheet peaks: known GPUs by name, 0 for the rest") {
  using fsdp::datasheet_peak_tflops;
  REQUIRE(datasheet_peak_tflops("NVIDIA H200", true) == 989.0);
  REQUIRE(datasheet_peak_tflops("NVIDIA H100 80GB HBM3", false) == 67.0);
  REQUIRE(datasheet_peak_tflops("NVIDIA H100 PCIe", true) == 756.0);
  REQUIRE(datasheet_peak_tflops("NVIDIA A100-SXM4-80GB", true) == 312.0);
  REQUIRE(datasheet_peak_tflops("Tesla V100-SXM2-32GB", true) == 0.0);
  const fsdp::DeviceInfo host = fsdp::this_device();
#if !defined(KOKKOS_ENABLE_CUDA)
  REQUIRE_FALSE(host.gpu);
  REQUIRE(has(fsdp::describe(host), "host, Kokkos "));
  REQUIRE(fsdp::device_bytes_in_use() == -1);
#endif
}
