// SPDX-License-Identifier: MIT
// Hugging Face tokenizers on small tokenizer.json files written here: the BPE merge order,
// ignore_merges, the Split behaviours, ByteLevel's prefix space and GPT-2 split, Oniguruma's
// Unicode classes, normalization forms, added tokens' flags, the post-processor's template,
// decoding, and every refusal as one line naming the file and the key. The real Llama 3 and
// Qwen3 files against an independent implementation are tests/e2e/hf_tokenizer.sh.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "data/byte_level.hpp"
#include "data/data_error.hpp"
#include "data/gpt2_bpe.hpp"
#include "data/normalizer.hpp"
#include "data/pre_tokenizer.hpp"
#include "data/tokenizer.hpp"
#include "data/utf8.hpp"

namespace {

namespace fs = std::filesystem;
using fsdp::DataError;
using fsdp::Tokenizer;
using nlohmann::json;
using Ids = std::vector<std::int32_t>;

// The byte-level spelling of raw bytes, as vocabularies write them.
std::string spell(const std::string& bytes) {
  std::string out;
  for (unsigned char b : bytes) fsdp::utf8_append(out, fsdp::byte_level_code_point(b));
  return out;
}

// A directory holding a tokenizer.json (and a tokenizer_config.json when given), removed at
// scope exit.
class TokenizerDir {
 public:
  explicit TokenizerDir(const json& tokenizer, const json& config = nullptr)
      : dir_(fs::temp_directory_path() / ("fsdp_test_tokenizer_" + std::to_string(::getpid()) +
                                          "_" + std::to_string(next_++))) {
    fs::create_directories(dir_);
    std::ofstream(dir_ / "tokenizer.json") << tokenizer.dump();
    if (!config.is_null()) std::ofstream(dir_ / "tokenizer_config.json") << config.dump();
  }
  ~TokenizerDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  TokenizerDir(const TokenizerDir&) = delete;
  TokenizerDir& operator=(const TokenizerDir&) = delete;
  std::string path() const { return dir_.string(); }
  std::string file() const { return (dir_ / "tokenizer.json").string(); }

 private:
  static inline int next_ = 0;
  fs::path dir_;
};

json byte_level(bool add_prefix_space, bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

// A byte-level BPE whose ids 0-255 are the bytes themselves (so unmerged text encodes to its
// bytes), then `tokens` in order; merges are pairs of raw byte strings.
json small_bpe(const std::vector<std::string>& tokens = {},
               const std::vector<std::pair<std::string, std::string>>& merges = {}) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[spell(std::string(1, char(b)))] = b;
  int id = 256;
  for (const std::string& t : tokens) vocab[spell(t)] = id++;
  json m = json::array();
  for (const auto& [a, b] : merges) m.push_back({spell(a), spell(b)});
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level(false, true)},
          {"post_processor", nullptr},
          {"decoder", byte_level(true, true)},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"continuing_subword_prefix", nullptr},
            {"end_of_word_suffix", nullptr},
            {"fuse_unk", false},
            {"byte_fallback", false},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", m}}}};
}

json added_token(const std::string& content, int id, bool special = true) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

Ids bytes_of(const std::string& s) {
  Ids out;
  for (unsigned char c : s) out.push_back(c);
  return out;
}

Ids concat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// The words a pre-tokenizer (tokenizer.json's "pre_tokenizer" value) cuts text into.
std::vector<std::string> words(const json& pre_tokenizer, const std::string& text) {
  const fsdp::PreTokenizer p =
      fsdp::PreTokenizer::from_json(fsdp::JsonAt(pre_tokenizer, "t", "pre_tokenizer"));
  std::vector<std::string> out;
  p.split(text, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

json split_then_bytes(json pattern, const std::string& behavior, bool invert = false) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}},
            byte_level(false, false)}}};
}

// Llama 3's split pattern, as its tokenizer.json spells it.
const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The message of the DataError that f throws (Catch's FAIL when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  FAIL("no DataError");
  return "";
}

}  // namespace

