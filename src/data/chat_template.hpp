// SPDX-License-Identifier: MIT
// A model's chat template (tokenizer_config.json's "chat_template", or chat_template.jinja
// beside it) rendered as transformers' apply_chat_template renders it: Jinja2 with
// trim_blocks and lstrip_blocks, the variables messages, bos_token, eos_token,
// add_generation_prompt. The output comes in segments marking which text is trained: the
// assistant turns (the rule is documented in docs/data.md).
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/data_error.hpp"

namespace fsdp {

struct ChatSegment {
  std::string text;
  bool trained = false;  // part of an assistant turn: its tokens are scored in SFT
};

struct ChatVariables {
  std::string bos_token, eos_token;
  bool add_generation_prompt = false;
};

class ChatTemplate {
 public:
  // Parses a template; a construct it cannot render is refused by a DataError
  // "<where>: chat_template: <construct> at line L is not supported".
  static ChatTemplate parse(const std::string& source, const std::string& where);
  // The template of a model directory (or a tokenizer_config.json path): DataError naming the
  // file when it has none.
  static ChatTemplate load(const std::string& model_dir_or_config);
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // messages: a JSON array of {"role", "content", ...} objects. DataError on a runtime error
  // (raise_exception in the template, a missing key used as a string, a bad type).
  std::vector<ChatSegment> render(const nlohmann::json& messages, const ChatVariables& vars) const;
  // The segments joined.
  std::string render_text(const nlohmann::json& messages, const ChatVariables& vars) const;

 private:
  struct Program;
  explicit ChatTemplate(std::unique_ptr<Program> p);
  std::unique_ptr<Program> program_;
};

}  // namespace fsdp
