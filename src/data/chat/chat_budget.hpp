// SPDX-License-Identifier: MIT
// The one budget of a chat template's render, for its work and for the size of what it builds
// (docs/reliability.md): every statement and expression the evaluator runs costs a unit of
// work, so does every 64 bytes of string it builds or copies and every 16 list items; a render
// may spend kMaxWork units, and no string, list or dict it builds, nor its output, may pass
// kMaxBytes. So three nested range(99999) loops, a string doubled in a loop, replace() or tojson
// growing a string end within seconds with one line naming the budget (a DataError, exit 3),
// not hours later or in std::bad_alloc; a real template spends a small fraction of it.
// The budget belongs to the thread that renders; outside a render the checks do nothing.
#pragma once
#include <cstddef>
#include <cstdint>

namespace fsdp::chat {

struct Value;

// The fuzz build (tests/fuzz) sets smaller ones: under the sanitizers a render of the whole
// budget takes a minute, past libFuzzer's timeout.
#ifndef FSDP_CHAT_MAX_BYTES
#define FSDP_CHAT_MAX_BYTES (std::uint64_t(64) << 20)
#endif
#ifndef FSDP_CHAT_MAX_WORK
#define FSDP_CHAT_MAX_WORK (std::uint64_t(1) << 25)
#endif
inline constexpr std::uint64_t kMaxBytes = FSDP_CHAT_MAX_BYTES;
inline constexpr std::uint64_t kMaxWork = FSDP_CHAT_MAX_WORK;

// Installs a fresh budget as this thread's for its lifetime (renders do not nest).
class RenderBudget {
 public:
  RenderBudget();
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;
  std::uint64_t spent() const { return work_; }

 private:
  friend void spend(std::uint64_t units);
  std::uint64_t work_ = 0;
  RenderBudget* previous_;
};

// Spends units of work; chat::Error once the render's budget is spent.
void spend(std::uint64_t units);
// A string of `size` bytes about to grow by `added`: chat::Error past kMaxBytes; spends
// added / 64.
void grow_string(std::uint64_t size, std::uint64_t added);
// A list or dict of `items` values holding `string_bytes` of strings, about to be built or
// copied: chat::Error past kMaxBytes; spends items / 16 + string_bytes / 64.
void build_items(std::uint64_t items, std::uint64_t string_bytes);
// What copying v costs (a string's bytes; a list or dict is shared, not copied).
void copy_value(const Value& v);

}  // namespace fsdp::chat
