// SPDX-License-Identifier: MIT
// The backend of a group that moves nothing: a rank's place in a group of any size, without the
// other ranks. The planner runs the engine's own construction and step over these (with a
// counting memory tracker, core/memory.hpp), as PyTorch's fake process group lets a model be
// traced without a cluster. Collectives check their extents and return complete handles; the
// scalar helpers answer as if every rank passed this rank's values.
#pragma once
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace fsdp::comm {

// One collective a NullCommunicator was handed, in issue order: what the planner's timeline
// reads from the engine's own step instead of a second description of it.
struct CollectiveRecord {
  std::string op;     // all_gather | reduce_scatter | all_reduce | all_to_all | all_to_all_v |
                      // scalars (the small all-reduces of norms, losses and flags)
  std::string group;  // the group's name ("shard", "replicate", "world", a part's group, ...)
  int size = 1;       // ranks in the group
  double bytes = 0;   // the full buffer, as nccl-tests' size (all-to-all-v: what this rank sends)
};
using CollectiveLog = std::vector<CollectiveRecord>;

class NullCommunicator final : public Communicator {
 public:
  // log: where each collective is recorded (none when null).
  NullCommunicator(int rank, int size, std::string name, CollectiveLog* log = nullptr)
      : Communicator(rank, size, std::move(name), {}), log_(log) {}

  const char* backend() const override { return "none"; }
  bool moves_data() const override { return false; }
  void barrier() override {}

 protected:
  std::unique_ptr<detail::Pending> start_all_gather(ConstVec, Vec recv, bool) override {
    return note("all_gather", 4.0 * double(recv.extent(0)));
  }
  std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec send, Vec, ReduceOp,
                                                        bool) override {
    return note("reduce_scatter", 4.0 * double(send.extent(0)));
  }
  std::unique_ptr<detail::Pending> start_reduce_scatter_bf16(ConstBf16Vec send, Vec, ReduceOp,
                                                             bool) override {
    return note("reduce_scatter", 2.0 * double(send.extent(0)));
  }
  std::unique_ptr<detail::Pending> start_all_reduce(Vec buf, ReduceOp, bool) override {
    return note("all_reduce", 4.0 * double(buf.extent(0)));
  }
  void do_broadcast(Vec buf, int) override { note("broadcast", 4.0 * double(buf.extent(0))); }
  void do_all_to_all(ConstVec send, Vec) override { note("all_to_all", 4.0 * double(send.extent(0))); }
  std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec, const PeerBlocks& send_blocks, Vec,
                                                      const PeerBlocks&, bool) override;
  // Every rank's bytes are this rank's: agreements agree, sums are size() times the value.
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes) override;
  void all_to_all_bytes(const void* send, void* recv, std::size_t bytes) override;
  void order_after_compute() override {}  // nothing was computed

 private:
  std::unique_ptr<detail::Pending> note(const char* op, double bytes);
  CollectiveLog* log_;
};

}  // namespace fsdp::comm
