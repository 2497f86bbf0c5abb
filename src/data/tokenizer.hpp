// SPDX-License-Identifier: MIT
// A Hugging Face byte-level BPE tokenizer read from its tokenizer.json (GPT-2, Llama 3.x,
// Qwen2/2.5/3, SmolLM2): encode and decode give Hugging Face's ids and text. The pipeline, in
// the order encode runs it: added tokens (added_tokens), normalizer, pre-tokenizer, BPE model
// (bpe_model, bpe_merge), post-processor; decode is the byte-level decoder. What is refused,
// and why, is in docs/data.md.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "data/added_tokens.hpp"
#include "data/bpe_model.hpp"
#include "data/normalizer.hpp"
#include "data/post_processor.hpp"
#include "data/pre_tokenizer.hpp"

namespace fsdp {

class Tokenizer {
 public:
  // path: a directory holding tokenizer.json (and tokenizer_config.json, read when present),
  // or a tokenizer.json. DataError naming the file and key for a malformed file or a tokenizer
  // of another kind.
  static Tokenizer load(const std::string& path);

  // Hugging Face's encode(text, add_special_tokens): the ids of text, and with
  // add_special_tokens what the post-processor puts around them (Llama 3.1's BOS). Added and
  // special tokens written in the text become their ids either way. DataError when text is
  // not valid UTF-8. Not thread-safe (the word cache): one Tokenizer per thread.
  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // The same, appended to out.
  void encode_into(std::string_view text, bool add_special_tokens,
                   std::vector<std::int32_t>& out) const;
  // Hugging Face's decode(ids, skip_special_tokens): the bytes of the tokens, with every
  // ill-formed UTF-8 sequence as U+FFFD; ids the tokenizer lacks are skipped, as there.
  std::string decode(const std::vector<std::int32_t>& ids, bool skip_special_tokens = false) const;

  // The ids of tokenizer_config.json's bos_token and eos_token, or -1.
  std::int32_t bos_id() const { return bos_id_; }
  std::int32_t eos_id() const { return eos_id_; }
  // The id of a token given by its text (an added token's content or a vocabulary token in
  // the byte-level spelling, e.g. "Ġthe"), or -1.
  std::int32_t token_id(const std::string& token) const;
  // One past the highest id.
  std::size_t vocab_size() const { return vocab_size_; }
  const BpeModel& model() const { return model_; }

 private:
  Tokenizer(BpeModel model, Normalizer normalizer, PreTokenizer pre_tokenizer, AddedTokens added,
            SpecialTokenTemplate special)
      : model_(std::move(model)),
        normalizer_(std::move(normalizer)),
        pre_tokenizer_(std::move(pre_tokenizer)),
        added_(std::move(added)),
        special_(std::move(special)) {}

  BpeModel model_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  AddedTokens added_;
  SpecialTokenTemplate special_;
  std::int32_t bos_id_ = -1, eos_id_ = -1;
  std::size_t vocab_size_ = 0;
};

}  // namespace fsdp
