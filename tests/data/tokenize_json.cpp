// SPDX-License-Identifier: MIT
// The C++ side of the tokenizer comparison (tests/e2e/hf_tokenizer.sh): encodes and decodes
// JSON lists with fsdp::Tokenizer, for tests/reference/hf_tokenizer.py to compare against Hugging
// Face's own `tokenizers` library and tiktoken.
//   tokenize_json run DIR TEXTS.json IDS.json OUT.json
//       TEXTS: [{"name", "text"}], IDS: [[id, ...]] or "-" for none; OUT: {"encode": [{"plain":
//       ids, "special": ids with add_special_tokens, "decoded": decode(plain)}], "decode":
//       [{"text": decode(ids), "skip": decode(ids, skip_special_tokens)}]}
//   tokenize_json load DIR          prints vocab_size, bos and eos, or the load error (exit 1)
//   tokenize_json corpus train|val OUT.txt         the builtin corpus, for GPT-2's comparison
//   tokenize_json gpt2-decode ENCODER.json OURS.json OUT.txt
//       the first text's plain ids of a run's output decoded by Gpt2Vocabulary (encoder.json)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "data/builtin_corpus.hpp"
#include "data/data_error.hpp"
#include "data/gpt2_bpe.hpp"
#include "data/json_at.hpp"
#include "data/tokenizer.hpp"

namespace {

using nlohmann::json;

void write(const std::string& path, const json& j) {
  std::ofstream f(path);
  f << j.dump();
  if (!f) throw std::runtime_error(path + ": cannot write");
}

json encode(const fsdp::Tokenizer& t, const json& texts) {
  json out = json::array();
  for (const json& item : texts) {
    const std::string text = item.at("text").get<std::string>();
    const std::vector<std::int32_t> plain = t.encode(text, false);
    out.push_back(
        {{"plain", plain}, {"special", t.encode(text, true)}, {"decoded", t.decode(plain)}});
  }
  return out;
}

json decode(const fsdp::Tokenizer& t, const json& lists) {
  json out = json::array();
  for (const json& ids : lists) {
    const auto v = ids.get<std::vector<std::int32_t>>();
    out.push_back({{"text", t.decode(v)}, {"skip", t.decode(v, true)}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  if (!(cmd == "run" && argc == 6) && !(cmd == "load" && argc == 3) &&
      !(cmd == "corpus" && argc == 4) && !(cmd == "gpt2-decode" && argc == 5)) {
    std::fprintf(stderr,
                 "usage: tokenize_json run DIR TEXTS.json IDS.json OUT.json | load DIR | corpus "
                 "train|val OUT.txt | gpt2-decode ENCODER.json OURS.json OUT.txt\n");
    return 2;
  }
  try {
    if (cmd == "corpus") {
      std::ofstream(argv[3], std::ios::binary) << fsdp::builtin_corpus(argv[2]);
      return 0;
    }
    if (cmd == "gpt2-decode") {
      const json ours = fsdp::read_json_file(argv[3], "ids", std::uint64_t(1) << 30);
      const auto ids = ours.at("encode").at(0).at("plain").get<std::vector<std::int32_t>>();
      std::ofstream(argv[4], std::ios::binary) << fsdp::Gpt2Vocabulary::load(argv[2]).decode(ids);
      return 0;
    }
    const fsdp::Tokenizer t = fsdp::Tokenizer::load(argv[2]);
    if (cmd == "load") {
      std::printf("vocab_size %zu bos %d eos %d\n", t.vocab_size(), t.bos_id(), t.eos_id());
      return 0;
    }
    const auto input = [](const std::string& path) {
      return path == "-" ? json::array()
                         : fsdp::read_json_file(path, "input", std::uint64_t(1) << 30);
    };
    write(argv[5], {{"encode", encode(t, input(argv[3]))}, {"decode", decode(t, input(argv[4]))}});
  } catch (const fsdp::DataError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
