// SPDX-License-Identifier: MIT
#include "data/bytes_table.hpp"

// Inlined: most keys are a few bytes, where a call into the shared library costs as much as the
// hash itself.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>
#include <stdexcept>

namespace fsdp {

std::uint64_t BytesTable::hash_of(std::string_view key) {
  const std::uint64_t h = XXH3_64bits(key.data(), key.size());
  return h == 0 ? 1 : h;  // 0 marks an empty slot
}

const std::int32_t* BytesTable::find(std::string_view key, std::size_t& count) const {
  if (slots_.empty()) return nullptr;
  const std::uint64_t h = hash_of(key);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.hash == 0) return nullptr;
    if (s.hash == h && s.key_len == key.size() &&
        std::memcmp(keys_.data() + s.key_at, key.data(), key.size()) == 0) {
      count = s.ids_len;
      return ids_.data() + s.ids_at;
    }
  }
}

void BytesTable::insert(std::string_view key, const std::int32_t* ids, std::size_t count) {
  if (keys_.size() + key.size() > UINT32_MAX || ids_.size() + count > UINT32_MAX)
    throw std::length_error("BytesTable: arena over 4 GiB");
  if (2 * (used_ + 1) > slots_.size()) grow();
  Slot s;
  s.hash = hash_of(key);
  s.key_at = std::uint32_t(keys_.size());
  s.key_len = std::uint32_t(key.size());
  s.ids_at = std::uint32_t(ids_.size());
  s.ids_len = std::uint32_t(count);
  keys_.append(key);
  ids_.insert(ids_.end(), ids, ids + count);
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = s.hash & mask;
  while (slots_[i].hash != 0) i = (i + 1) & mask;
  slots_[i] = s;
  ++used_;
}

void BytesTable::grow() {
  std::vector<Slot> old(slots_.empty() ? 64 : 2 * slots_.size());
  old.swap(slots_);
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.hash == 0) continue;
    std::size_t i = s.hash & mask;
    while (slots_[i].hash != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

std::size_t BytesTable::memory_bytes() const {
  return slots_.capacity() * sizeof(Slot) + keys_.capacity() +
         ids_.capacity() * sizeof(std::int32_t);
}

void BytesTable::clear() {
  slots_.clear();
  keys_.clear();
  ids_.clear();
  used_ = 0;
}

}  // namespace fsdp
