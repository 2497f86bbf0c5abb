// SPDX-License-Identifier: MIT
#include "io/direct_file_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace fsdp {
namespace {

constexpr std::uint64_t kBlock = 4096;          // O_DIRECT's alignment on every file system here
constexpr std::uint64_t kBounce = 8ull << 20;   // bytes per direct write: whole blocks

std::runtime_error io_error(const std::string& path, const std::string& what, int err) {
  return std::runtime_error(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

DirectFileWriter::DirectFileWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd_ < 0) throw io_error(path_, "opening it to write its data", errno);
  direct_fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECT);  // EINVAL: not here
  void* p = nullptr;
  if (direct_fd_ >= 0 && ::posix_memalign(&p, kBlock, kBounce) != 0) {
    ::close(direct_fd_);  // no bounce buffer: everything buffered
    direct_fd_ = -1;
  }
  bounce_ = static_cast<char*>(p);
}

DirectFileWriter::~DirectFileWriter() {
  close_all();
  std::free(bounce_);
}

void DirectFileWriter::close_all() noexcept {
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
  direct_fd_ = fd_ = -1;
}

void DirectFileWriter::write_all(int fd, const char* p, std::uint64_t bytes,
                                 std::uint64_t offset) {
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && fd == direct_fd_ && errno == EINVAL) {
      // The file system refused a direct write after accepting the open (some FUSE mounts):
      // this piece and everything after go through the cache.
      ::close(direct_fd_);
      direct_fd_ = -1;
      write_all(fd_, p, bytes, offset);
      return;
    }
    if (n <= 0)
      throw io_error(path_, "writing " + std::to_string(bytes) + " bytes at offset " +
                                std::to_string(offset),
                     n < 0 ? errno : EIO);
    p += n;
    bytes -= std::uint64_t(n);
    offset += std::uint64_t(n);
  }
}

void DirectFileWriter::write(std::uint64_t offset, const void* data, std::uint64_t bytes) {
  const char* src = static_cast<const char*>(data);
  const std::uint64_t end = offset + bytes;
  const std::uint64_t a = (offset + kBlock - 1) / kBlock * kBlock, b = end / kBlock * kBlock;
  if (direct_fd_ < 0 || a >= b) {
    write_all(fd_, src, bytes, offset);
    return;
  }
  if (offset < a) write_all(fd_, src, a - offset, offset);
  for (std::uint64_t at = a; at < b;) {
    const std::uint64_t n = std::min(kBounce, b - at);
    std::memcpy(bounce_, src + (at - offset), n);
    if (direct_fd_ >= 0)
      write_all(direct_fd_, bounce_, n, at);
    else
      write_all(fd_, bounce_, n, at);
    at += n;
  }
  if (b < end) write_all(fd_, src + (b - offset), end - b, b);
}

void DirectFileWriter::finish() {
  // One fdatasync covers the inode's dirty pages whichever descriptor wrote them.
  if (::fdatasync(fd_) != 0) {
    const int err = errno;
    close_all();
    throw io_error(path_, "syncing its data to the disk", err);
  }
  close_all();
}

}  // namespace fsdp
