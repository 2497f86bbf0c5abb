// SPDX-License-Identifier: MIT
// Host memory the other ranks of the node can map: this process's tracked buffers are carved
// from one memfd, which a peer opens through /proc/<pid>/fd and maps once. A one-node collective
// then reads a peer's buffer with plain loads, summing as it reads, instead of copying it with a
// system call per piece (cma.hpp) - the CPU counterpart of NCCL's registered user buffers.
// CPU builds only (a GPU's buffers are device memory); FSDP_SHARED_ARENA=0 turns it off, and
// FSDP_SHARED_ARENA_BYTES sets the reservation (default: the machine's RAM over the ranks the
// launcher started on it; pages are only used as buffers touch them). An allocation that does not fit returns nullptr: the caller
// falls back to ordinary memory, which the collectives read the old way.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace fsdp {

class SharedArena {
 public:
  // The process's arena, made on first use; nullptr where it is off or cannot be made.
  static SharedArena* get();

  void* allocate(std::size_t bytes);  // nullptr when it does not fit
  void release(void* p);
  bool contains(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= base() && a < base() + capacity_;
  }
  int fd() const { return fd_; }
  std::uintptr_t base() const { return reinterpret_cast<std::uintptr_t>(base_); }
  std::size_t capacity() const { return capacity_; }
  std::size_t in_use() const;

  SharedArena(int fd, char* base, std::size_t capacity)
      : fd_(fd), base_(base), capacity_(capacity) {}
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

 private:
  void punch(std::size_t off, std::size_t len);  // frees the pages of a block (mu_ held)
  int fd_;
  char* base_;
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::size_t top_ = 0;                         // never handed out beyond this
  std::map<std::size_t, std::size_t> free_;     // offset -> bytes, coalesced
  std::map<std::size_t, std::size_t> taken_;    // offset -> bytes
};

// A peer's arena mapped into this process, read-only.
class PeerArena {
 public:
  // nullptr when the peer has no arena or it cannot be opened (no ptrace rights over it).
  // Every communicator that reaches the same peer shares one mapping of it.
  static std::shared_ptr<PeerArena> open(std::int64_t pid, int fd, std::uintptr_t base,
                                         std::size_t bytes);
  ~PeerArena();
  PeerArena(const PeerArena&) = delete;
  PeerArena& operator=(const PeerArena&) = delete;

  // Where [address, address + bytes) of the peer is in this process, or nullptr when it is not
  // all inside the peer's arena.
  const void* find(std::uintptr_t address, std::size_t bytes) const {
    if (address < base_ || bytes > bytes_ || address - base_ > bytes_ - bytes) return nullptr;
    return local_ + (address - base_);
  }

 private:
  PeerArena(std::uintptr_t base, std::size_t bytes, const char* local)
      : base_(base), bytes_(bytes), local_(local) {}
  std::uintptr_t base_;
  std::size_t bytes_;
  const char* local_;
};

}  // namespace fsdp
