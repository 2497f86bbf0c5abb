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
#include "core/step_log.hpp"

namespace fsdp::comm {

class NullCommunicator final : public Communicator {
 public:
  // members: the group's world ranks, ascending (rank is this rank's position among them).
  // log: where each collective is issued and waited for (core/step_log.hpp), or null.
  NullCommunicator(int rank, const std::vector<int>& members, std::string name,
                   StepLog* log = nullptr);

  const char* backend() const override { return "none"; }
  bool moves_data() const override { return false; }
  void barrier() override {}
  void declare_blocking(Transfer op, double bytes) override { note(op, bytes, true); }

 protected:
  std::unique_ptr<detail::Pending> start_all_gather(ConstVec, Vec recv, bool blocking) override {
    return note(Transfer::AllGather, 4.0 * double(recv.extent(0)), blocking);
  }
  std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec send, Vec, ReduceOp,
                                                        bool blocking) override {
    return note(Transfer::ReduceScatter, 4.0 * double(send.extent(0)), blocking);
  }
  std::unique_ptr<detail::Pending> start_reduce_scatter_bf16(ConstBf16Vec send, Vec, ReduceOp,
                                                             bool blocking) override {
    return note(Transfer::ReduceScatter, 2.0 * double(send.extent(0)), blocking);
  }
  std::unique_ptr<detail::Pending> start_all_reduce(Vec buf, ReduceOp, bool blocking) override {
    return note(Transfer::AllReduce, 4.0 * double(buf.extent(0)), blocking);
  }
  void do_broadcast(Vec, int) override {}  // not a step's (initial parameters, a resume)
  void do_all_to_all(ConstVec send, Vec) override {
    note(Transfer::AllToAll, 4.0 * double(send.extent(0)), true);
  }
  std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec, const PeerBlocks& send_blocks, Vec,
                                                      const PeerBlocks&, bool) override;
  // Every rank's bytes are this rank's: agreements agree, sums are size() times the value.
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes) override;
  void all_to_all_bytes(const void* send, void* recv, std::size_t bytes) override;
  void order_after_compute() override {}  // nothing was computed

 private:
  // Issues op on the log; a blocking call is waited for at once (the backend returns nullptr),
  // a non-blocking one when the engine waits for its handle.
  std::unique_ptr<detail::Pending> note(Transfer op, double bytes, bool blocking,
                                        bool scalars = false);
  StepLog* log_;
  int group_ = -1;  // in log_
};

}  // namespace fsdp::comm
