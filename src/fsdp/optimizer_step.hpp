// SPDX-License-Identifier: MIT
// The optimizer half of the step on a sharded state: the global gradient norm (each rank's
// shard norms summed in rank order over each placement's shard group), the non-finite check naming the first bad unit, clipping
// and AdamW (optim/adamw.hpp) on this rank's shard of every tensor.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

#include "config/run_config.hpp"
#include "core/host_buffer.hpp"
#include "core/offload_file.hpp"
#include "fsdp/sharded_state.hpp"
#include "optim/adamw.hpp"

namespace fsdp {

// fsdp.offload = nvme: the pieces the optimizer streams each shard in (kStreamPiece elements,
// core/offload_file.hpp, or the largest shard if smaller).
std::int64_t stream_piece(const std::vector<ShardedUnit>& units);

// Non-finite loss or gradient norm under train.on_nonfinite = abort (every rank throws it).
struct NonFiniteError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OptimizerResult {
  double grad_norm = 0.0;  // before clipping
  double lr = 0.0;
  bool skipped = false;        // non-finite and train.on_nonfinite = skip_step
  std::string nonfinite_unit;  // the first unit whose gradients are not finite, if any
};

class ShardedOptimizer {
 public:
  ShardedOptimizer(ShardedState& state, const TrainConfig& train, MemoryTracker& tracker);
  ~ShardedOptimizer();  // waits for its writes to the offload file (their buffers are its own)

  // nvme: posts the disk reads of the first pieces' state (the moments, and the parameter
  // shards on disk: nothing the backward pass changes) so they overlap the end of the step
  // rather than delay the optimizer; a no-op otherwise, or for a set still being written.
  void prefetch_state();

  // The squared global gradient norm: per-shard sums of squares, all-reduced.
  double norm2();
  // Clips by the norm sqrt(norm2) and steps every unit's shard, calling updated(u) after unit
  // u (the next step's first all-gathers start there). zero_full_grads: the update also zeroes
  // the persistent full gradients it reads (ddp, zero1). Throws NonFiniteError, or skips the
  // update, when the loss or the norm is not finite.
  OptimizerResult step(int step, double norm2, double loss, bool zero_full_grads,
                       const std::function<void(int)>& updated);

 private:
  std::string first_nonfinite_unit();
  std::vector<comm::Communicator*> placement_comms();  // by placement (null: none uses it)
  // Where AdamW runs, by fsdp.offload: none, params (everything is on the host already),
  // optimizer (the device's shards go through host staging).
  void step_on_device(const optim::AdamWStep& s, bool zero_grads,
                      const std::function<void(int)>& updated);
  void step_on_host(const optim::AdamWStep& s, const std::function<void(int)>& updated);
  void step_staged(const optim::AdamWStep& s, bool zero_grads,
                   const std::function<void(int)>& updated);
  // nvme: streams every unit's state through three I/O sets (fsdp/optimizer_nvme.cpp).
  void step_streamed(const optim::AdamWStep& s, bool zero_grads,
                     const std::function<void(int)>& updated);

  struct Staging {
    HostBuffer params, grads;  // the largest unit's shard each
  };
  // nvme: one unit's state on its way through the host: read, updated, written back. The
  // parameter shard comes from the disk (offload.params) or down from the device; the gradient
  // shard is read in place where it is host memory, else comes down into g.
  struct IoSet {
    IoBuffer p, m, v, g;
    OffloadFile::Ticket read = 0, write = 0;  // the last requests from this set's buffers
  };
  // A piece of a unit's shard: elements [lo, lo + n), in unit order (fsdp/optimizer_nvme.cpp).
  struct Piece {
    int unit;
    std::int64_t lo, n;
  };
  void read_piece(int i);  // piece i's disk reads into set i % 3
  std::vector<Piece> pieces_;
  int prefetched_ = 0;  // pieces [0, prefetched_) already read by prefetch_state
  ShardedState& state_;
  const TrainConfig& train_;
  Staging staging_[2];  // offload = optimizer only
  IoSet io_[3];         // offload = nvme only
};

}  // namespace fsdp
