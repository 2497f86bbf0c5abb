// SPDX-License-Identifier: MIT
// A model's chat template (tokenizer_config.json's "chat_template", or chat_template.jinja
// beside it) rendered as transformers' apply_chat_template renders it: Jinja2 with
// trim_blocks and lstrip_blocks, the variables messages, tools, bos_token, eos_token,
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
  // The tokenizer's special tokens; an empty one is left undefined, as transformers leaves a
  // token the tokenizer does not have (Qwen3's bos_token).
  std::string bos_token, eos_token;
  bool add_generation_prompt = false;
  // apply_chat_template's tools: null for none (the template sees none), else the list of
  // function definitions as given (in their key order), never trained.
  nlohmann::ordered_json tools;
};

class ChatTemplate {
 public:
  // Parses a template; a construct it cannot render is refused by a DataError
  // "<where>: chat_template: <construct> at line L is not supported".
  static ChatTemplate parse(const std::string& source, const std::string& where);
  // The template of a model directory (or a tokenizer_config.json path): DataError naming the
  // file when it has none. Of a list of named templates, "default" renders chats without tools
  // and "tool_use", where there is one, those with tools (transformers' choice).
  static ChatTemplate load(const std::string& model_dir_or_config);
  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

  // messages: a JSON array of {"role", "content", ...} objects, prepared as apply_chat_template
  // prepares them: keys whose value is null dropped; "reasoning_content", "thinking" and
  // "reasoning" copied into one another (transformers' _alias_reasoning_fields). An ordered_json
  // keeps the caller's key order, which tojson shows; a plain nlohmann::json converts (sorted).
  // DataError on a runtime error (raise_exception in the template, a missing key used as a
  // string, a bad type).
  std::vector<ChatSegment> render(const nlohmann::ordered_json& messages,
                                  const ChatVariables& vars) const;
  // The segments joined.
  std::string render_text(const nlohmann::ordered_json& messages, const ChatVariables& vars) const;

 private:
  struct Program;
  ChatTemplate(std::unique_ptr<Program> chat, std::unique_ptr<Program> tool_use);
  std::unique_ptr<Program> program_;   // null: the named templates have no "default"
  std::unique_ptr<Program> tool_use_;  // the named template "tool_use", when there is one
  std::string no_default_;             // the error for a chat without tools when program_ is null
};

}  // namespace fsdp
