// SPDX-License-Identifier: MIT
// The backend of a one-rank group: every collective is a copy or nothing, no MPI involved, so
// single-rank runs and size-1 process groups need no communicator at all.
#pragma once
#include "comm/communicator.hpp"

namespace fsdp::comm {

class SingleCommunicator final : public Communicator {
 public:
  explicit SingleCommunicator(std::string name = "world", LinkEmulation link = {})
      : Communicator(0, 1, std::move(name), link) {}

  const char* backend() const override { return "single"; }
  void barrier() override {}

 protected:
  std::unique_ptr<detail::Pending> start_all_gather(ConstVec send, Vec recv,
                                                    bool blocking) override;
  std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec send, Vec recv, ReduceOp op,
                                                        bool blocking) override;
  std::unique_ptr<detail::Pending> start_reduce_scatter_bf16(ConstBf16Vec send, Vec recv,
                                                             ReduceOp op, bool blocking) override;
  std::unique_ptr<detail::Pending> start_all_reduce(Vec, ReduceOp, bool) override {
    return nullptr;  // the sum of one rank, and its average, are the buffer itself
  }
  void do_broadcast(Vec, int) override {}
  void do_all_to_all(ConstVec send, Vec recv) override { Kokkos::deep_copy(recv, send); }
  // The one block, from its send displacement to its recv displacement.
  std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec send, const PeerBlocks& send_blocks,
                                                      Vec recv, const PeerBlocks& recv_blocks,
                                                      bool blocking) override;
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes) override;
  void all_to_all_bytes(const void* send, void* recv, std::size_t bytes) override {
    all_gather_bytes(send, recv, bytes);  // one peer: the same copy
  }
};

}  // namespace fsdp::comm
