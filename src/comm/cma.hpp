// SPDX-License-Identifier: MIT
// Cross-memory attach (Linux process_vm_readv): copy straight out of another process's buffer,
// one copy where staging through shared memory takes two. What MPI's own shared-memory
// transport does for large messages; used by the one-node all-gather.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fsdp::comm::cma {

bool compiled();  // false off Linux: every read then fails
// Copies `bytes` from address `remote` of process `pid` to `local`; false (errno set) on failure.
bool read(std::int64_t pid, std::uintptr_t remote, void* local, std::size_t bytes);
std::int64_t self_pid();

}  // namespace fsdp::comm::cma
