// SPDX-License-Identifier: MIT
#include "core/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fsdp {
namespace {

// What a non-regular file is, in the words a user would look for.
const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "is a directory";
  if (S_ISFIFO(m)) return "is a FIFO";
  if (S_ISCHR(m)) return "is a character device";
  if (S_ISBLK(m)) return "is a block device";
  if (S_ISSOCK(m)) return "is a socket";
  return "is not a regular file";
}

std::string errno_text(int err) {
  return err == ENOENT ? "no such file" : std::strerror(err);
}

}  // namespace

InputFile::InputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  // O_NONBLOCK: opening a FIFO for reading waits for a writer; with it the open returns at once
  // and fstat below refuses the FIFO. A regular file ignores the flag, which is then cleared.
  do {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  } while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int err = errno;
    fail(err == EISDIR ? "is a directory" : errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(kind_of(st.st_mode));
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) fail(std::strerror(errno));
  size_ = std::uint64_t(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::fail(const std::string& why) const {
  if (fd_ >= 0) ::close(fd_);  // only called from the constructor, whose throw skips ~InputFile
  fail_open(why);
}

void InputFile::fail_open(const std::string& why) const {
  throw InputError(path_ + ": " + (what_.empty() ? "" : "cannot read " + what_ + ": ") + why);
}

std::string InputFile::read_all(std::uint64_t max_bytes) const {
  const auto too_large = [&] {
    fail_open("larger than " + std::to_string(max_bytes) + " bytes");
  };
  if (size_ > max_bytes) too_large();
  std::string text;
  char buf[1 << 16];
  for (std::uint64_t at = 0;;) {
    const ssize_t n = ::pread(fd_, buf, sizeof buf, off_t(at));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_open(std::strerror(errno));
    }
    at += std::uint64_t(n);
    if (at > max_bytes) too_large();
    text.append(buf, std::size_t(n));
  }
  return text;
}

void InputFile::read_at(std::uint64_t offset, std::uint64_t bytes, void* out,
                        const std::string& part) const {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_open(part + ": " + (n == 0 ? "the file ends early" : std::strerror(errno)));
    p += n;
    offset += std::uint64_t(n);
    bytes -= std::uint64_t(n);
  }
}

std::string read_input(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  return InputFile(path, what).read_all(max_bytes);
}

}  // namespace fsdp
