// SPDX-License-Identifier: MIT
#include "io/atomic_output.hpp"

#include <fcntl.h>
#include <signal.h>
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

std::string temporary_name(const std::string& path) { return temp_name(path); }

int remove_stale_temporaries(const std::string& path) {
  const fs::path p(path);
  const std::string base = p.filename().string() + ".";
  std::error_code ec;
  int removed = 0;
  for (const auto& e : fs::directory_iterator(parent_of(path), ec)) {
    const std::string n = e.path().filename().string();
    // base + digits + "." + 16 hex + ".tmp", nothing else
    if (n.size() < base.size() + 1 + 1 + 16 + 4 || n.compare(0, base.size(), base) != 0) continue;
    const std::string rest = n.substr(base.size());
    const std::size_t dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos || rest.size() != dot + 1 + 16 + 4 ||
        rest.compare(rest.size() - 4, 4, ".tmp") != 0)
      continue;
    const std::string pid = rest.substr(0, dot), hex = rest.substr(dot + 1, 16);
    if (pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos ||
        hex.find_first_not_of("0123456789abcdef") != std::string::npos)
      continue;
    if (::kill(pid_t(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask
    if (e.symlink_status(ec).type() == fs::file_type::regular && ::unlink(e.path().c_str()) == 0) ++removed;
  }
  return removed;
}

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
