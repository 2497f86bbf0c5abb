// SPDX-License-Identifier: MIT
#include "data/tokenizer.hpp"

#include <algorithm>
#include <filesystem>

#include "data/byte_level.hpp"
#include "data/data_error.hpp"
#include "data/tokenizer_config.hpp"
#include "data/utf8.hpp"

namespace fsdp {
namespace {

// Only the byte-level decoder inverts byte-level encoding.
void check_decoder(const JsonAt& decoder) {
  if (decoder.is_null()) decoder.fail("null: a byte-level BPE needs the ByteLevel decoder");
  const std::string type = decoder.string("type");
  if (type != "ByteLevel")
    decoder.at("type").fail("\"" + type + "\" is not supported (only ByteLevel)");
}

// transformers' add_bos_token, where tokenizer_config.json sets it, decides whether BOS leads.
void apply_add_bos(const TokenizerConfig& config, std::int32_t bos, SpecialTokenTemplate& t) {
  if (!config.add_bos_token || bos < 0) return;
  const bool leads = !t.before.empty() && t.before.front() == bos;
  if (*config.add_bos_token && !leads) t.before.insert(t.before.begin(), bos);
  if (!*config.add_bos_token && leads) t.before.erase(t.before.begin());
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool dir = fs::is_directory(path, ec);
  const std::string file = dir ? (fs::path(path) / "tokenizer.json").string() : path;
  const std::string config_file = (fs::path(file).parent_path() / "tokenizer_config.json").string();
  // The largest published tokenizer.json files are tens of MiB (256k vocabularies).
  const nlohmann::json j = read_json_file(file, "tokenizer", std::uint64_t(512) << 20);
  const JsonAt root(j, file, "");
  root.object();
  // The model first: a tokenizer of another kind is named by model.type before anything else.
  BpeModel model = BpeModel::from_json(root.at("model"));
  // Hugging Face writes every part, null when there is none, and reads a missing one as null.
  Normalizer normalizer = Normalizer::from_json(root.at_or_null("normalizer"));
  PreTokenizer pre_tokenizer = PreTokenizer::from_json(root.at_or_null("pre_tokenizer"));
  check_decoder(root.at_or_null("decoder"));
  AddedTokens added = AddedTokens::from_json(root.at_or_null("added_tokens"), model, normalizer);
  SpecialTokenTemplate special = special_token_template(
      root.at_or_null("post_processor"), std::max(model.size(), added.max_id() + 1));

  Tokenizer t(std::move(model), std::move(normalizer), std::move(pre_tokenizer), std::move(added),
              std::move(special));
  const TokenizerConfig config = read_tokenizer_config(config_file);
  const auto id_of = [&](const std::string& token, const char* key) {
    if (token.empty()) return -1;
    const std::int32_t id = t.token_id(token);
    if (id < 0)
      throw DataError(config_file + ": " + key + ": \"" + token.substr(0, 40) +
                      "\" is not a token of " + file);
    return id;
  };
  t.bos_id_ = id_of(config.bos_token, "bos_token");
  t.eos_id_ = id_of(config.eos_token, "eos_token");
  apply_add_bos(config, t.bos_id_, t.special_);
  std::size_t size = t.model_.size();
  for (std::int32_t id : t.special_.before) size = std::max(size, std::size_t(id) + 1);
  for (std::int32_t id : t.special_.after) size = std::max(size, std::size_t(id) + 1);
  t.vocab_size_ = std::max(size, t.added_.max_id() + 1);
  return t;
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  encode_into(text, add_special_tokens, ids);
  return ids;
}

void Tokenizer::encode_into(std::string_view text, bool add_special_tokens,
                            std::vector<std::int32_t>& out) const {
  const std::size_t bad = utf8_invalid_at(text);
  if (bad != text.size())
    throw DataError("encode: the text is not valid UTF-8 at byte " + std::to_string(bad));
  if (add_special_tokens) out.insert(out.end(), special_.before.begin(), special_.before.end());
  const auto word = [&](std::string_view w) { model_.encode_word(w, out); };
  // Tokens matched on normalized text are looked for in each normalized piece between the
  // tokens matched on the raw text, as Hugging Face's AddedVocabulary does.
  const auto normalized_piece = [&](std::string_view piece, std::int32_t id) {
    if (id >= 0)
      out.push_back(id);
    else
      pre_tokenizer_.split(piece, word);
  };
  std::string scratch;
  const auto raw_piece = [&](std::string_view piece, std::int32_t id) {
    if (id >= 0) {
      out.push_back(id);
      return;
    }
    added_.split(normalizer_.apply(piece, scratch), true, normalized_piece);
  };
  added_.split(text, false, raw_piece);
  if (add_special_tokens) out.insert(out.end(), special_.after.begin(), special_.after.end());
}

std::string Tokenizer::decode(const std::vector<std::int32_t>& ids,
                              bool skip_special_tokens) const {
  std::string bytes;
  for (std::int32_t id : ids) {
    std::string_view b;
    if (added_.bytes_of(id, b)) {
      if (!(skip_special_tokens && added_.is_special(id))) bytes += b;
    } else if (model_.bytes_of(id, b)) {
      bytes += b;
    }
  }
  return utf8_lossy(bytes);
}

std::int32_t Tokenizer::token_id(const std::string& token) const {
  const std::int32_t added = added_.id_of(token);
  if (added >= 0) return added;
  std::string bytes;
  return byte_level_to_bytes(token, bytes) ? model_.id_of_bytes(bytes) : -1;
}

}  // namespace fsdp
