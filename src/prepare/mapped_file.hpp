// SPDX-License-Identifier: MIT
// An input file mapped read-only: a rank touches only the pages of its share of a large JSONL
// file, and finding where its first line starts costs one memchr, not a read of what precedes it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace fsdp::prepare {

class MappedFile {
 public:
  // Opened as core/input_file opens inputs (regular files only, never blocking); InputError
  // with one line naming the file when it cannot be.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace fsdp::prepare
