// SPDX-License-Identifier: MIT
// The BPE merge loop: start from one token per byte, then repeatedly merge the adjacent pair
// whose rule has the lowest rank (the leftmost on ties), exactly as Hugging Face's BPE does it.
// A min-heap of candidate pairs keeps a long word O(n log n); candidates made stale by an
// earlier merge are dropped when they surface. Results are cached per word: in running text
// most words have been seen before.
#include <algorithm>

#include "data/bpe_model.hpp"

namespace fsdp {
namespace {

// Words merged since the cache was emptied, and the bytes it may hold, before it starts over:
// enough for the distinct words of a few hundred MB of text at a bounded memory.
constexpr std::size_t kCacheWords = std::size_t(1) << 20;
constexpr std::size_t kCacheBytes = std::size_t(256) << 20;

}  // namespace

void BpeModel::encode_word(std::string_view word, std::vector<std::int32_t>& out) const {
  if (word.empty()) return;
  if (word.size() == 1) {
    out.push_back(byte_id_[static_cast<unsigned char>(word[0])]);
    return;
  }
  std::size_t count = 0;
  if (ignore_merges_) {
    if (const std::int32_t* id = vocab_.find(word, count)) {
      out.push_back(*id);
      return;
    }
  }
  if (const std::int32_t* ids = cache_.find(word, count)) {
    out.insert(out.end(), ids, ids + count);
    return;
  }
  ids_.clear();
  merge(word, ids_);
  if (cache_.size() >= kCacheWords || cache_.memory_bytes() >= kCacheBytes) cache_.clear();
  cache_.insert(word, ids_.data(), ids_.size());
  out.insert(out.end(), ids_.begin(), ids_.end());
}

void BpeModel::merge(std::string_view word, std::vector<std::int32_t>& out) const {
  const std::int32_t n = std::int32_t(word.size());
  symbols_.resize(std::size_t(n));
  for (std::int32_t i = 0; i < n; ++i)
    symbols_[std::size_t(i)] = {byte_id_[static_cast<unsigned char>(word[std::size_t(i)])], i - 1,
                                i + 1 < n ? i + 1 : -1, true};

  // A min-heap on (rank, position): std::*_heap build max-heaps, so the order is reversed.
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  heap_.clear();
  for (std::int32_t i = 0; i + 1 < n; ++i)
    if (const MergeRule* r =
            merges_.find(symbols_[std::size_t(i)].id, symbols_[std::size_t(i + 1)].id))
      heap_.push_back({r->rank, i, r->id});
  std::make_heap(heap_.begin(), heap_.end(), later);

  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Candidate top = heap_.back();
    heap_.pop_back();
    Symbol& left = symbols_[std::size_t(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols_[std::size_t(left.next)];
    // A stale candidate: the pair at this position has changed since it was queued. Like
    // Hugging Face, a candidate still counts when the new pair merges into the same token.
    const MergeRule* now = merges_.find(left.id, right.id);
    if (!now || now->id != top.id) continue;

    left.id = top.id;
    left.next = right.next;
    right.alive = false;
    if (right.next >= 0) symbols_[std::size_t(right.next)].prev = top.pos;
    if (left.prev >= 0)
      if (const MergeRule* r = merges_.find(symbols_[std::size_t(left.prev)].id, left.id)) {
        heap_.push_back({r->rank, left.prev, r->id});
        std::push_heap(heap_.begin(), heap_.end(), later);
      }
    if (left.next >= 0)
      if (const MergeRule* r = merges_.find(left.id, symbols_[std::size_t(left.next)].id)) {
        heap_.push_back({r->rank, top.pos, r->id});
        std::push_heap(heap_.begin(), heap_.end(), later);
      }
  }
  for (std::int32_t i = 0; i >= 0; i = symbols_[std::size_t(i)].next)
    out.push_back(symbols_[std::size_t(i)].id);
}

}  // namespace fsdp
