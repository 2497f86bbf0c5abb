// SPDX-License-Identifier: MIT
#include "core/host_copy.hpp"

namespace fsdp::host_copy {
namespace {

double g_bytes = 0.0;

template <class Dst, class Src>
void copy(const Dst& dst, const Src& src) {
  // Empty: nothing moves (a counting tracker's views, where no device may exist to ask).
  if (src.extent(0) == 0) return;
  g_bytes += double(src.extent(0)) * double(sizeof(typename Src::value_type));
  Kokkos::deep_copy(ExecSpace(), dst, src);
}

}  // namespace

void to_device(const Vec& dst, const ConstPinnedVec& src) { copy(dst, src); }
void to_device(const Bf16Vec& dst, const ConstPinnedBf16Vec& src) { copy(dst, src); }
void to_host(const PinnedVec& dst, const ConstVec& src) { copy(dst, src); }
void wait_copies() { ExecSpace().fence(); }

void wait_copies(const MemoryTracker& tracker) {
  if (!tracker.counting()) return wait_copies();
  if (StepLog* log = tracker.log()) log->wait_copies();
}

int count_copy(const MemoryTracker& tracker, Transfer op, double bytes) {
  StepLog* log = tracker.log();
  return log ? log->copy(op, bytes) : -1;
}

double take_bytes_moved() {
  const double b = g_bytes;
  g_bytes = 0.0;
  return b;
}

}  // namespace fsdp::host_copy