TEST_CASE("utf8: lossy decoding replaces each maximal subpart with one U+FFFD", "[tokenizer]") {
  // The Unicode standard's example (chapter 3, "U+FFFD Substitution of Maximal Subparts").
  CHECK(fsdp::utf8_lossy("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64") ==
        "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
  CHECK(fsdp::utf8_lossy("\xED\xA0\x80") == "\uFFFD\uFFFD\uFFFD");  // a surrogate's bytes
  CHECK(fsdp::utf8_lossy("\xE4\xB8") == "\uFFFD");                  // a truncated 中
  CHECK(fsdp::utf8_lossy("\xC0\xAF") == "\uFFFD\uFFFD");            // an overlong '/'
  CHECK(fsdp::utf8_lossy("ok \xE4\xB8\xAD") == "ok \xE4\xB8\xAD");
  CHECK(fsdp::utf8_invalid_at("abc\xF4\x90\x80\x80") == 3);  // past U+10FFFF
  CHECK(fsdp::utf8_invalid_at("abc") == 3);
}

TEST_CASE("byte-level alphabet: 256 printable code points, GPT-2's", "[tokenizer]") {
  std::vector<bool> seen(0x200);
  for (int b = 0; b < 256; ++b) {
    const std::uint32_t cp = fsdp::byte_level_code_point(static_cast<unsigned char>(b));
    REQUIRE(cp < seen.size());
    CHECK(!seen[cp]);
    seen[cp] = true;
    CHECK(fsdp::byte_level_byte(cp) == b);
  }
  CHECK(fsdp::byte_level_code_point(' ') == 0x120);   // Ġ
  CHECK(fsdp::byte_level_code_point('\n') == 0x10A);  // Ċ
  CHECK(fsdp::byte_level_code_point('A') == 'A');
  std::string bytes;
  CHECK(fsdp::byte_level_to_bytes("\xC4\xA0the", bytes));
  CHECK(bytes == " the");
  CHECK_FALSE(fsdp::byte_level_to_bytes("\xE4\xB8\xAD", bytes));  // 中 is not in the alphabet
}

TEST_CASE("BPE: lowest rank first, leftmost on ties, and ignore_merges", "[tokenizer]") {
  // 256 ab, 257 bc, 258 abc, 259 aa, 260 ca (no merge makes ca)
  json j =
      small_bpe({"ab", "bc", "abc", "aa", "ca"}, {{"b", "c"}, {"a", "b"}, {"a", "bc"}, {"a", "a"}});
  TokenizerDir dir(j);
  const Tokenizer t = Tokenizer::load(dir.path());
  CHECK(t.encode("abc") == Ids{258});        // b+c (rank 0) before a+b (rank 1), then a+bc
  CHECK(t.encode("abab") == Ids{256, 256});  // two a+b at the same rank: the left one first
  CHECK(t.encode("aaa") == Ids{259, 'a'});   // a+a at 0 and 1: the left one
  CHECK(t.encode("ca") == Ids{'c', 'a'});    // in the vocabulary, but no merge reaches it
  CHECK(t.encode("") == Ids{});
  j.erase("normalizer");  // a missing part is read as null, as Hugging Face reads it
  j.erase("post_processor");
  j["model"]["ignore_merges"] = true;
  TokenizerDir dir2(j);
  CHECK(Tokenizer::load(dir2.path()).encode("ca") == Ids{260});  // a word that is a token
  CHECK(Tokenizer::load(dir2.path()).encode("abc") == Ids{258});
  // The legacy "a b" form of merges gives the same.
  j["model"]["merges"] = {"#version: 0.2", spell("b") + " " + spell("c"),
                          spell("a") + " " + spell("b"), spell("a") + " " + spell("bc")};
  TokenizerDir dir3(j);
  CHECK(Tokenizer::load(dir3.path()).encode("abc") == Ids{258});
}

TEST_CASE("pre-tokenizer: the Split behaviours and invert", "[tokenizer]") {
  const json space = {{"String", " "}};
  using W = std::vector<std::string>;
  CHECK(words(split_then_bytes(space, "Removed"), "How are you doing?") ==
        W{"How", "are", "you", "doing?"});
  CHECK(words(split_then_bytes(space, "Isolated"), "How are you doing?") ==
        W{"How", " ", "are", " ", "you", " ", "doing?"});
  CHECK(words(split_then_bytes(space, "MergedWithPrevious"), "How are you doing?") ==
        W{"How ", "are ", "you ", "doing?"});
  CHECK(words(split_then_bytes(space, "MergedWithNext"), "How are you doing?") ==
        W{"How", " are", " you", " doing?"});
  CHECK(words(split_then_bytes(space, "Contiguous"), "How  are you") ==
        W{"How", "  ", "are", " ", "you"});
  // invert: the matches are the pieces kept, the text between them the delimiters.
  CHECK(words(split_then_bytes({{"Regex", "[a-z]+"}}, "Removed", true), "ab, cd!") ==
        W{"ab", "cd"});
  CHECK(words(split_then_bytes({{"Regex", "[a-z]+"}}, "MergedWithNext", true), "ab, cd!") ==
        W{"ab", ", cd", "!"});
}

TEST_CASE("pre-tokenizer: ByteLevel's prefix space per piece and GPT-2's split", "[tokenizer]") {
  using W = std::vector<std::string>;
  CHECK(words(byte_level(true, true), "Hello world") == W{" Hello", " world"});
  CHECK(words(byte_level(true, true), " it's 12 ok!!  ") ==
        W{" it", "'s", " 12", " ok", "!!", "  "});
  CHECK(words(byte_level(false, false), "a b\n") == W{"a b\n"});
  // Each piece an earlier Split made gets its own space.
  const json seq = {{"type", "Sequence"},
                    {"pretokenizers",
                     {{{"type", "Split"},
                       {"pattern", {{"String", "|"}}},
                       {"behavior", "Removed"},
                       {"invert", false}},
                      byte_level(true, false)}}};
  CHECK(words(seq, "a|b") == W{" a", " b"});
}

TEST_CASE("pre-tokenizer: Unicode classes as Oniguruma has them", "[tokenizer]") {
  using W = std::vector<std::string>;
  const json llama3 = split_then_bytes({{"Regex", kLlama3Split}}, "Isolated");
  // U+180E and U+FEFF are not White_Space (PCRE2's own \s takes U+180E, JavaScript's U+FEFF):
  // between two '!' they are punctuation, one word.
  CHECK(words(llama3, "!\u180E!") == W{"!\u180E!"});
  CHECK(words(llama3, "!\uFEFF!") == W{"!\uFEFF!"});
  CHECK(words(llama3, "!\u00A0!") == W{"!", "\u00A0", "!"});  // NBSP is whitespace
  // Case-insensitive contractions fold as Unicode does: U+017F (long s) is an s.
  CHECK(words(llama3, "x'\u017F") == W{"x", "'\u017F"});
  CHECK(words(llama3, "DON'T 12345") == W{"DON", "'T", " ", "123", "45"});
  CHECK(words(llama3, "a\r\n\r\n  b") == W{"a", "\r\n\r\n", " ", " b"});
  // Oniguruma's \w includes marks: a combining accent stays inside the word.
  CHECK(words(split_then_bytes({{"Regex", "\\w+"}}, "Removed"), "e\u0301t\u00E9 x") == W{" "});
}

TEST_CASE("normalizer: Unicode forms through utf8proc, others refused", "[tokenizer]") {
  const auto norm = [](const json& j, const std::string& text) {
    std::string scratch;
    return std::string(
        fsdp::Normalizer::from_json(fsdp::JsonAt(j, "t", "normalizer")).apply(text, scratch));
  };
  CHECK(norm({{"type", "NFC"}}, "e\u0301cole") == "\u00E9cole");
  CHECK(norm({{"type", "NFC"}}, "\u1100\u1161\u11A8") == "\uAC01");  // Hangul jamo to 각
  CHECK(norm({{"type", "NFD"}}, "\u00E9") == "e\u0301");
  CHECK(norm({{"type", "NFKC"}}, "\uFB01") == "fi");
  CHECK(norm({{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "NFC"}}}}},
             "A\u030A") == "\u00C5");
  CHECK(norm(nullptr, "e\u0301") == "e\u0301");
  CHECK(error_of([&] {
          norm({{"type", "Lowercase"}}, "A");
        }) ==
        "t: normalizer.type: \"Lowercase\" is not supported (only NFC, NFD, NFKC, NFKD and a "
        "Sequence of them)");
}

