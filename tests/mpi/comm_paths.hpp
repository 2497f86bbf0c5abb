// SPDX-License-Identifier: MIT
// The transports the comm tests run every collective on (shared memory staged, single-copy,
// tiny window, progress thread; the MPI fallback), and the small helpers they share.
#pragma once
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/mpi_communicator.hpp"

namespace fsdp::comm::test {

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

inline int my_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

struct Path {
  const char* label;
  bool shm;
  std::size_t window_bytes;           // 0: the default
  std::size_t single_copy_max_bytes;  // collectives up to this read the peers directly
  bool progress = false;              // non-blocking collectives on a progress thread
};

inline constexpr std::size_t kMiB = std::size_t(1) << 20;
// 1 KiB windows hold 128 floats per step: every message below over that goes in many steps.
inline const Path kPaths[] = {
    {"shm, single-copy all-gather and reduce-scatter", true, 0, 64 * kMiB},
    {"shm, staged", true, 0, 0},
    {"shm, staged, tiny window", true, 1024, 0},
    {"shm, single-copy, progress thread", true, 0, 64 * kMiB, true},
    {"shm, staged, tiny window, progress thread", true, 1024, 0, true},
    {"mpi fallback", false, 0, 0}};

inline std::unique_ptr<MpiCommunicator> make_mpi(const Path& p) {
  MpiOptions o;
  o.shared_memory = p.shm;
  if (p.window_bytes) o.window_bytes = p.window_bytes;
  o.shm.single_copy_max_bytes = p.single_copy_max_bytes;
  o.progress_thread = p.progress;
  auto c = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, o);
  // This machine is one node: asking for shared memory must get it unless the env forbids it.
  if (p.shm && !shm_disabled_by_env()) REQUIRE(c->uses_shared_memory());
  if (!p.shm) REQUIRE_FALSE(c->uses_shared_memory());
  REQUIRE(c->uses_progress_thread() == (p.progress && c->uses_shared_memory()));
  if (p.single_copy_max_bytes > 0 && c->uses_shared_memory() && !c->uses_single_copy())
    WARN("process_vm_readv is not permitted here: the single-copy collectives are untested");
  return c;
}

inline Vec vec(std::vector<float>& v) { return Vec(v.data(), v.size()); }
inline ConstVec cvec(const std::vector<float>& v) { return ConstVec(v.data(), v.size()); }

inline std::size_t count_diff(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) ++wrong;
  return wrong;
}

}  // namespace fsdp::comm::test
