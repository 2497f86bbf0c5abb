// SPDX-License-Identifier: MIT
#include "data/pre_tokenizer.hpp"

#include <algorithm>
#include <string>

#include "data/hf_pattern.hpp"

namespace fsdp {
namespace {

// GPT-2's split, which ByteLevel applies when use_regex is true (Oniguruma syntax).
const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Segment {
  std::size_t begin, end;
  bool match;
};

// Calls f with every piece of text in order, as Hugging Face's Pattern::find_matches lists
// them: the matches and the gaps between them, each flagged (the flags swapped by invert).
template <class F>
void for_each_segment(const Regex& regex, std::string_view text, bool invert, F&& f) {
  Regex::Cursor at;
  std::size_t prev = 0, begin = 0, end = 0;
  while (regex.next(text, at, begin, end)) {
    if (prev != begin) f(Segment{prev, begin, invert});
    f(Segment{begin, end, !invert});
    prev = end;
  }
  if (prev != text.size()) f(Segment{prev, text.size(), invert});
}

}  // namespace

void PreTokenizer::add_steps(const JsonAt& node, std::vector<Step>& steps) {
  const std::string type = node.string("type");
  if (type == "Sequence") {
    const JsonAt list = node.at("pretokenizers");
    for (std::size_t i = 0; i < list.array_size(); ++i) add_steps(list.at(i), steps);
    return;
  }
  if (!steps.empty() && steps.back().byte_level)
    node.fail("a pre-tokenizer after ByteLevel is not supported (it would see byte-level text)");
  Step s;
  if (type == "ByteLevel") {
    s.byte_level = true;
    s.add_prefix_space = node.boolean("add_prefix_space");
    if (node.boolean("use_regex", true)) {
      const std::string where = node.where() + " (GPT-2's split)";
      s.regex = std::make_unique<Regex>(pcre2_from_oniguruma(kGpt2Pattern, where), false, where);
    }
  } else if (type == "Split") {
    const JsonAt pattern = node.at("pattern");
    if (pattern.has("Regex")) {
      const JsonAt re = pattern.at("Regex");
      const std::string where = re.where();
      s.regex = std::make_unique<Regex>(pcre2_from_oniguruma(pattern.string("Regex"), where), false,
                                        where);
    } else if (pattern.has("String")) {
      s.regex =
          std::make_unique<Regex>(pattern.string("String"), true, pattern.at("String").where());
    } else {
      pattern.fail("neither a Regex nor a String");
    }
    const std::string behavior = node.string("behavior");
    const char* names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                           "Contiguous"};
    const auto it = std::find(std::begin(names), std::end(names), behavior);
    if (it == std::end(names)) node.at("behavior").fail("\"" + behavior + "\" is not a behavior");
    s.behavior = Behavior(it - std::begin(names));
    s.invert = node.boolean("invert");
  } else {
    node.at("type").fail("\"" + type +
                         "\" is not supported (only Split, ByteLevel and a Sequence of them)");
  }
  steps.push_back(std::move(s));
}

PreTokenizer PreTokenizer::from_json(const JsonAt& node) {
  PreTokenizer p;
  if (node.is_null()) node.fail("null: a byte-level BPE needs a ByteLevel pre-tokenizer");
  add_steps(node, p.steps_);
  if (p.steps_.empty() || !p.steps_.back().byte_level)
    node.fail("no ByteLevel step: not a byte-level tokenizer");
  return p;
}

void PreTokenizer::split(std::string_view text, Callback<std::string_view> emit) const {
  run(0, text, emit);
}

void PreTokenizer::run(std::size_t step, std::string_view text,
                       Callback<std::string_view> emit) const {
  if (text.empty()) return;
  if (step == steps_.size()) {
    emit(text);
    return;
  }
  const Step& s = steps_[step];
  if (!s.byte_level) {
    run_split(step, text, emit);
    return;
  }
  // ByteLevel: a space before each piece that lacks one, then GPT-2's split (isolated).
  std::string prefixed;
  if (s.add_prefix_space && text[0] != ' ') {
    prefixed.reserve(text.size() + 1);
    prefixed.append(" ").append(text);
    text = prefixed;
  }
  if (!s.regex) {
    run(step + 1, text, emit);
    return;
  }
  for_each_segment(*s.regex, text, false, [&](const Segment& g) {
    run(step + 1, text.substr(g.begin, g.end - g.begin), emit);
  });
}

void PreTokenizer::run_split(std::size_t step, std::string_view text,
                             Callback<std::string_view> emit) const {
  const Step& s = steps_[step];
  const auto down = [&](std::size_t begin, std::size_t end) {
    run(step + 1, text.substr(begin, end - begin), emit);
  };
  if (s.behavior == Behavior::kIsolated || s.behavior == Behavior::kRemoved) {
    const bool keep_matches = s.behavior == Behavior::kIsolated;
    for_each_segment(*s.regex, text, s.invert, [&](const Segment& g) {
      if (keep_matches || !g.match) down(g.begin, g.end);
    });
    return;
  }
  // The merging behaviours, folded as Hugging Face's NormalizedString::split folds them: a
  // match joins the piece before it (or after it) unless that piece was a match too;
  // Contiguous joins runs of matches and runs of gaps.
  std::vector<Segment> segments, out;
  for_each_segment(*s.regex, text, s.invert, [&](const Segment& g) { segments.push_back(g); });
  const bool next = s.behavior == Behavior::kMergedWithNext;
  if (next) std::reverse(segments.begin(), segments.end());
  bool previous_match = false;
  for (const Segment& g : segments) {
    const bool join = s.behavior == Behavior::kContiguous ? g.match == previous_match
                                                          : g.match && !previous_match;
    if (join && !out.empty()) {
      (next ? out.back().begin : out.back().end) = next ? g.begin : g.end;
    } else {
      out.push_back(g);
    }
    previous_match = g.match;
  }
  if (next) std::reverse(out.begin(), out.end());
  for (const Segment& g : out) down(g.begin, g.end);
}

}  // namespace fsdp
