// SPDX-License-Identifier: MIT
// The tier of fsdp.offload = nvme: the optimizer state (and with offload.params the parameter
// shards) lives in the rank's offload file, and each unit's state streams through the host in
// pieces of at most kStreamPiece elements: read, updated by the rule, written back. Three I/O
// sets rotate, so while piece i updates, piece i + 1's reads and piece i - 1's writes are in
// flight: the disk works the whole time the host does, a pass costs max(update, I/O) rather than
// their sum, and the buffers are a few pieces whatever the size of the units. The file's one
// queue keeps every read after the writes issued before it, so the next pass (or step's
// gathers, or a checkpoint) sees the new values. A pass moves only what its rule reads
// (StateAccess). The second moments stay at their shard positions on disk (unpacked), so a
// piece's are one aligned region like its other state.
#include <algorithm>

#include "core/host_copy.hpp"
#include "fsdp/optim/optimizer_step.hpp"
#include "fsdp/sharded_state.hpp"
#include "fsdp/optim/state_tier.hpp"

namespace fsdp {

namespace {

// A piece's bytes in a shard's region on disk: they start on a block (pieces are whole blocks)
// and the last piece reads and writes up to the region's rounded end.
std::int64_t at(const ShardVec& v, std::int64_t lo) { return v.file_offset() + lo * 4; }

class StreamedTier final : public StateTier {
 public:
  StreamedTier(ShardedState& state, MemoryTracker& tracker)
      : state_(state), tracker_(tracker) {
    const std::int64_t n = stream_piece(state.units());
    const bool grads_on_device = !state.units().empty() && state.grad_shard(0).on_device();
    for (int k = 0; k < 3; ++k) {
      IoSet& io = io_[k];
      const std::string set = "optimizer_io" + std::to_string(k);
      io.p = IoBuffer(tracker, set + "::params", n);
      io.m = IoBuffer(tracker, set + "::exp_avg", n);
      io.v = IoBuffer(tracker, set + "::exp_avg_sq", n);
      if (grads_on_device) io.g = IoBuffer(tracker, set + "::grads", n);
    }
    for (int u = 0; u < int(state.units().size()); ++u)
      for (std::int64_t lo = 0; lo < state.units()[std::size_t(u)].shard; lo += n)
        pieces_.push_back({u, lo, std::min(n, state.units()[std::size_t(u)].shard - lo)});
  }
  ~StreamedTier() override {  // its writes' buffers are its own
    for (const IoSet& io : io_) state_.offload_file()->wait(std::max(io.read, io.write));
  }

  // The first two pieces' reads for a pass that reads everything (the step's first): the loop
  // reads one ahead of the one it updates. A set whose last write (the step before) is still
  // queued is left to the loop, so the caller never waits here.
  void prefetch() override {
    OffloadFile& f = *state_.offload_file();
    if (prefetched_ > 0) return;
    for (int i = 0; i < std::min(2, int(pieces_.size())); ++i) {
      if (!f.done(io_[i % 3].write)) return;
      read_piece(i, StateAccess{});
      prefetched_ = i + 1;
    }
  }

