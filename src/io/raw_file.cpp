// SPDX-License-Identifier: MIT
#include "io/raw_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/bf16.hpp"
#include "io/weights_error.hpp"

namespace fsdp::weights {

RawFile::RawFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw WeightsError(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw WeightsError(path + ": not a regular file");
  }
  size_ = std::uint64_t(st.st_size);
}

RawFile::~RawFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RawFile::read(std::uint64_t offset, std::uint64_t bytes, void* out,
                   const std::string& what) const {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw WeightsError(path_ + ": " + what + ": " +
                         (n == 0 ? std::string("the file ends early") : std::strerror(errno)));
    p += n;
    offset += std::uint64_t(n);
    bytes -= std::uint64_t(n);
  }
}

void widen_to_f32(const void* src, bool bf16, std::int64_t n, float* out) {
  if (!bf16) {
    std::memcpy(out, src, std::size_t(n) * sizeof(float));
    return;
  }
  const auto* h = static_cast<const std::uint16_t*>(src);
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_bf16(h[i]);
}

}  // namespace fsdp::weights
