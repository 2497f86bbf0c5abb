// SPDX-License-Identifier: MIT
// The one bound on nesting for what fsdp reads that nests: a JSON document (a JSONL line,
// tokenizer.json, tokenizer_config.json) and a chat template (its statements, its expressions
// and the lists and dicts it builds). Their readers, builders and the template's evaluator
// recurse once per level, so without a bound a hostile file (20,000 nested arrays, 6,000 nested
// parentheses) overflows the stack; at the limit the deepest recursion stays far inside a
// thread's stack (docs/reliability.md), and far past any real file (a tokenizer.json nests 6
// deep, Hugging Face's chat templates under 15).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace fsdp {

inline constexpr int kMaxNesting = 256;

// "nested too deep (limit 256)": how every message about it ends.
std::string nested_too_deep();

// The byte offset in `json` where its arrays and objects nest deeper than kMaxNesting (brackets
// inside strings do not count), or npos. Linear and allocation-free: run it before parsing.
std::size_t json_too_deep_at(std::string_view json);

}  // namespace fsdp