TEST_CASE("added tokens: leftmost longest, lstrip, rstrip, single_word, normalized",
          "[tokenizer]") {
  json j = small_bpe();
  j["normalizer"] = {{"type", "NFC"}};
  json lstrip = added_token("<l>", 258), rstrip = added_token("<r>", 259);
  lstrip["lstrip"] = true;
  rstrip["rstrip"] = true;
  // (ő and ű are outside the byte-level alphabet: as contents they are not vocabulary tokens)
  json word = added_token("ab", 260, false), accent = added_token("\u0151", 261, false);
  word["single_word"] = true;
  accent["normalized"] = true;
  j["added_tokens"] = {
      added_token("<a>", 256),          added_token("<a><b>", 257), lstrip, rstrip, word, accent,
      added_token("\u0171", 262, false)};
  TokenizerDir dir(j);
  const Tokenizer t = Tokenizer::load(dir.path());
  CHECK(t.encode("x<a><b>y<a>") == Ids{'x', 257, 'y', 256});
  CHECK(t.encode("a  <l>b") == Ids{'a', 258, 'b'});  // the spaces before <l> are in it
  CHECK(t.encode("<r>  b") == Ids{259, 'b'});
  // single_word: not when a word character (Unicode \w, '_' among them) touches it.
  CHECK(t.encode("ab cab ab_") == concat({{260}, bytes_of(" cab ab_")}));
  // normalized = true: matched after NFC, so a decomposed ő finds it; normalized = false
  // tokens are matched on the raw text, where a decomposed ű is not ű.
  CHECK(t.encode("o\u030B") == Ids{261});
  CHECK(t.encode("u\u030B") == bytes_of("\u0171"));
  CHECK(t.encode("\u0171") == Ids{262});
  CHECK(t.token_id("<a><b>") == 257);
  CHECK(t.token_id(spell(" ")) == ' ');
  CHECK(t.decode({'x', 257, 262}) == "x<a><b>\u0171");
  CHECK(t.decode({'x', 257, 262}, true) == "x\u0171");  // 262 is added but not special
}

