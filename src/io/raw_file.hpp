// SPDX-License-Identifier: MIT
// A read-only file read by byte ranges (pread), for the weight readers: each rank reads only
// the ranges of its shard, at any offset, with no shared file position.
#pragma once
#include <cstdint>
#include <string>

#include "core/input_file.hpp"

namespace fsdp::weights {

class RawFile {
 public:
  explicit RawFile(const std::string& path);  // throws WeightsError
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
  // Exactly `bytes` bytes at `offset`, or WeightsError naming the file and `what`.
  void read(std::uint64_t offset, std::uint64_t bytes, void* out, const std::string& what) const;
  std::uint64_t size() const { return file_.size(); }

 private:
  std::string path_;
  InputFile file_;
};

// Little-endian float32 or bfloat16 values to float32.
void widen_to_f32(const void* src, bool bf16, std::int64_t n, float* out);
// Little-endian IEEE half-precision values to float32 (exact: every half is a float).
void widen_f16_to_f32(const void* src, std::int64_t n, float* out);

}  // namespace fsdp::weights
