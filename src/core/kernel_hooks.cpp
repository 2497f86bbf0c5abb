// SPDX-License-Identifier: MIT
#include "core/kernel_hooks.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <vector>

namespace fsdp::hooks {
namespace {

struct Hub {
  std::vector<KernelListener> kernels;
  std::vector<RegionListener> regions;
  std::uint64_t next_id = 0;
};

Hub& hub() {
  static Hub h;
  return h;
}

void begin(const char* name, const std::uint32_t, std::uint64_t* id) {
  Hub& h = hub();
  *id = h.next_id++;
  for (const KernelListener& l : h.kernels) l.begin(name, *id);
}

void end(const std::uint64_t id) {
  const Hub& h = hub();
  for (auto l = h.kernels.rbegin(); l != h.kernels.rend(); ++l) l->end(id);
}

void push(const char* name) {
  for (const RegionListener& l : hub().regions) l.push(name);
}

void pop() {
  const Hub& h = hub();
  for (auto l = h.regions.rbegin(); l != h.regions.rend(); ++l) l->pop();
}

// Adds l unless it is there already; true when it is the first, and the Kokkos callbacks that
// feed the list must be installed.
template <class L>
bool add_first(std::vector<L>& to, const L& l) {
  if (std::find(to.begin(), to.end(), l) != to.end()) return false;
  to.push_back(l);
  return to.size() == 1;
}

}  // namespace

void add_kernel_listener(KernelListener l) {
  if (!add_first(hub().kernels, l)) return;
  namespace kt = Kokkos::Tools::Experimental;
  kt::set_begin_parallel_for_callback(begin);
  kt::set_end_parallel_for_callback(end);
  kt::set_begin_parallel_reduce_callback(begin);
  kt::set_end_parallel_reduce_callback(end);
  kt::set_begin_parallel_scan_callback(begin);
  kt::set_end_parallel_scan_callback(end);
}

void add_region_listener(RegionListener l) {
  if (!add_first(hub().regions, l)) return;
  namespace kt = Kokkos::Tools::Experimental;
  kt::set_push_region_callback(push);
  kt::set_pop_region_callback(pop);
}

}  // namespace fsdp::hooks
