// SPDX-License-Identifier: MIT
#include "data/chat/chat_budget.hpp"

#include <string>

#include "data/chat/chat_value.hpp"

namespace fsdp::chat {
namespace {

thread_local RenderBudget* current = nullptr;

std::string mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

RenderBudget::RenderBudget() : previous_(current) { current = this; }
RenderBudget::~RenderBudget() { current = previous_; }

void spend(std::uint64_t units) {
  if (!current) return;
  current->work_ += units;
  if (current->work_ > kMaxWork)
    throw Error("the template's work budget is spent (" + std::to_string(kMaxWork) +
                " steps: a loop that does not end?)");
}

void grow_string(std::uint64_t size, std::uint64_t added) {
  if (!current) return;
  if (added > kMaxBytes || size + added > kMaxBytes)
    throw Error("a string past the template's size budget (" + mib(kMaxBytes) + ")");
  spend(added / 64);
}

void build_items(std::uint64_t items, std::uint64_t string_bytes) {
  if (!current) return;
  if (items > kMaxBytes / sizeof(Value) || items * sizeof(Value) + string_bytes > kMaxBytes)
    throw Error("a list or dict past the template's size budget (" + mib(kMaxBytes) + ")");
  spend(items / 16 + string_bytes / 64);
}

void copy_value(const Value& v) {
  if (current && v.kind == Value::Kind::string) spend(v.text.s.size() / 64);
}

}  // namespace fsdp::chat
