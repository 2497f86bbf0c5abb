// SPDX-License-Identifier: MIT
#include "core/shared_arena.hpp"

#include <type_traits>

#include "core/types.hpp"

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <tuple>
#endif

namespace fsdp {
namespace {

// Small buffers share cache lines with nothing; large ones start on a page, as malloc's do.
std::size_t align_for(std::size_t bytes) { return bytes >= (std::size_t(64) << 10) ? 4096 : 64; }
std::size_t round_up(std::size_t x, std::size_t a) { return (x + a - 1) / a * a; }

#if defined(__linux__)
SharedArena* make_arena() {
  if (!std::is_same_v<DeviceSpace, HostSpace>) return nullptr;
  const char* on = std::getenv("FSDP_SHARED_ARENA");
  if (on && std::string(on) == "0") return nullptr;
  std::size_t bytes = std::size_t(sysconf(_SC_PHYS_PAGES)) * std::size_t(sysconf(_SC_PAGESIZE));
  // This rank's share of the node (the launcher says how many ranks it started here): every
  // peer maps every other's reservation, so the node's ranks together reserve about its RAM.
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    if (const char* v = std::getenv(var); v && std::atoi(v) > 1) {
      bytes /= std::size_t(std::atoi(v));
      break;
    }
  if (const char* v = std::getenv("FSDP_SHARED_ARENA_BYTES"); v && *v)
    bytes = std::size_t(std::strtoull(v, nullptr, 10));
  bytes = round_up(bytes, 1 << 21);
  if (bytes == 0) return nullptr;
  const int fd = memfd_create("fsdp-arena", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  // Sparse: only the pages buffers touch take memory.
  void* base = ftruncate(fd, off_t(bytes)) == 0
                   ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                   : MAP_FAILED;
  if (base == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  return new SharedArena(fd, static_cast<char*>(base), bytes);  // lives as long as the process
}
#else
SharedArena* make_arena() { return nullptr; }
#endif

}  // namespace

SharedArena* SharedArena::get() {
  static SharedArena* arena = make_arena();
  return arena;
}

void* SharedArena::allocate(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t align = align_for(bytes);
  bytes = round_up(bytes, 64);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {  // first fit
    const std::size_t start = round_up(it->first, align), end = it->first + it->second;
    if (start + bytes > end) continue;
    const std::size_t off = it->first, len = it->second;
    free_.erase(it);
    if (start > off) free_[off] = start - off;
    if (start + bytes < off + len) free_[start + bytes] = off + len - (start + bytes);
    taken_[start] = bytes;
    return base_ + start;
  }
  const std::size_t start = round_up(top_, align);
  if (start + bytes > capacity_) return nullptr;
  if (start > top_) free_[top_] = start - top_;
  top_ = start + bytes;
  taken_[start] = bytes;
  return base_ + start;
}

void SharedArena::release(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t off = std::size_t(static_cast<char*>(p) - base_);
  auto t = taken_.find(off);
  if (t == taken_.end()) return;
  std::size_t start = off, len = t->second;
  taken_.erase(t);
  punch(start, len);
  auto next = free_.lower_bound(start);
  if (next != free_.begin()) {  // merge with the free block before
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && start + len == next->first) {  // and the one after
    len += next->second;
    free_.erase(next);
  }
  if (start + len == top_) {
    top_ = start;  // the tail is handed out afresh
  } else {
    free_[start] = len;
  }
}

// Blocks come back here only past the buffer cache's limit (core/memory.cpp), as Kokkos' frees
// did: give their whole pages back to the OS rather than keep them resident.
void SharedArena::punch(std::size_t off, std::size_t len) {
#if defined(__linux__)
  const std::size_t page = 4096, lo = round_up(off, page), hi = (off + len) / page * page;
  // Best effort: where the file system cannot punch, the pages stay resident and are reused.
  if (fd_ >= 0 && hi >= lo + (std::size_t(64) << 10))
    (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off_t(lo), off_t(hi - lo));
#else
  (void)off, (void)len;
#endif
}

std::size_t SharedArena::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t n = 0;
  for (const auto& [off, len] : taken_) n += len;
  return n;
}

std::shared_ptr<PeerArena> PeerArena::open(std::int64_t pid, int fd, std::uintptr_t base,
                                           std::size_t bytes) {
#if defined(__linux__)
  if (pid <= 0 || fd < 0 || bytes == 0) return nullptr;
  // One mapping per peer process however many communicators reach it: each is as large as the
  // peer's whole reservation, and address space is finite.
  static std::mutex mu;
  static std::map<std::tuple<std::int64_t, int, std::uintptr_t>, std::weak_ptr<PeerArena>> maps;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = maps[{pid, fd, base}];
  if (auto mapped = slot.lock(); mapped && mapped->bytes_ == bytes) return mapped;
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int mine = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (mine < 0) return nullptr;
  void* local = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, mine, 0);
  ::close(mine);
  if (local == MAP_FAILED) return nullptr;
  std::shared_ptr<PeerArena> mapped(new PeerArena(base, bytes, static_cast<const char*>(local)));
  slot = mapped;
  return mapped;
#else
  (void)pid, (void)fd, (void)base, (void)bytes;
  return nullptr;
#endif
}

PeerArena::~PeerArena() {
#if defined(__linux__)
  munmap(const_cast<char*>(local_), bytes_);
#endif
}

}  // namespace fsdp
