// SPDX-License-Identifier: MIT
// The backend of a group that moves nothing: a rank's place in a group of any size, without the
// other ranks. The planner runs the engine's own construction and step over these (with a
// counting memory tracker, core/memory.hpp), as PyTorch's fake process group lets a model be
// traced without a cluster. Collectives check their extents and return complete handles; the
// scalar helpers answer as if every rank passed this rank's values.
#pragma once
#include "comm/communicator.hpp"

namespace fsdp::comm {

class NullCommunicator final : public Communicator {
 public:
  NullCommunicator(int rank, int size, std::string name)
      : Communicator(rank, size, std::move(name), {}) {}

  const char* backend() const override { return "none"; }
  bool moves_data() const override { return false; }
  void barrier() override {}

 protected:
  std::unique_ptr<detail::Pending> start_all_gather(ConstVec, Vec, bool) override { return nullptr; }
  std::unique_ptr<detail::Pending> start_reduce_scatter(ConstVec, Vec, ReduceOp, bool) override {
    return nullptr;
  }
  std::unique_ptr<detail::Pending> start_reduce_scatter_bf16(ConstBf16Vec, Vec, ReduceOp,
                                                             bool) override {
    return nullptr;
  }
  std::unique_ptr<detail::Pending> start_all_reduce(Vec, ReduceOp, bool) override { return nullptr; }
  void do_broadcast(Vec, int) override {}
  void do_all_to_all(ConstVec, Vec) override {}
  std::unique_ptr<detail::Pending> start_all_to_all_v(ConstVec, const PeerBlocks&, Vec,
                                                      const PeerBlocks&, bool) override {
    return nullptr;
  }
  // Every rank's bytes are this rank's: agreements agree, sums are size() times the value.
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes) override;
  void all_to_all_bytes(const void* send, void* recv, std::size_t bytes) override;
  void order_after_compute() override {}  // nothing was computed
};

}  // namespace fsdp::comm
