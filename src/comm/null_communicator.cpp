// SPDX-License-Identifier: MIT
#include "comm/null_communicator.hpp"

#include <cstring>

namespace fsdp::comm {

void NullCommunicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes) {
  for (int q = 0; q < size(); ++q)
    std::memcpy(static_cast<char*>(recv) + std::size_t(q) * bytes, send, bytes);
}

// What this rank sends peer q is what q sends it: the counts of a balanced exchange.
void NullCommunicator::all_to_all_bytes(const void* send, void* recv, std::size_t bytes) {
  std::memcpy(recv, send, std::size_t(size()) * bytes);
}

}  // namespace fsdp::comm
