// SPDX-License-Identifier: MIT
#include "io/atomic_output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace fsdp::io {
namespace fs = std::filesystem;

namespace {

std::string parent_of(const std::string& path) {
  const fs::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : std::string(".");
}

// A name no other writer uses: pid plus 64 random bits; O_EXCL refuses one that exists anyway.
std::string temp_name(const std::string& path) {
  std::random_device rd;
  const std::uint64_t r = (std::uint64_t(rd()) << 32) ^ rd();
  char buf[64];
  std::snprintf(buf, sizeof buf, ".%ld.%016llx.tmp", long(::getpid()), (unsigned long long)r);
  return path + buf;
}

}  // namespace

StagedFile::StagedFile(std::string path) : path_(std::move(path)) {
  for (int attempt = 0; attempt < 8 && fd_ < 0; ++attempt) {
    temp_ = temp_name(path_);
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    const std::string why = std::strerror(errno);
    temp_.clear();  // nothing of ours to remove
    throw std::runtime_error(path_ + ": cannot create a temporary beside it: " + why);
  }
}

StagedFile::~StagedFile() { abandon(); }

void StagedFile::abandon() {
  if (fd_ >= 0) ::close(fd_);  // the file is being thrown away: its close result says nothing
  fd_ = -1;
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

void StagedFile::fail(const std::string& why) {
  abandon();
  throw std::runtime_error(path_ + ": " + why + " (the old file, if any, is unchanged)");
}

void StagedFile::write(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::strerror(errno));
    if (n == 0) fail("write made no progress");
    p += n;
    bytes -= std::size_t(n);
    written_ += std::uint64_t(n);
  }
}

void StagedFile::finish(std::uint64_t expected_bytes) {
  if (::fsync(fd_) != 0) fail(std::string("fsync: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail(std::string("fstat: ") + std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(std::string("close: ") + std::strerror(errno));
  if (std::uint64_t(st.st_size) != expected_bytes)
    fail("wrote " + std::to_string(st.st_size) + " bytes of " + std::to_string(expected_bytes));
  finished_ = true;
}

void StagedFile::commit() {
  if (!finished_) fail("committed before it was finished");
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    fail(std::string("cannot rename the temporary over it: ") + std::strerror(errno));
  committed_ = true;
  temp_.clear();
  sync_parent(path_);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  StagedFile f(path);
  f.write(text);
  f.finish(text.size());
  f.commit();
}

void sync_parent(const std::string& path) {
  const std::string dir = parent_of(path);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(dir + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);  // read-only descriptor: nothing to lose
  if (rc != 0 && err != EINVAL)  // EINVAL: the file system cannot sync directories
    throw std::runtime_error(dir + ": fsync: " + std::strerror(err));
}

}  // namespace fsdp::io
