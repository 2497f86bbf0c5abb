// SPDX-License-Identifier: MIT
// BPE merge rules by pair of token ids: (left, right) -> (rank, merged id), in an open-addressing
// table keyed by the two ids packed into 64 bits (the merge loop looks one up per candidate pair).
#pragma once
#include <cstdint>
#include <vector>

namespace fsdp {

struct MergeRule {
  std::uint32_t rank;  // lower merges first
  std::int32_t id;     // the token the pair becomes
};

class MergeTable {
 public:
  const MergeRule* find(std::int32_t left, std::int32_t right) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t key = pack(left, right);
    for (std::size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.rule;
      if (s.key == kEmpty) return nullptr;
    }
  }
  // A pair listed twice keeps its last rule, as Hugging Face's map of merges does.
  void insert_or_assign(std::int32_t left, std::int32_t right, MergeRule rule) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    const std::uint64_t key = pack(left, right);
    std::size_t i = slot_of(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
    if (slots_[i].key == kEmpty) ++used_;
    slots_[i] = Slot{key, rule};
  }
  std::size_t size() const { return used_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t(0);  // ids are below 2^31
  struct Slot {
    std::uint64_t key = kEmpty;
    MergeRule rule{};
  };
  static std::uint64_t pack(std::int32_t l, std::int32_t r) {
    return (std::uint64_t(std::uint32_t(l)) << 32) | std::uint32_t(r);
  }
  // Fibonacci hashing: the top bits of key * 2^64/phi spread consecutive ids well.
  std::size_t slot_of(std::uint64_t key) const {
    return std::size_t((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void grow() {
    std::vector<Slot> old(slots_.empty() ? 1024 : 2 * slots_.size());
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    shift_ = 64;
    for (std::size_t n = slots_.size(); n > 1; n >>= 1) --shift_;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      std::size_t i = slot_of(s.key);
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0, used_ = 0;
  int shift_ = 64;
};

}  // namespace fsdp
