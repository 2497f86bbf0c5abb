// SPDX-License-Identifier: MIT
// fsdp.offload = nvme: one rank's state in a file on a node-local disk (ZeRO-Infinity's NVMe
// tier). The file is anonymous (O_TMPFILE, else created and unlinked at once): no later run can
// mistake it for state, and the kernel frees it however the process ends. Its room is reserved
// when it opens (posix_fallocate), so a run that started cannot fill the disk later. Regions are
// 4 KiB-aligned so reads and writes bypass the page cache (O_DIRECT) from aligned buffers
// (IoBuffer); a file system without O_DIRECT (tmpfs) takes buffered I/O on the same path.
//
// One I/O thread per file works through the requests in the order they were issued, so a read
// issued after a write of the same region sees the write without any bookkeeping, and the caller
// overlaps its work with the disk by issuing early and waiting late (ticket by ticket). A failed
// request ends the job (exit 7, fatal()): a half-written moment cannot be trained on, and the
// last checkpoint stands.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/host_buffer.hpp"

namespace fsdp {

constexpr std::int64_t kIoAlign = 4096;  // O_DIRECT's alignment of offsets, sizes and buffers
inline std::int64_t io_round(std::int64_t bytes) {
  return (bytes + kIoAlign - 1) / kIoAlign * kIoAlign;
}

// The optimizer streams each shard through the host in pieces of at most this many elements
// (64 MiB of each of parameters, gradients and both moments: whole disk blocks), so its I/O
// buffers do not grow with the units (fsdp/optim/state_tier_nvme.cpp; the planner's replay too).
constexpr std::int64_t kStreamPiece = std::int64_t(16) << 20;

// Bytes of one rank's offload file: `regions` regions (RunSetup::offload_regions) of each of
// these shards (elements), each whole disk blocks. The engine and the planner both size it here.
inline std::int64_t offload_file_bytes(const std::vector<std::int64_t>& shards, int regions) {
  std::int64_t bytes = 0;
  for (std::int64_t n : shards) bytes += regions * io_round(n * 4);
  return bytes;
}

// Why offload.path cannot be used, with the exit code (2: the deck names no usable directory;
// 7: the disk: read-only, no room, in use by another job).
struct OffloadError : std::runtime_error {
  OffloadError(const std::string& what, int code) : std::runtime_error(what), code(code) {}
  int code;
};

// Host memory the file is read into and written from: kIoAlign-aligned (and pinned on a GPU
// build, so the copies to the device run on the copy engines), tracked as a CommBuffers buffer.
class IoBuffer {
 public:
  IoBuffer() = default;
  IoBuffer(MemoryTracker& t, const std::string& label, std::int64_t floats);
  bool allocated() const { return buf_.allocated(); }
  std::int64_t capacity() const { return capacity_; }  // floats, a whole number of kIoAlign
  float* data() const { return p_; }
  PinnedVec vec(std::int64_t off, std::int64_t n) const {
    return p_ ? PinnedVec(p_ + off, n) : PinnedVec();  // empty on a counting tracker
  }

 private:
  HostBuffer buf_;
  float* p_ = nullptr;
  std::int64_t capacity_ = 0;
};

// Bytes moved and time waited since the last take (the step log's I/O columns).
struct IoStats {
  double read_bytes = 0.0, write_bytes = 0.0;
  double wait_s = 0.0;  // time callers waited for requests to complete
};

class OffloadFile {
 public:
  using Ticket = std::uint64_t;

  // The checks before any file is made (every rank calls this; only lock_holder locks): dir
  // exists and is a writable directory, no other job holds it (an flock on dir's lock file,
  // taken by one rank per node, released however the process ends), and its file system has
  // room for node_bytes. Throws OffloadError.
  static std::unique_ptr<OffloadFile> prepare(const std::string& dir, std::int64_t node_bytes,
                                              bool lock_holder);
  // Creates this rank's file and reserves `bytes` (rounded to kIoAlign) in it; then starts the
  // I/O thread. Throws OffloadError.
  void open(std::int64_t bytes);
  // A file of `bytes` that exists only as a layout: regions are allocated as in a real one,
  // requests complete at once and move nothing (the planner's run of the engine on a counting
  // tracker, core/memory.hpp). log: where its requests are issued and waited for, or null.
  static std::unique_ptr<OffloadFile> counting(std::int64_t bytes, StepLog* log = nullptr);
  bool counts_only() const { return counting_; }
  ~OffloadFile();  // finishes the queued requests; removes the lock file if it holds it

  const std::string& dir() const { return dir_; }
  bool direct() const { return direct_; }  // O_DIRECT (else the file system's page cache)
  std::int64_t size() const { return size_; }
  // A region of `bytes` (rounded up to kIoAlign) at the next free offset; fatal past the size.
  std::int64_t allocate(std::int64_t bytes);
  // A new state takes the whole file over (the trainer rebuilds its engine after a failed
  // resume): waits for the requests in flight, then allocates from offset 0 again. A state
  // reads its optimizer moments as the reserved room's zeros, so where anything has been
  // written (a refused checkpoint's moments), the file is zeroed first: a fresh start is fresh.
  void begin_layout();

  // Asynchronous: buf must be kIoAlign-aligned, off a multiple of kIoAlign, bytes rounded by
  // io_round (the caller's buffers are that big). The buffer stays the caller's to keep alive
  // until wait(ticket) returns.
  Ticket read(std::int64_t off, std::int64_t bytes, void* buf);
  Ticket write(std::int64_t off, std::int64_t bytes, const void* buf);
  void wait(Ticket t);  // fatal (exit 7) if this or an earlier request failed
  bool done(Ticket t) const;  // completed (or failed: wait() then says so), without waiting
  void drain();         // waits for every request issued so far

  // Synchronous copies of any byte range (checkpoints, initialisation, tests): through a bounce
  // buffer, in the queue's order with the asynchronous requests.
  void read_now(std::int64_t off, std::int64_t bytes, void* dst);
  void write_now(std::int64_t off, std::int64_t bytes, const void* src);

  IoStats take_stats();
  IoStats totals() const;

  OffloadFile(const OffloadFile&) = delete;
  OffloadFile& operator=(const OffloadFile&) = delete;

 private:
  OffloadFile() = default;
  struct Queue;
  Ticket submit(bool write, std::int64_t off, std::int64_t bytes, void* buf);
  void zero_all();  // every byte reads as zero again, the room still reserved

  std::string dir_, lock_path_;
  int fd_ = -1, lock_fd_ = -1;
  int rank_ = -1;  // the world rank, read on the opening thread (the I/O thread calls no MPI)
  bool direct_ = false;
  bool written_ = false;  // a write was issued since the file was opened or last zeroed
  bool counting_ = false;
  Ticket counted_ = 0;  // counting(): the requests issued
  StepLog* log_ = nullptr;
  std::vector<int> logged_;  // counting() with a log: each ticket's handle in it
  std::size_t waited_ = 0;   // tickets up to this one are logged as waited for
  std::int64_t size_ = 0, next_ = 0;
  std::unique_ptr<Queue> q_;
};

}  // namespace fsdp
