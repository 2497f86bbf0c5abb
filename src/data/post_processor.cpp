// SPDX-License-Identifier: MIT
#include "data/post_processor.hpp"

#include <string>

namespace fsdp {
namespace {

// TemplateProcessing's "single": special tokens before and after the one sequence $A.
SpecialTokenTemplate from_template(const JsonAt& node, std::size_t vocab) {
  SpecialTokenTemplate t;
  const JsonAt single = node.at("single");
  bool seen_a = false;
  for (std::size_t i = 0; i < single.array_size(); ++i) {
    const JsonAt item = single.at(i);
    if (item.has("Sequence")) {
      const std::string id = item.at("Sequence").string("id");
      if (id != "A" || seen_a) item.fail("a single template holds the sequence A once");
      seen_a = true;
    } else if (item.has("SpecialToken")) {
      const std::string name = item.at("SpecialToken").string("id");
      const JsonAt ids = node.at("special_tokens").at(name.c_str()).at("ids");
      for (std::size_t k = 0; k < ids.array_size(); ++k) {
        const std::int32_t id = ids.at(k).id();
        // Hugging Face takes any id here and the model then reads past its embedding table.
        if (vocab > 0 && std::size_t(id) >= vocab)
          ids.at(k).fail(std::to_string(id) + " is past the vocabulary (" + std::to_string(vocab) +
                         " ids: the model's and the added tokens)");
        (seen_a ? t.after : t.before).push_back(id);
      }
    } else {
      item.fail("neither a SpecialToken nor a Sequence");
    }
  }
  if (!seen_a) single.fail("no sequence A");
  return t;
}

}  // namespace

SpecialTokenTemplate special_token_template(const JsonAt& node, std::size_t vocab) {
  if (node.is_null()) return {};
  const std::string type = node.string("type");
  if (type == "ByteLevel") return {};
  if (type == "TemplateProcessing") return from_template(node, vocab);
  if (type == "Sequence") {
    // Each processor wraps what the ones before it made.
    SpecialTokenTemplate all;
    const JsonAt list = node.at("processors");
    for (std::size_t i = 0; i < list.array_size(); ++i) {
      SpecialTokenTemplate t = special_token_template(list.at(i), vocab);
      t.before.insert(t.before.end(), all.before.begin(), all.before.end());
      all.after.insert(all.after.end(), t.after.begin(), t.after.end());
      all.before = std::move(t.before);
    }
    return all;
  }
  node.at("type").fail("\"" + type +
                       "\" is not supported (only TemplateProcessing, ByteLevel and a Sequence "
                       "of them)");
}

}  // namespace fsdp
