// SPDX-License-Identifier: MIT
// A document turned into tokens and trained flags, appended to a rank's output: the document's
// tokens, then the document-end id (EOS). Text documents are trained whole; a prompt/completion
// trains the completion and the EOS; a chat trains its assistant turns (the template's
// segments) and the EOS.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/chat/chat_template.hpp"
#include "prepare/document.hpp"
#include "data/tokenizer.hpp"
#include "data/trained_mask.hpp"

namespace fsdp::prepare {

class DocumentEncoder {
 public:
  // model_dir: where the chat template is read from, the first time a chat needs it.
  DocumentEncoder(const Tokenizer& tokenizer, std::string model_dir, std::int32_t eos_id);

  // Appends d's tokens to `tokens` and their flags to `mask`. DocumentError when the template
  // cannot be loaded or rendered, or a token is past the vocabulary; on an error nothing is
  // appended.
  void encode(const Document& d, std::vector<std::int32_t>& tokens, TrainedMask& mask);

  // Whether a rendered chat held the EOS id itself (a template that ends turns with it: the
  // document boundary would then fall at every turn).
  bool chat_held_eos() const { return chat_held_eos_; }

 private:
  void encode_chat(const Document& d);

  const Tokenizer& tok_;
  std::string model_dir_;
  std::int32_t eos_;
  std::unique_ptr<ChatTemplate> chat_;  // loaded on the first chat
  ChatVariables vars_;
  bool chat_held_eos_ = false;
  // One document's tokens and flags, in runs (token count, trained), before they are appended.
  std::vector<std::int32_t> doc_;
  std::vector<std::pair<std::int64_t, bool>> runs_;
};

}  // namespace fsdp::prepare
