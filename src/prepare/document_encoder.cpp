// SPDX-License-Identifier: MIT
#include "prepare/document_encoder.hpp"

namespace fsdp::prepare {

DocumentEncoder::DocumentEncoder(const Tokenizer& tokenizer, std::string model_dir,
                                 std::int32_t eos_id)
    : tok_(tokenizer), model_dir_(std::move(model_dir)), eos_(eos_id) {
  // The template's bos_token and eos_token are the tokenizer's own (tokenizer_config.json's),
  // whatever --eos says: --eos only chooses the id that separates documents.
  if (tok_.bos_id() >= 0) vars_.bos_token = tok_.decode({tok_.bos_id()});
  if (tok_.eos_id() >= 0) vars_.eos_token = tok_.decode({tok_.eos_id()});
  vars_.add_generation_prompt = false;
}

void DocumentEncoder::encode_chat(const Document& d) {
  if (!chat_) {
    try {
      chat_ = std::make_unique<ChatTemplate>(ChatTemplate::load(model_dir_));
    } catch (const DataError& e) {
      throw DocumentError(std::string("a chat, but ") + e.what(), 0);
    }
  }
  std::vector<ChatSegment> segments;
  try {
    vars_.tools = d.tools;  // the line's own function definitions, or null (none)
    segments = chat_->render(d.messages, vars_);
  } catch (const DataError& e) {
    throw DocumentError(std::string("the chat template: ") + e.what(), 0);
  }
  // Each segment on its own, without special tokens: the template writes the BOS itself, and a
  // segment boundary is where trained and untrained text meet.
  for (const ChatSegment& s : segments) {
    const std::size_t before = doc_.size();
    tok_.encode_into(s.text, false, doc_);
    runs_.push_back({std::int64_t(doc_.size() - before), s.trained});
  }
  for (std::int32_t t : doc_)
    if (t == eos_) chat_held_eos_ = true;
}

void DocumentEncoder::encode(const Document& d, std::vector<std::int32_t>& tokens,
                             TrainedMask& mask) {
  doc_.clear();
  runs_.clear();
  try {
    switch (d.kind) {
      case DocumentKind::Text:
        tok_.encode_into(d.text, true, doc_);
        runs_.push_back({std::int64_t(doc_.size()), true});
        break;
      case DocumentKind::PromptCompletion: {
        tok_.encode_into(d.prompt, true, doc_);
        const std::int64_t prompt = std::int64_t(doc_.size());
        tok_.encode_into(d.completion, false, doc_);
        runs_.push_back({prompt, false});
        runs_.push_back({std::int64_t(doc_.size()) - prompt, true});
        break;
      }
      case DocumentKind::Messages:
        encode_chat(d);
        break;
    }
  } catch (const DataError& e) {  // the reader checked UTF-8 already; this is a backstop
    throw DocumentError(e.what(), 0);
  }
  doc_.push_back(eos_);
  runs_.push_back({1, true});
  // The tokenizer cannot give an id past its vocabulary; checked anyway, since a bad id here
  // would only be found when training reads the file.
  const auto vocab = std::int64_t(tok_.vocab_size());
  for (std::size_t i = 0; i < doc_.size(); ++i)
    if (doc_[i] < 0 || doc_[i] >= vocab)
      throw DocumentError("token id " + std::to_string(doc_[i]) + " (token " + std::to_string(i) +
                              " of the document) is past the vocabulary of " +
                              std::to_string(vocab),
                          0);
  tokens.insert(tokens.end(), doc_.begin(), doc_.end());
  for (const auto& [n, on] : runs_) mask.append(n, on);
}

}  // namespace fsdp::prepare
