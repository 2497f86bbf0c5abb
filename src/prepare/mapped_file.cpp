// SPDX-License-Identifier: MIT
#include "prepare/mapped_file.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "core/input_file.hpp"

namespace fsdp::prepare {

MappedFile::MappedFile(const std::string& path) {
  const InputFile in(path, "input");  // closed at return: the mapping outlives the descriptor
  size_ = std::size_t(in.size());
  if (size_ == 0) return;  // mmap refuses an empty mapping
  data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, in.fd(), 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw InputError(path + ": cannot map input: " + std::strerror(errno));
  }
  // Read front to back once.
  ::madvise(data_, size_, MADV_SEQUENTIAL);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

}  // namespace fsdp::prepare
