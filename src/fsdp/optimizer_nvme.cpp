// SPDX-License-Identifier: MIT
// The optimizer under fsdp.offload = nvme: the moments (and with offload.params the parameter
// shards) live in the rank's offload file, and each unit's state streams through the host in
// pieces of at most kStreamPiece elements: read, updated, written back. Three I/O sets rotate,
// so while piece i updates, piece i + 1's reads and piece i - 1's writes are in flight: the disk
// works the whole time the host does, the step costs max(update, I/O) rather than their sum, and
// the buffers are a few pieces whatever the size of the units. The file's one queue keeps every
// read after the writes issued before it, so the next step's gathers (and a checkpoint) see the
// new values.
#include <algorithm>

#include "core/host_copy.hpp"
#include "fsdp/optimizer_step.hpp"
#include "fsdp/unit_update.hpp"

namespace fsdp {

namespace {
// A piece's bytes in a shard's region on disk: they start on a block (pieces are whole blocks)
// and the last piece reads and writes up to the region's rounded end.
std::int64_t at(const ShardVec& v, std::int64_t lo) { return v.file_offset() + lo * 4; }
}  // namespace

void ShardedOptimizer::read_piece(int i) {
  OffloadFile& f = *state_.offload_file();
  const Piece& pc = pieces_[std::size_t(i)];
  IoSet& io = io_[i % 3];
  f.wait(io.write);  // the piece before in this set is on its way to the disk: buffers free
  const ShardVec p = state_.param_shard(pc.unit);
  const std::int64_t bytes = io_round(pc.n * 4);
  if (p.on_disk()) f.read(at(p, pc.lo), bytes, io.p.data());
  f.read(at(state_.exp_avg_shard(pc.unit), pc.lo), bytes, io.m.data());
  io.read = f.read(at(state_.exp_avg_sq_shard(pc.unit), pc.lo), bytes, io.v.data());
}

void ShardedOptimizer::prefetch_state() {
  OffloadFile* f = state_.offload_file();
  if (!f || prefetched_ > 0) return;
  // Two pieces: the loop reads one ahead of the one it updates. A set whose last write (the
  // step before) is still queued is left to the loop, so the caller never waits here.
  for (int i = 0; i < std::min(2, int(pieces_.size())); ++i) {
    if (!f->done(io_[i % 3].write)) return;
    read_piece(i);
    prefetched_ = i + 1;
  }
}

void ShardedOptimizer::step_streamed(const optim::AdamWStep& s, bool zero_grads,
                                     const std::function<void(int)>& updated) {
  OffloadFile& f = *state_.offload_file();
  std::vector<ShardedUnit>& units = state_.units();
  const int P = int(pieces_.size());
  // Piece i's state: its disk reads (unless prefetched), then what comes down from the device
  // (the parameter shard where it is there, the gradients where they are there).
  const auto read = [&](int i) {
    if (i >= prefetched_) read_piece(i);
    const Piece& pc = pieces_[std::size_t(i)];
    IoSet& io = io_[i % 3];
    const ShardVec p = state_.param_shard(pc.unit), g = state_.grad_shard(pc.unit);
    if (!p.on_disk()) host_copy::to_host(io.p.vec(0, pc.n), p.sub(pc.lo, pc.n).device());
    if (g.on_device()) host_copy::to_host(io.g.vec(0, pc.n), g.sub(pc.lo, pc.n).device());
  };
  if (P > 0) read(0);
  for (int i = 0; i < P; ++i) {
    const Piece& pc = pieces_[std::size_t(i)];
    IoSet& io = io_[i % 3];
    f.wait(io.read);
    // Piece i's copies down and piece i - 1's parameters up (one stream, in issue order): a
    // unit whose last piece that was may start its next gathers.
    host_copy::wait_copies();
    if (i > 0 && pieces_[std::size_t(i - 1)].unit != pc.unit) updated(pieces_[std::size_t(i - 1)].unit);
    if (i + 1 < P) read(i + 1);
    const ShardedUnit& su = units[std::size_t(pc.unit)];
    const ShardVec p = state_.param_shard(pc.unit), g = state_.grad_shard(pc.unit);
    const ShardVec m = state_.exp_avg_shard(pc.unit), v = state_.exp_avg_sq_shard(pc.unit);
    const PinnedVec grads = g.on_device() ? io.g.vec(0, pc.n) : g.sub(pc.lo, pc.n).host();
    update_unit<HostExecSpace, PinnedVec>(su, io.p.vec(0, pc.n), grads, io.m.vec(0, pc.n),
                                          io.v.vec(0, pc.n), s, false, pc.lo);
    const std::int64_t bytes = io_round(pc.n * 4);
    if (p.on_disk()) f.write(at(p, pc.lo), bytes, io.p.data());
    else host_copy::to_device(p.sub(pc.lo, pc.n).device(), ConstPinnedVec(io.p.vec(0, pc.n)));
    f.write(at(m, pc.lo), bytes, io.m.data());
    io.write = f.write(at(v, pc.lo), bytes, io.v.data());
    if (zero_grads && g.on_device()) Kokkos::deep_copy(ExecSpace(), g.sub(pc.lo, pc.n).device(), 0.f);
  }
  prefetched_ = 0;
  host_copy::wait_copies();
  if (P > 0) updated(pieces_.back().unit);
}

}  // namespace fsdp