TEST_CASE("post-processor: the template's tokens, add_bos_token, bos and eos", "[tokenizer]") {
  json j = small_bpe();
  j["added_tokens"] = {added_token("<s>", 256), added_token("</s>", 257)};
  const json tmpl = {{"type", "TemplateProcessing"},
                     {"single",
                      {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                       {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                       {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
                     {"pair", json::array()},
                     {"special_tokens",
                      {{"<s>", {{"id", "<s>"}, {"ids", {256}}, {"tokens", {"<s>"}}}},
                       {"</s>", {{"id", "</s>"}, {"ids", {257}}, {"tokens", {"</s>"}}}}}}};
  j["post_processor"] = {{"type", "Sequence"}, {"processors", {byte_level(true, false), tmpl}}};
  TokenizerDir dir(j, {{"bos_token", "<s>"}, {"eos_token", {{"content", "</s>"}}}});
  const Tokenizer t = Tokenizer::load(dir.path());
  CHECK(t.encode("a") == Ids{256, 'a', 257});
  CHECK(t.encode("a", false) == Ids{'a'});
  CHECK(t.encode("") == Ids{256, 257});
  CHECK(t.bos_id() == 256);
  CHECK(t.eos_id() == 257);
  CHECK(t.vocab_size() == 258);
  TokenizerDir no_bos(j, {{"bos_token", "<s>"}, {"add_bos_token", false}});
  CHECK(Tokenizer::load(no_bos.path()).encode("a") == Ids{'a', 257});
  j["post_processor"] = nullptr;
  TokenizerDir bos(j, {{"bos_token", "<s>"}, {"add_bos_token", true}});
  CHECK(Tokenizer::load(bos.path()).encode("a") == Ids{256, 'a'});
}

TEST_CASE("decode: bytes joined, then ill-formed UTF-8 replaced, unknown ids skipped",
          "[tokenizer]") {
  json j = small_bpe({"\xE4\xB8"});  // 256: the first two bytes of 中
  j["added_tokens"] = {added_token("<|end|>", 257)};
  TokenizerDir dir(j);
  const Tokenizer t = Tokenizer::load(dir.path());
  CHECK(t.decode({256, 0xAD}) == "\xE4\xB8\xAD");
  CHECK(t.decode({256, 257, 0xAD}) == "\uFFFD<|end|>\uFFFD");
  CHECK(t.decode({'a', 999999, -1, 'b'}) == "ab");
  CHECK(t.decode({'a', 257}, true) == "a");
  CHECK(t.decode(t.encode("中文 ok\r\n")) == "中文 ok\r\n");
  CHECK(error_of([&] { t.encode("a\xFF"); }) == "encode: the text is not valid UTF-8 at byte 1");
}

TEST_CASE("refusals and malformed files: one line naming the file and the key", "[tokenizer]") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    std::string message;  // after "<dir>/tokenizer.json: "
  };
  const std::vector<Case> cases = {
      {"Unigram", [](json& j) { j["model"]["type"] = "Unigram"; },
       "model.type: \"Unigram\" is not supported: only byte-level BPE (GPT-2, Llama 3, Qwen) is; "
       "SentencePiece/Unigram, WordPiece and WordLevel tokenizers are not"},
      {"byte fallback", [](json& j) { j["model"]["byte_fallback"] = true; },
       "model.byte_fallback: true: model.type \"BPE\" with byte fallback (a SentencePiece-style "
       "BPE) is not supported, only byte-level BPE is"},
      {"no model", [](json& j) { j.erase("model"); }, "model: missing"},
      {"dropout", [](json& j) { j["model"]["dropout"] = 0.1; },
       "model.dropout: BPE dropout (random merges) is not supported"},
      {"subword prefix", [](json& j) { j["model"]["continuing_subword_prefix"] = "##"; },
       "model.continuing_subword_prefix: a subword prefix or suffix is not supported in a "
       "byte-level BPE"},
      {"a byte without a token", [](json& j) { j["model"]["vocab"].erase("A"); },
       "model.vocab: byte 0x41 has no token of its own: not a byte-level BPE vocabulary"},
      {"an id that is not one", [](json& j) { j["model"]["vocab"]["A"] = "x"; },
       "model.vocab.A: not a token id (an integer from 0 to 2^31-1)"},
      {"an id twice", [](json& j) { j["model"]["vocab"]["A"] = 66; }, "is used twice"},
      {"a merge of three", [](json& j) { j["model"]["merges"] = {"a b c"}; },
       "model.merges[0]: \"a b c\" is not two tokens separated by one space"},
      {"a merge outside the vocabulary",
       [](json& j) {
         j["model"]["merges"] = json::array({json::array({"a", "zz"})});
       },
       "model.merges[0]: \"zz\" is not in model.vocab"},
      {"no pre-tokenizer", [](json& j) { j["pre_tokenizer"] = nullptr; },
       "pre_tokenizer: null: a byte-level BPE needs a ByteLevel pre-tokenizer"},
      {"Metaspace",
       [](json& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}};
       },
       "pre_tokenizer.type: \"Metaspace\" is not supported (only Split, ByteLevel and a Sequence "
       "of them)"},
      {"a split after ByteLevel",
       [](json& j) {
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {byte_level(false, false),
                                 {{"type", "Split"},
                                  {"pattern", {{"String", " "}}},
                                  {"behavior", "Removed"},
                                  {"invert", false}}}}};
       },
       "pre_tokenizer.pretokenizers[1]: a pre-tokenizer after ByteLevel is not supported"},
      {"a word boundary",
       [](json& j) {
         j["pre_tokenizer"] = split_then_bytes({{"Regex", "\\bx"}}, "Isolated");
       },
       "pre_tokenizer.pretokenizers[0].pattern.Regex: \\b is not supported (Oniguruma and PCRE2 "
       "differ on it)"},
      {"a regex that does not compile",
       [](json& j) {
         j["pre_tokenizer"] = split_then_bytes({{"Regex", "(a"}}, "Isolated");
       },
       "pre_tokenizer.pretokenizers[0].pattern.Regex: PCRE2 cannot compile the pattern: missing "
       "closing parenthesis at offset 2"},
      {"a behavior",
       [](json& j) {
         j["pre_tokenizer"] = split_then_bytes({{"String", " "}}, "Split");
       },
       "pre_tokenizer.pretokenizers[0].behavior: \"Split\" is not a behavior"},
      {"the decoder",
       [](json& j) {
         j["decoder"] = {{"type", "WordPiece"}};
       },
       "decoder.type: \"WordPiece\" is not supported (only ByteLevel)"},
      {"the post-processor",
       [](json& j) {
         j["post_processor"] = {{"type", "RobertaProcessing"}};
       },
       "post_processor.type: \"RobertaProcessing\" is not supported (only TemplateProcessing, "
       "ByteLevel and a Sequence of them)"},
      {"an added token's id", [](json& j) { j["added_tokens"] = {added_token("<x>", 999)}; },
       "added_tokens[0].id: is 999, but Hugging Face gives this token 256 (the next free id)"},
      {"an added token's flag",
       [](json& j) {
         j["added_tokens"] = {added_token("<x>", 256)};
         j["added_tokens"][0].erase("lstrip");
       },
       "added_tokens[0].lstrip: missing"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    json j = small_bpe();
    c.edit(j);
    TokenizerDir dir(j);
    const std::string msg = error_of([&] { Tokenizer::load(dir.path()); });
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.rfind(dir.file() + ": ", 0) == 0);
    INFO(msg);
    CHECK(msg.find(c.message) != std::string::npos);
  }
  TokenizerDir bad_config(small_bpe(), {{"bos_token", "<nope>"}});
  CHECK(error_of([&] { Tokenizer::load(bad_config.path()); }) ==
        bad_config.path() + "/tokenizer_config.json: bos_token: \"<nope>\" is not a token of " +
            bad_config.file());
  CHECK(error_of([&] {
          Tokenizer::load("/nonexistent/dir");
        }).rfind("/nonexistent/dir: cannot read", 0) == 0);
}

TEST_CASE("Gpt2Vocabulary: encoder.json decodes to bytes, unknown ids as <|id|>", "[tokenizer]") {
  const fs::path file =
      fs::temp_directory_path() / ("fsdp_test_encoder_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << json{{spell(" the"), 0}, {spell("\n"), 2}, {"<|endoftext|>", 3}}.dump();
  const fsdp::Gpt2Vocabulary v = fsdp::Gpt2Vocabulary::load(file.string());
  CHECK(v.decode({0, 2, 1, 3}) == " the\n<|1|><|endoftext|>");
  CHECK(v.size() == 4);
  std::ofstream(file) << json{{"\xE4\xB8\xAD", 0}}.dump();
  CHECK(error_of([&] { fsdp::Gpt2Vocabulary::load(file.string()); }) ==
        file.string() + ": token 0 holds a character outside GPT-2's byte alphabet");
  fs::remove(file);
}
