// SPDX-License-Identifier: MIT
#include "comm/cma.hpp"

#if defined(__linux__)
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace fsdp::comm::cma {

#if defined(__linux__)

bool compiled() { return true; }

bool read(std::int64_t pid, std::uintptr_t remote, void* local, std::size_t bytes) {
  auto* dst = static_cast<char*>(local);
  while (bytes > 0) {  // the kernel may copy less than asked
    iovec l{dst, bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    const ssize_t got = process_vm_readv(pid_t(pid), &l, 1, &r, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    dst += got;
    remote += std::uintptr_t(got);
    bytes -= std::size_t(got);
  }
  return true;
}

std::int64_t self_pid() { return std::int64_t(getpid()); }

#else

bool compiled() { return false; }
bool read(std::int64_t, std::uintptr_t, void*, std::size_t) { return false; }
std::int64_t self_pid() { return -1; }

#endif

}  // namespace fsdp::comm::cma