  void sweep(UpdateRule& rule, bool zero_grads, const std::function<void(int)>& updated) override {
    OffloadFile& f = *state_.offload_file();
    const StateAccess a = rule.access();
    const int P = int(pieces_.size());
    // What the prefetch read is this pass's only if the pass reads the moments.
    if (!a.moments) drop_prefetch();
    // Piece i's state: its disk reads (unless prefetched), then what comes down from the device
    // (the parameter shard where it is there, the gradients where they are there).
    const auto read = [&](int i) {
      if (i >= prefetched_) read_piece(i, a);
      const Piece& pc = pieces_[std::size_t(i)];
      IoSet& io = io_[i % 3];
      const ShardVec p = state_.param_shard(pc.unit), g = state_.grad_shard(pc.unit);
      if (a.params && !p.on_disk()) host_copy::to_host(io.p.vec(0, pc.n), p.sub(pc.lo, pc.n).device());
      if (g.on_device()) host_copy::to_host(io.g.vec(0, pc.n), g.sub(pc.lo, pc.n).device());
      logged(Transfer::DeviceToHost, (a.params && !p.on_disk() ? 1 : 0) + (g.on_device() ? 1 : 0), pc.n);
    };
    if (P > 0) read(0);
    for (int i = 0; i < P; ++i) {
      const Piece& pc = pieces_[std::size_t(i)];
      IoSet& io = io_[i % 3];
      f.wait(io.read);
      // Piece i's copies down and piece i - 1's up (one stream, in issue order): a unit whose
      // last piece that was may start its next gathers.
      host_copy::wait_copies(tracker_);
      if (i > 0 && pieces_[std::size_t(i - 1)].unit != pc.unit && updated)
        updated(pieces_[std::size_t(i - 1)].unit);
      if (i + 1 < P) read(i + 1);
      const ShardedUnit& su = state_.units()[std::size_t(pc.unit)];
      const ShardVec p = state_.param_shard(pc.unit), g = state_.grad_shard(pc.unit);
      StatePiece<PinnedVec> s;
      s.unit = pc.unit;
      s.lo = pc.lo;
      s.n = pc.n;
      s.p = io.p.vec(0, pc.n);
      s.g = g.on_device() ? io.g.vec(0, pc.n) : g.sub(pc.lo, pc.n).host();
      s.m = io.m.vec(0, pc.n);
      s.v = io.v.vec(0, pc.n);
      s.sq_lo = pc.lo;
      rule.on_host(su.optim, s);
      const std::int64_t bytes = io_round(pc.n * 4);
      if (a.params) {
        if (p.on_disk()) io.write = f.write(at(p, pc.lo), bytes, io.p.data());
        else host_copy::to_device(p.sub(pc.lo, pc.n).device(), ConstPinnedVec(io.p.vec(0, pc.n)));
      }
      if (a.moments) {
        f.write(at(state_.exp_avg_shard(pc.unit), pc.lo), bytes, io.m.data());
        io.write = f.write(at(state_.exp_avg_sq_shard(pc.unit), pc.lo), bytes, io.v.data());
      }
      logged(Transfer::HostToDevice,
             (a.params && !p.on_disk() ? 1 : 0) + (g.on_device() && a.writes_grads ? 1 : 0), pc.n);
      if (g.on_device()) {
        if (a.writes_grads)
          host_copy::to_device(g.sub(pc.lo, pc.n).device(), ConstPinnedVec(io.g.vec(0, pc.n)));
        if (zero_grads && a.last_grad_read && !tracker_.counting())
          Kokkos::deep_copy(ExecSpace(), g.sub(pc.lo, pc.n).device(), 0.f);
      }
    }
    prefetched_ = 0;
    host_copy::wait_copies(tracker_);
    if (P > 0 && updated) updated(pieces_.back().unit);
  }

 private:
  // One piece's state on its way through the host: read, updated, written back. The parameter
  // shard comes from the disk (offload.params) or down from the device; the gradient shard is
  // read in place where it is host memory, else comes down into g.
  struct IoSet {
    IoBuffer p, m, v, g;
    OffloadFile::Ticket read = 0, write = 0;  // the last requests from this set's buffers
  };
  // A piece of a unit's shard: elements [lo, lo + n), in unit order.
  struct Piece {
    int unit;
    std::int64_t lo, n;
  };

  void read_piece(int i, const StateAccess& a) {  // piece i's disk reads into set i % 3
    OffloadFile& f = *state_.offload_file();
    const Piece& pc = pieces_[std::size_t(i)];
    IoSet& io = io_[i % 3];
    f.wait(io.write);  // the piece before in this set is on its way to the disk: buffers free
    const ShardVec p = state_.param_shard(pc.unit);
    const std::int64_t bytes = io_round(pc.n * 4);
    if (a.params && p.on_disk()) io.read = f.read(at(p, pc.lo), bytes, io.p.data());
    if (a.moments) {
      f.read(at(state_.exp_avg_shard(pc.unit), pc.lo), bytes, io.m.data());
      io.read = f.read(at(state_.exp_avg_sq_shard(pc.unit), pc.lo), bytes, io.v.data());
    }
  }
  void drop_prefetch() {
    OffloadFile& f = *state_.offload_file();
    for (int i = 0; i < prefetched_; ++i) f.wait(io_[i % 3].read);
    prefetched_ = 0;
  }

  // The counted run: n pieces of `elements` floats copied (its empty views show no bytes).
  void logged(Transfer op, int n, std::int64_t elements) {
    if (n > 0) host_copy::count_copy(tracker_, op, 4.0 * double(n) * double(elements));
  }
  ShardedState& state_;
  const MemoryTracker& tracker_;  // a counting one: no kernel runs, the copies are logged
  std::vector<Piece> pieces_;
  int prefetched_ = 0;  // pieces [0, prefetched_) already read by prefetch()
  IoSet io_[3];
};

}  // namespace

std::unique_ptr<StateTier> make_streamed_tier(ShardedState& state, MemoryTracker& tracker) {
  return std::make_unique<StreamedTier>(state, tracker);
}

}  // namespace fsdp
