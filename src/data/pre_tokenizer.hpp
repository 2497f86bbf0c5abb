// SPDX-License-Identifier: MIT
// The pre-tokenizer of a byte-level tokenizer.json: Split steps (a regex or a literal, the five
// delimiter behaviours, invert) and one ByteLevel step last (optional leading space, optional
// GPT-2 split), alone or in a Sequence. Words are emitted as raw bytes; the byte-level alphabet
// is left to the model's spelling.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "data/callback.hpp"
#include "data/json_at.hpp"
#include "data/regex.hpp"

namespace fsdp {

class PreTokenizer {
 public:
  // node: tokenizer.json's "pre_tokenizer". Other pre-tokenizers (Whitespace, Metaspace,
  // Digits, ...), and a ByteLevel step that is missing or not last, are refused.
  static PreTokenizer from_json(const JsonAt& node);

  // Calls emit with each word of text, in order (never an empty one). Not thread-safe.
  void split(std::string_view text, Callback<std::string_view> emit) const;

 private:
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  struct Step {
    bool byte_level = false;
    std::unique_ptr<Regex> regex;  // Split's pattern; ByteLevel's GPT-2 pattern when use_regex
    Behavior behavior = Behavior::kIsolated;
    bool invert = false;
    bool add_prefix_space = false;  // ByteLevel
  };
  static void add_steps(const JsonAt& node, std::vector<Step>& steps);
  void run(std::size_t step, std::string_view text, Callback<std::string_view> emit) const;
  void run_split(std::size_t step, std::string_view text, Callback<std::string_view> emit) const;

  std::vector<Step> steps_;
};

}  // namespace fsdp
