// SPDX-License-Identifier: MIT
#include "data/gpt2_bpe.hpp"

#include <nlohmann/json.hpp>

#include "data/byte_level.hpp"
#include "data/data_error.hpp"
#include "data/json_at.hpp"

namespace fsdp {

Gpt2Vocabulary Gpt2Vocabulary::load(const std::string& path) {
  // An encoder.json is about 1 MiB; 64 MiB bounds what a device or a stray file can cost.
  const nlohmann::json j = read_json_file(path, "encoder", std::uint64_t(64) << 20);
  if (!j.is_object()) throw DataError(path + ": not an object of token -> id");
  Gpt2Vocabulary v;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_unsigned() || it.value().get<std::uint64_t>() >= (1u << 24))
      throw DataError(path + ": " + it.key().substr(0, 40) + ": not a token id");
    const std::size_t id = it.value().get<std::size_t>();
    std::string bytes;
    if (!byte_level_to_bytes(it.key(), bytes))
      throw DataError(path + ": token " + std::to_string(id) +
                      " holds a character outside GPT-2's byte alphabet");
    if (v.bytes_.size() <= id) v.bytes_.resize(id + 1);
    v.bytes_[id] = bytes;
  }
  return v;
}

std::string Gpt2Vocabulary::decode(const std::vector<std::int32_t>& tokens) const {
  std::string out;
  for (std::int32_t t : tokens) {
    if (t >= 0 && std::size_t(t) < bytes_.size() && !bytes_[std::size_t(t)].empty())
      out += bytes_[std::size_t(t)];
    else
      out += "<|" + std::to_string(t) + "|>";
  }
  return out;
}

// GPT-2's encoder.json is the one vocabulary format read today.
std::unique_ptr<Vocabulary> load_vocabulary(const std::string& path) {
  return std::make_unique<Gpt2Vocabulary>(Gpt2Vocabulary::load(path));
}

}  // namespace fsdp
