// SPDX-License-Identifier: MIT
#include "comm/null_communicator.hpp"

#include <cstring>

namespace fsdp::comm {

std::unique_ptr<detail::Pending> NullCommunicator::note(const char* op, double bytes) {
  if (log_) log_->push_back({op, name(), size(), bytes});
  return nullptr;
}

std::unique_ptr<detail::Pending> NullCommunicator::start_all_to_all_v(
    ConstVec, const PeerBlocks& send_blocks, Vec, const PeerBlocks&, bool) {
  double sent = 0.0;
  for (std::int64_t c : send_blocks.counts) sent += double(c);
  return note("all_to_all_v", 4.0 * sent);
}

void NullCommunicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes) {
  note("scalars", double(bytes));
  for (int q = 0; q < size(); ++q)
    std::memcpy(static_cast<char*>(recv) + std::size_t(q) * bytes, send, bytes);
}

// What this rank sends peer q is what q sends it: the counts of a balanced exchange.
void NullCommunicator::all_to_all_bytes(const void* send, void* recv, std::size_t bytes) {
  std::memcpy(recv, send, std::size_t(size()) * bytes);
}

}  // namespace fsdp::comm
