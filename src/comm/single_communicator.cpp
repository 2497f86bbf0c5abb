// SPDX-License-Identifier: MIT
#include "comm/single_communicator.hpp"

#include <cstring>

namespace fsdp::comm {
namespace {

void copy(const void* src, void* dst, std::size_t bytes) {
  if (bytes > 0 && src != dst) std::memcpy(dst, src, bytes);
}

}  // namespace

std::unique_ptr<detail::Pending> SingleCommunicator::start_all_gather(ConstVec send, Vec recv,
                                                                      bool) {
  copy(send.data(), recv.data(), send.extent(0) * sizeof(float));
  return nullptr;
}

std::unique_ptr<detail::Pending> SingleCommunicator::start_reduce_scatter(ConstVec send, Vec recv,
                                                                          ReduceOp, bool) {
  copy(send.data(), recv.data(), recv.extent(0) * sizeof(float));
  return nullptr;
}

std::unique_ptr<detail::Pending> SingleCommunicator::start_reduce_scatter_bf16(ConstBf16Vec send,
                                                                               Vec recv, ReduceOp,
                                                                               bool) {
  widen_bf16(send, recv);
  Kokkos::fence();
  return nullptr;
}

std::unique_ptr<detail::Pending> SingleCommunicator::start_all_to_all_v(
    ConstVec send, const PeerBlocks& send_blocks, Vec recv, const PeerBlocks& recv_blocks, bool) {
  copy(send.data() + send_blocks.displs[0], recv.data() + recv_blocks.displs[0],
       std::size_t(send_blocks.counts[0]) * sizeof(float));
  return nullptr;
}

void SingleCommunicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes) {
  copy(send, recv, bytes);
}

}  // namespace fsdp::comm
