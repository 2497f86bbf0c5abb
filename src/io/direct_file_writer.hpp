// SPDX-License-Identifier: MIT
// Writes byte ranges of an existing file from one rank without staging them in the page cache:
// the whole disk blocks inside each range go out with O_DIRECT through one reused aligned bounce
// buffer, the unaligned ends (under a block each) through an ordinary descriptor. A checkpoint's
// data is written this way once HDF5 has laid the file out (io/checkpoint.cpp): on this
// project's VMs the kernel's copy into fresh page-cache pages ran at 0.3-0.4 GB/s and was most
// of a save's CPU time, which a background save takes from training; the disk takes direct
// writes at 1.7-2 GB/s with no copy by the CPU but the bounce buffer's.
//
// Blocks are never shared between the two paths: a block written directly lies wholly inside
// one rank's range, so no other rank (and no HDF5 metadata) writes any byte of it, and the
// partial blocks at range ends are written buffered by whichever ranks own their bytes. A file
// system without O_DIRECT (tmpfs, some FUSE mounts) takes buffered writes for everything.
#pragma once
#include <cstdint>
#include <string>

namespace fsdp {

class DirectFileWriter {
 public:
  // Opens `path` for writing (it must exist). Throws std::runtime_error naming the file.
  explicit DirectFileWriter(std::string path);
  ~DirectFileWriter();
  DirectFileWriter(const DirectFileWriter&) = delete;
  DirectFileWriter& operator=(const DirectFileWriter&) = delete;

  // `bytes` bytes of `data` at file offset `offset`. Throws std::runtime_error naming the file,
  // the offset and the system's reason (a full disk, an I/O error).
  void write(std::uint64_t offset, const void* data, std::uint64_t bytes);
  // Everything written is on the disk (fdatasync), then the descriptors are closed. Throws.
  void finish();
  bool direct() const { return direct_fd_ >= 0; }  // whether whole blocks bypass the cache

 private:
  void write_all(int fd, const char* p, std::uint64_t bytes, std::uint64_t offset);
  void close_all() noexcept;

  std::string path_;
  int fd_ = -1, direct_fd_ = -1;
  char* bounce_ = nullptr;
};

}  // namespace fsdp
