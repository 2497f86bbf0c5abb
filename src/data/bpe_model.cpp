// SPDX-License-Identifier: MIT
// Reading the BPE model from tokenizer.json: what is refused, and how the byte-level spelling
// of the vocabulary and merges becomes raw bytes and id pairs.
#include "data/bpe_model.hpp"

#include <cstdio>

#include "data/byte_level.hpp"

namespace fsdp {
namespace {

// Refuses what is not a byte-level BPE, by the key that says so.
void check_kind(const JsonAt& model) {
  if (!model.has("type")) model.at("type").fail("missing (a byte-level BPE has \"BPE\")");
  const std::string type = model.string("type");
  if (type != "BPE")
    model.at("type").fail("\"" + type +
                          "\" is not supported: only byte-level BPE (GPT-2, Llama 3, Qwen) is; "
                          "SentencePiece/Unigram, WordPiece and WordLevel tokenizers are not");
  if (model.boolean("byte_fallback", false))
    model.at("byte_fallback")
        .fail(
            "true: model.type \"BPE\" with byte fallback (a SentencePiece-style BPE) is not "
            "supported, only byte-level BPE is");
  if (model.has("dropout") &&
      !(model.at("dropout").node().is_number() && model.at("dropout").node().get<double>() == 0.0))
    model.at("dropout").fail("BPE dropout (random merges) is not supported");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.has(affix) && model.string(affix) != "")
      model.at(affix).fail("a subword prefix or suffix is not supported in a byte-level BPE");
}

std::string quoted(const std::string& s) { return "\"" + s.substr(0, 40) + "\""; }

// The two tokens of one merge: ["a", "b"], or "a b" (exactly one space) in files written before
// tokenizers 0.20.
std::pair<std::string, std::string> merge_parts(const JsonAt& merge) {
  const nlohmann::json& n = merge.node();
  if (n.is_string()) {
    const std::string line = n.get<std::string>();
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      merge.fail(quoted(line) + " is not two tokens separated by one space");
    return {line.substr(0, space), line.substr(space + 1)};
  }
  if (!n.is_array() || n.size() != 2 || !n[0].is_string() || !n[1].is_string())
    merge.fail("not a pair of token strings");
  return {n[0].get<std::string>(), n[1].get<std::string>()};
}

}  // namespace

BpeModel BpeModel::from_json(const JsonAt& model) {
  model.object();
  check_kind(model);
  BpeModel m;
  m.ignore_merges_ = model.boolean("ignore_merges", false);

  // The vocabulary: every token's bytes. A token with a character outside the byte-level
  // alphabet can never come out of merging bytes; it still decodes, as its UTF-8 (what the
  // byte-level decoder does with such a token).
  const JsonAt vocab = model.at("vocab");
  m.byte_id_.fill(-1);
  std::string bytes;
  // Ids index tables below: one far past the entries' count (2^31-1 in a file of 300) would
  // cost gigabytes before anything else is checked. Real vocabularies number their entries
  // 0..n-1; the bound leaves room for gaps.
  const std::size_t id_bound = 2 * vocab.object().size() + 1024;
  for (const auto& entry : vocab.object().items()) {
    const std::int32_t id = vocab.member(entry.key(), entry.value()).id();
    if (std::size_t(id) >= id_bound)
      vocab.member(entry.key(), entry.value())
          .fail("id " + std::to_string(id) + " is out of range for " +
                std::to_string(vocab.object().size()) + " entries (ids up to 2 x entries + 1024)");
    bytes.clear();
    const bool byte_level = byte_level_to_bytes(entry.key(), bytes);
    if (!byte_level) bytes = entry.key();
    if (std::size_t(id) >= m.bytes_by_id_.size()) {
      m.bytes_by_id_.resize(std::size_t(id) + 1);
      m.known_.resize(std::size_t(id) + 1);
    }
    if (m.known_[std::size_t(id)])
      vocab.member(entry.key(), entry.value()).fail("id " + std::to_string(id) + " is used twice");
    m.known_[std::size_t(id)] = true;
    ++m.entries_;
    m.bytes_by_id_[std::size_t(id)] = bytes;
    if (!byte_level) continue;
    m.vocab_.insert(bytes, &id, 1);
    if (bytes.size() == 1) m.byte_id_[static_cast<unsigned char>(bytes[0])] = id;
  }
  for (int b = 0; b < 256; ++b) {
    if (m.byte_id_[std::size_t(b)] >= 0) continue;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", b);
    vocab.fail(std::string("byte ") + hex +
               " has no token of its own: not a byte-level BPE vocabulary");
  }

  // The merges, ranked by their order. A merge of tokens outside the alphabet can never apply.
  const JsonAt merges = model.at("merges");
  const std::size_t n = merges.array_size();
  std::uint32_t rank = 0;
  std::string left, right;
  for (std::size_t i = 0; i < n; ++i) {
    const JsonAt merge = merges.at(i);
    if (merge.node().is_string() &&
        merge.node().get_ref<const std::string&>().rfind("#version", 0) == 0)
      continue;  // the header line of a merges.txt, which Hugging Face skips too
    const auto [a, b] = merge_parts(merge);
    left.clear();
    right.clear();
    if (!byte_level_to_bytes(a, left) || !byte_level_to_bytes(b, right)) {
      ++rank;
      continue;
    }
    const std::int32_t l = m.id_of_bytes(left), r = m.id_of_bytes(right);
    const std::int32_t joined = m.id_of_bytes(left + right);
    if (l < 0 || r < 0 || joined < 0)
      merge.fail(quoted(l < 0 ? a : r < 0 ? b : a + b) + " is not in model.vocab");
    m.merges_.insert_or_assign(l, r, MergeRule{rank++, joined});
  }
  return m;
}

std::int32_t BpeModel::id_of_bytes(std::string_view bytes) const {
  std::size_t count = 0;
  const std::int32_t* id = vocab_.find(bytes, count);
  return id ? *id : -1;
}

bool BpeModel::bytes_of(std::int32_t id, std::string_view& out) const {
  if (id < 0 || std::size_t(id) >= known_.size() || !known_[std::size_t(id)]) return false;
  out = bytes_by_id_[std::size_t(id)];
  return true;
}

}  // namespace fsdp
