// SPDX-License-Identifier: MIT
// One owner for the Kokkos Tools callbacks, which hold one function each, so several parts of
// the program can listen to kernel launches (the kernel profile, the space check).
#pragma once
#include <cstdint>

namespace fsdp::hooks {

// Every parallel_for / parallel_reduce / parallel_scan: begin with its label and an id, end with
// the same id. Listeners are called in the order they were added (end: the reverse).
struct KernelListener {
  void (*begin)(const char* name, std::uint64_t id);
  void (*end)(std::uint64_t id);
  bool operator==(const KernelListener& o) const { return begin == o.begin && end == o.end; }
};
void add_kernel_listener(KernelListener l);  // adding the same pair twice adds it once

// Profiling regions (KokkosBlas names its calls with one).
struct RegionListener {
  void (*push)(const char* name);
  void (*pop)();
  bool operator==(const RegionListener& o) const { return push == o.push && pop == o.pop; }
};
void add_region_listener(RegionListener l);

}  // namespace fsdp::hooks
