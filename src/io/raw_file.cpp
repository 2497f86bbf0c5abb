// SPDX-License-Identifier: MIT
#include "io/raw_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/bf16.hpp"
#include "io/weights_error.hpp"

namespace fsdp::weights {

// A function-try-block: the member's InputError leaves as this layer's WeightsError (exit 5).
RawFile::RawFile(const std::string& path) try : path_(path), file_(path, "") {
} catch (const InputError& e) {
  throw WeightsError(e.what());
}

void RawFile::read(std::uint64_t offset, std::uint64_t bytes, void* out,
                   const std::string& what) const {
  auto* p = static_cast<char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(file_.fd(), p, bytes, off_t(offset));
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

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf, nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {  // subnormal: normalise the mantissa into a float's normal range
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    bits = sign | (std::uint32_t(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void widen_f16_to_f32(const void* src, std::int64_t n, float* out) {
  const auto* h = static_cast<const std::uint16_t*>(src);
  for (std::int64_t i = 0; i < n; ++i) out[i] = half_to_float(h[i]);
}

}  // namespace fsdp::weights
