// SPDX-License-Identifier: MIT
#include "data/gpt2_bpe.hpp"

#include <nlohmann/json.hpp>


#include "core/input_file.hpp"
#include "data/data_error.hpp"

namespace fsdp {
namespace {

// The byte each code point of a token string stands for, or -1.
std::vector<int> byte_of_code_point() {
  std::vector<int> out(512, -1);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    out[std::size_t(printable ? b : next++)] = b;
  }
  return out;
}

// The code points of a UTF-8 string, or an empty vector when it is not valid UTF-8.
std::vector<std::uint32_t> code_points(const std::string& s) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + std::size_t(len) > s.size()) return {};
    std::uint32_t cp = len == 1 ? c : c & (0x7f >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out.push_back(cp);
    i += std::size_t(len);
  }
  return out;
}

}  // namespace

Gpt2Vocabulary Gpt2Vocabulary::load(const std::string& path) {
  nlohmann::json j;
  try {
    // An encoder.json is about 1 MiB; 64 MiB bounds what a device or a stray file can cost.
    j = nlohmann::json::parse(rethrow_input_as<DataError>(
        [&] { return read_input(path, "encoder", std::uint64_t(64) << 20); }));
  } catch (const nlohmann::json::exception& e) {
    throw DataError(path + ": not valid JSON (" + std::string(e.what()).substr(0, 80) + ")");
  }
  if (!j.is_object()) throw DataError(path + ": not an object of token -> id");
  static const std::vector<int> table = byte_of_code_point();
  Gpt2Vocabulary v;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_unsigned() || it.value().get<std::uint64_t>() >= (1u << 24))
      throw DataError(path + ": " + it.key().substr(0, 40) + ": not a token id");
    const std::size_t id = it.value().get<std::size_t>();
    std::string bytes;
    for (std::uint32_t cp : code_points(it.key())) {
      if (cp >= table.size() || table[cp] < 0)
        throw DataError(path + ": token " + std::to_string(id) +
                        " holds a character outside GPT-2's byte alphabet");
      bytes += char(table[cp]);
    }
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
