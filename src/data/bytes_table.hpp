// SPDX-License-Identifier: MIT
// A hash table from byte strings to short runs of token ids, with every key and value in two
// flat arenas (no allocation per entry; lookups by string_view): the BPE vocabulary (one id per
// key) and the cache of words already merged (their ids).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fsdp {

class BytesTable {
 public:
  // The ids stored under key and their count, or nullptr when key is absent.
  const std::int32_t* find(std::string_view key, std::size_t& count) const;
  // Stores ids[0..count) under key, which must be absent.
  void insert(std::string_view key, const std::int32_t* ids, std::size_t count);
  std::size_t size() const { return used_; }
  // Bytes held in the arenas and slots.
  std::size_t memory_bytes() const;
  void clear();

 private:
  struct Slot {
    std::uint64_t hash = 0;  // 0: empty
    std::uint32_t key_at = 0, key_len = 0, ids_at = 0, ids_len = 0;
  };
  static std::uint64_t hash_of(std::string_view key);
  void grow();

  std::vector<Slot> slots_;  // a power of two, at most half full
  std::string keys_;
  std::vector<std::int32_t> ids_;
  std::size_t used_ = 0;
};

}  // namespace fsdp
