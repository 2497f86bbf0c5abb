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
  // Whether the file lost pages (truncated by someone else) since it was mapped: what was read
  // from them is zeros, not the file. Ask before trusting a result or reporting a problem.
  bool changed() const;

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int slot_ = -1;
  int fd_ = -1;   // the file, to compare its size now with the mapping's  // its entry in the SIGBUS handler's table (mapped_file.cpp); -1: none
};

}  // namespace fsdp::prepare
