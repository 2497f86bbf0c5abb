// SPDX-License-Identifier: MIT
// Distributed Muon's middle: after the momentum pass (fsdp/optim/update_rules.hpp) each Muon matrix's
// update lies in the gradient shards of its part's shard group. Round by round (a unit's part
// each), every rank sends its slices of each matrix to the matrix's owner (fsdp/optim/muon_owners.hpp)
// in one all-to-all-v, the owner runs Newton-Schulz on the whole matrix (fsdp/optim/newton_schulz.hpp)
// and a second all-to-all-v brings each rank its slices of the result, in place of the update.
// The next round's gather is in flight while this round's owners iterate. Only bits move, and
// the iteration sees the whole matrix, so the result is the same at any rank count.
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "core/memory.hpp"
#include "fsdp/optim/muon_owners.hpp"

namespace fsdp {

class ShardedState;

class MuonExchange {
 public:
  MuonExchange(ShardedState& state, MemoryTracker& tracker, int ns_steps, bool bf16);
  void orthogonalise();
  // This rank's Newton-Schulz FLOPs per step, and the bytes it sent in the last step.
  double flops() const { return flops_; }

 private:
  struct Piece {  // n elements between a rank's gradient shard and an exchange buffer
    std::int64_t shard_at, buf_at, n;
  };
  struct Owned {  // a matrix this rank orthogonalises, at `at` in the gathered buffer
    std::int64_t at, rows, cols;
  };
  struct Round {
    int unit = 0;
    comm::Communicator* comm = nullptr;
    comm::PeerBlocks send, recv;          // the gather's; the return swaps them
    std::vector<Piece> mine;              // gradient shard <-> send buffer
    std::vector<Piece> theirs;            // recv buffer <-> gathered matrices
    std::vector<Owned> owned;
  };
  void pack(const Round& r, const Vec& send);
  void unpack(const Round& r, const Vec& send);

  ShardedState& state_;
  int ns_steps_;
  bool bf16_;  // muon.ns_dtype = bf16
  bool counted_;  // a counting tracker (the planner's run): the rounds run, nothing moves
  StepLog* log_;  // its log: each round's Newton-Schulz FLOPs
  double flops_ = 0.0;
  std::vector<Round> rounds_;
  TrackedBuffer send_[2], recv_[2], gathered_, work_;
};

}  // namespace fsdp
