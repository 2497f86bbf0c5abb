// SPDX-License-Identifier: MIT
// The optimizer under fsdp.offload = nvme: the moments (and with offload.params the parameter
// shards) live in the rank's offload file, and each unit's state streams through the host: read,
// updated, written back. Three I/O sets rotate, so while unit u updates, unit u + 1's reads and
// unit u - 1's writes are in flight: the disk works the whole time the host does, and the step
// costs max(update, I/O) rather than their sum. The file's one queue keeps every read after the
// writes issued before it, so the next step's gathers (and a checkpoint) see the new values.
#include <algorithm>

#include "core/host_copy.hpp"
#include "fsdp/optimizer_step.hpp"
#include "fsdp/unit_update.hpp"

namespace fsdp {

void ShardedOptimizer::step_streamed(const optim::AdamWStep& s, bool zero_grads,
                                     const std::function<void(int)>& updated) {
  OffloadFile& f = *state_.offload_file();
  std::vector<ShardedUnit>& units = state_.units();
  const int U = int(units.size());
  const auto read = [&](int u) {
    IoSet& io = io_[u % 3];
    f.wait(io.write);  // the unit before in this set is on its way to the disk: buffers free
    const ShardedUnit& su = units[std::size_t(u)];
    const ShardVec p = state_.param_shard(u), g = state_.grad_shard(u);
    const ShardVec m = state_.exp_avg_shard(u), v = state_.exp_avg_sq_shard(u);
    const std::int64_t bytes = io_round(su.shard * 4);
    if (p.on_disk()) f.read(p.file_offset(), bytes, io.p.data());
    else host_copy::to_host(io.p.vec(0, su.shard), p.device());
    if (g.on_device()) host_copy::to_host(io.g.vec(0, su.shard), g.device());
    f.read(m.file_offset(), bytes, io.m.data());
    io.read = f.read(v.file_offset(), bytes, io.v.data());
  };
  if (U > 0) read(0);
  for (int u = 0; u < U; ++u) {
    IoSet& io = io_[u % 3];
    f.wait(io.read);
    // Unit u's copies down and unit u - 1's parameters up (one stream, in issue order): then
    // unit u - 1's next gathers may start.
    host_copy::wait_copies();
    if (u > 0) updated(u - 1);
    if (u + 1 < U) read(u + 1);
    const ShardedUnit& su = units[std::size_t(u)];
    const ShardVec p = state_.param_shard(u), g = state_.grad_shard(u);
    const ShardVec m = state_.exp_avg_shard(u), v = state_.exp_avg_sq_shard(u);
    const PinnedVec grads = g.on_device() ? io.g.vec(0, su.shard) : g.host();
    update_unit<HostExecSpace, PinnedVec>(su, io.p.vec(0, su.shard), grads, io.m.vec(0, su.shard),
                                          io.v.vec(0, su.shard), s, false);
    const std::int64_t bytes = io_round(su.shard * 4);
    if (p.on_disk()) f.write(p.file_offset(), bytes, io.p.data());
    else host_copy::to_device(p.device(), ConstPinnedVec(io.p.vec(0, su.shard)));
    f.write(m.file_offset(), bytes, io.m.data());
    io.write = f.write(v.file_offset(), bytes, io.v.data());
    if (zero_grads && g.on_device()) Kokkos::deep_copy(ExecSpace(), g.device(), 0.f);
  }
  host_copy::wait_copies();
  if (U > 0) updated(U - 1);
}

}  // namespace fsdp
