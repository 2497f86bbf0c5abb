// SPDX-License-Identifier: MIT
// Data layer: token files written here and read back in each format, every load error, the
// rank-independent sampler, and the builtin corpus's size and predictability.
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/builtin_corpus.hpp"
#include "data/sampler.hpp"
#include "data/token_file.hpp"

namespace {

namespace fs = std::filesystem;
using fsdp::DataError;
using fsdp::Sampler;
using fsdp::TokenFile;

// A file under the temp dir, unique per process, removed at scope exit.
class TempFile {
 public:
  explicit TempFile(const std::string& stem)
      : path_((fs::temp_directory_path() /
               ("fsdp_test_data_" + std::to_string(::getpid()) + "_" + stem))
                  .string()) {}
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  void write(const std::vector<unsigned char>& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    REQUIRE(out.good());
  }

 private:
  std::string path_;
};

void put_u16(std::vector<unsigned char>& b, int v) {
  b.push_back(static_cast<unsigned char>(v & 0xff));
  b.push_back(static_cast<unsigned char>((v >> 8) & 0xff));
}

void put_i32(std::vector<unsigned char>& b, std::int32_t v) {
  const auto u = static_cast<std::uint32_t>(v);
  for (int s = 0; s < 32; s += 8) b.push_back(static_cast<unsigned char>((u >> s) & 0xff));
}

// An llm.c .bin: 256 int32 header (magic, version, count), then uint16 tokens.
std::vector<unsigned char> llmc_bytes(const std::vector<int>& tokens, std::int32_t magic = 20240520,
                                      std::int32_t version = 1, std::int32_t count = -1) {
  std::vector<unsigned char> b;
  put_i32(b, magic);
  put_i32(b, version);
  put_i32(b, count < 0 ? std::int32_t(tokens.size()) : count);
  b.resize(1024, 0);
  for (int t : tokens) put_u16(b, t);
  return b;
}

// llm.c's Llama 3 token file: magic 20240801, version 7, uint32 tokens.
std::vector<unsigned char> llmc32_bytes(const std::vector<std::int64_t>& tokens,
                                        std::int32_t version = 7) {
  std::vector<unsigned char> b;
  put_i32(b, 20240801);
  put_i32(b, version);
  put_i32(b, std::int32_t(tokens.size()));
  b.resize(1024, 0);
  for (std::int64_t t : tokens) put_i32(b, std::int32_t(std::uint32_t(t)));
  return b;
}

std::vector<unsigned char> u16_bytes(const std::vector<int>& tokens) {
  std::vector<unsigned char> b;
  for (int t : tokens) put_u16(b, t);
  return b;
}

// Tokens that exercise both bytes of a uint16, including GPT-2's end-of-text id.
std::vector<int> wide_tokens(int n) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 7919 + 258) % 50257);
  t.push_back(50256);
  return t;
}

// The message of the DataError that f throws; "" if none, a marker if another type is thrown.
std::string data_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  } catch (...) {
    return "<not a DataError>";
  }
  return "";
}

void check_one_line_naming(const std::string& msg, const std::string& path) {
  INFO("message: " << msg);
  CHECK_FALSE(msg.empty());
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
}

}  // namespace

TEST_CASE("llm.c token file round-trips", "[data]") {
  TempFile f("llmc.bin");
  const std::vector<int> tokens = wide_tokens(100);
  f.write(llmc_bytes(tokens));
  const TokenFile tf = TokenFile::load(f.path(), "llmc", 50257, 16);
  REQUIRE(tf.size() == std::int64_t(tokens.size()));
  for (std::size_t i = 0; i < tokens.size(); ++i) REQUIRE(tf.tokens()[i] == tokens[i]);
  CHECK(tf.name() == f.path());
}

TEST_CASE("Llama 3 token files: llm.c's uint32 files and raw uint32 round-trip", "[data]") {
  // Llama 3's vocabulary is 128,256: ids past 65,535 need four bytes.
  const std::vector<std::int64_t> tokens = {0, 1, 65535, 65536, 128000, 128255, 70000, 3, 4, 5};
  TempFile f("llama3.bin");
  f.write(llmc32_bytes(tokens));
  const TokenFile tf = TokenFile::load(f.path(), "llmc", 128256, 4);
  REQUIRE(tf.tokens() == std::vector<std::int32_t>(tokens.begin(), tokens.end()));
  TempFile raw("raw32.bin");
  std::vector<unsigned char> b;
  for (std::int64_t t : tokens) put_i32(b, std::int32_t(t));
  raw.write(b);
  REQUIRE(TokenFile::load(raw.path(), "uint32", 128256, 4).tokens() == tf.tokens());
  SECTION("a token past the vocabulary is named by index and byte offset") {
    std::vector<std::int64_t> bad = tokens;
    bad[6] = 128256;
    bad[8] = 4000000000LL;  // past INT32_MAX: reported as the file holds it, if it were first
    TempFile g("llama3_bad.bin");
    g.write(llmc32_bytes(bad));
    const std::string msg = data_error([&] { TokenFile::load(g.path(), "llmc", 128256, 4); });
    check_one_line_naming(msg, g.path());
    CHECK(msg.find("token 128256 at index 6 (byte offset 1048)") != std::string::npos);
    bad[6] = 7;
    g.write(llmc32_bytes(bad));
    CHECK(data_error([&] { TokenFile::load(g.path(), "llmc", 128256, 4); })
              .find("token 4000000000 at index 8 (byte offset 1056)") != std::string::npos);
  }
  SECTION("magic 20240801 with another version") {
    TempFile g("llama3_v1.bin");
    g.write(llmc32_bytes(tokens, 1));
    CHECK(data_error([&] { TokenFile::load(g.path(), "llmc", 128256, 4); })
              .find("version 1 for magic 20240801 (expected 7: uint32 tokens)") != std::string::npos);
  }
}

TEST_CASE("raw uint16 token file round-trips", "[data]") {
  TempFile f("raw.bin");
  const std::vector<int> tokens = {0, 1, 255, 256, 65535, 50256, 12345, 7, 8, 9};
  f.write(u16_bytes(tokens));
  const TokenFile tf = TokenFile::load(f.path(), "uint16", 65536, 4);
  REQUIRE(tf.tokens() == std::vector<std::int32_t>(tokens.begin(), tokens.end()));
}

TEST_CASE("text file is one token per byte", "[data]") {
  TempFile f("text.txt");
  // Includes a byte >= 128: it must become token 200, not a negative id.
  const std::vector<unsigned char> bytes = {'h', 'e', 'l', 'l', 'o', ' ', 200, '\n', 0};
  f.write(bytes);
  const TokenFile tf = TokenFile::load(f.path(), "text", 256, 8);
  REQUIRE(tf.tokens() == std::vector<std::int32_t>(bytes.begin(), bytes.end()));
}

TEST_CASE("builtin paths load the embedded corpus as text", "[data]") {
  const TokenFile tf = TokenFile::load("builtin:val", "llmc", 256, 64);
  const std::string& text = fsdp::builtin_corpus("val");
  REQUIRE(tf.size() == std::int64_t(text.size()));
  CHECK(tf.tokens()[0] == static_cast<unsigned char>(text[0]));
  CHECK(tf.tokens().back() == static_cast<unsigned char>(text.back()));
  check_one_line_naming(data_error([] { TokenFile::load("builtin:test", "text", 256, 8); }),
                        "builtin:test");
}

TEST_CASE("load errors are one-line DataErrors naming the file", "[data]") {
  SECTION("missing file") {
    const std::string path = (fs::temp_directory_path() / "fsdp_no_such_file.bin").string();
    const std::string msg = data_error([&] { TokenFile::load(path, "llmc", 256, 8); });
    check_one_line_naming(msg, path);
    CHECK(msg.find("no such file") != std::string::npos);
  }
  SECTION("llm.c file with the wrong magic") {
    TempFile f("badmagic.bin");
    f.write(llmc_bytes(wide_tokens(20), 12345));
    const std::string msg = data_error([&] { TokenFile::load(f.path(), "llmc", 50257, 8); });
    check_one_line_naming(msg, f.path());
    CHECK(msg.find("magic 12345, expected 20240520") != std::string::npos);
  }
  SECTION("llm.c file with the wrong version") {
    TempFile f("badversion.bin");
    f.write(llmc_bytes(wide_tokens(20), 20240520, 2));
    const std::string msg = data_error([&] { TokenFile::load(f.path(), "llmc", 50257, 8); });
    check_one_line_naming(msg, f.path());
    CHECK(msg.find("version 2") != std::string::npos);
  }
  SECTION("llm.c file whose size disagrees with its header") {
    TempFile f("truncated.bin");
    f.write(llmc_bytes(wide_tokens(20), 20240520, 1, 40));
    const std::string msg = data_error([&] { TokenFile::load(f.path(), "llmc", 50257, 8); });
    check_one_line_naming(msg, f.path());
    CHECK(msg.find("1104") != std::string::npos);  // 1024 + 2*40 expected
  }
  SECTION("llm.c file shorter than its header") {
    TempFile f("stub.bin");
    f.write({1, 2, 3});
    check_one_line_naming(data_error([&] { TokenFile::load(f.path(), "llmc", 256, 8); }), f.path());
  }
  SECTION("uint16 file with an odd size") {
    TempFile f("odd.bin");
    std::vector<unsigned char> b = u16_bytes(wide_tokens(20));
    b.push_back(1);
    f.write(b);
    const std::string msg = data_error([&] { TokenFile::load(f.path(), "uint16", 50257, 8); });
    check_one_line_naming(msg, f.path());
    CHECK(msg.find("not a multiple of 2") != std::string::npos);
  }
  SECTION("token outside the vocabulary") {
    TempFile f("range.bin");
    std::vector<int> tokens(30, 5);
    tokens[17] = 300;
    tokens[25] = 400;  // only the first offender is reported
    f.write(llmc_bytes(tokens));
    const std::string msg = data_error([&] { TokenFile::load(f.path(), "llmc", 256, 8); });
    check_one_line_naming(msg, f.path());
    CHECK(msg.find("token 300 at index 17 (byte offset 1058)") != std::string::npos);
    CHECK(msg.find("vocab_size 256") != std::string::npos);
  }
  SECTION("text byte outside a small vocabulary") {
    TempFile f("smallvocab.txt");
    f.write({'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'});
    const std::string msg = data_error([&] { TokenFile::load(f.path(), "text", 100, 4); });
    check_one_line_naming(msg, f.path());
    CHECK(msg.find("token 100 at index 3") != std::string::npos);  // 'd' == 100
  }
  SECTION("fewer than block_size + 1 tokens") {
    TempFile f("short.bin");
    f.write(u16_bytes(std::vector<int>(16, 1)));
    CHECK_NOTHROW(TokenFile::load(f.path(), "uint16", 256, 15));
    const std::string msg = data_error([&] { TokenFile::load(f.path(), "uint16", 256, 16); });
    check_one_line_naming(msg, f.path());
    CHECK(msg.find("17") != std::string::npos);
  }
  SECTION("unknown format") {
    TempFile f("fmt.bin");
    f.write(u16_bytes(wide_tokens(20)));
    check_one_line_naming(data_error([&] { TokenFile::load(f.path(), "int64", 50257, 8); }),
                          f.path());
  }
  SECTION("a directory") {
    const std::string path = fs::temp_directory_path().string();
    check_one_line_naming(data_error([&] { TokenFile::load(path, "text", 256, 8); }), path);
  }
}

namespace {

TokenFile counting_file(int n) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) t[std::size_t(i)] = i % 1000;
  return TokenFile::from_tokens("counting", std::move(t), 1000, 8);
}

}  // namespace

TEST_CASE("sampler is deterministic and rank-independent", "[data]") {
  const int T = 8;
  const TokenFile tf = counting_file(5000);
  const Sampler a(tf, T, 42), b(tf, T, 42), c(tf, T, 43);

  std::set<std::int64_t> distinct;
  int same_other_seed = 0;
  for (int step = 0; step < 20; ++step)
    for (int i = 0; i < 16; ++i) {
      const std::int64_t o = a.sample_offset(step, i);
      REQUIRE(o == b.sample_offset(step, i));
      REQUIRE(o >= 0);
      REQUIRE(o + T + 1 <= tf.size());
      same_other_seed += o == c.sample_offset(step, i);
      distinct.insert(o);
    }
  CHECK(same_other_seed < 5);
  CHECK(distinct.size() > 300);  // 320 draws from 4992 starts: few collisions expected

  SECTION("steps differ") {
    std::vector<std::int32_t> x0(4 * T), y0(4 * T), x1(4 * T), y1(4 * T);
    a.fill(0, 0, 4, x0.data(), y0.data());
    a.fill(1, 0, 4, x1.data(), y1.data());
    CHECK(x0 != x1);
  }
  SECTION("targets are the inputs shifted by one, from the sampled window") {
    std::vector<std::int32_t> x(3 * T), y(3 * T);
    a.fill(7, 5, 3, x.data(), y.data());
    for (int k = 0; k < 3; ++k) {
      const std::int64_t o = a.sample_offset(7, 5 + k);
      for (int t = 0; t < T; ++t) {
        REQUIRE(x[std::size_t(k * T + t)] == tf.tokens()[std::size_t(o + t)]);
        REQUIRE(y[std::size_t(k * T + t)] == tf.tokens()[std::size_t(o + t + 1)]);
      }
    }
  }
  SECTION("a global batch split across ranks equals the whole batch") {
    std::vector<std::int32_t> x(4 * T), y(4 * T), xs(4 * T), ys(4 * T);
    a.fill(3, 0, 4, x.data(), y.data());
    a.fill(3, 0, 2, xs.data(), ys.data());                  // rank 0 of 2
    a.fill(3, 2, 2, xs.data() + 2 * T, ys.data() + 2 * T);  // rank 1 of 2
    CHECK(x == xs);
    CHECK(y == ys);
  }
}

TEST_CASE("sampler covers the smallest file and rejects a too-short one", "[data]") {
  const TokenFile tf = counting_file(9);  // exactly block_size + 1 tokens: one window
  const Sampler s(tf, 8, 1);
  for (int i = 0; i < 10; ++i) CHECK(s.sample_offset(i, i) == 0);
  CHECK(s.num_eval_windows() == 1);
  CHECK_THROWS_AS(Sampler(tf, 9, 1), DataError);
}

TEST_CASE("eval windows tile the file in order", "[data]") {
  const int T = 8;
  const TokenFile tf = counting_file(100);
  const Sampler s(tf, T, 0);
  REQUIRE(s.num_eval_windows() == 100 / (T + 1));
  std::vector<std::int32_t> x(T), y(T);
  for (std::int64_t i = 0; i < s.num_eval_windows(); ++i) {
    s.eval_window(i, x.data(), y.data());
    for (int t = 0; t < T; ++t) {
      REQUIRE(x[std::size_t(t)] == i * (T + 1) + t);
      REQUIRE(y[std::size_t(t)] == i * (T + 1) + t + 1);
    }
  }
  CHECK_THROWS(s.eval_window(s.num_eval_windows(), x.data(), y.data()));
}

TEST_CASE("builtin corpus is sized, English-like and predictable", "[data]") {
  const std::string& train = fsdp::builtin_corpus("train");
  const std::string& val = fsdp::builtin_corpus("val");
  CHECK(train.size() >= 900000);
  CHECK(train.size() <= 1100000);
  CHECK(val.size() >= 90000);
  CHECK(val.size() <= 110000);
  CHECK(train.compare(0, 1000, val, 0, 1000) != 0);
  CHECK(&fsdp::builtin_corpus("train") == &train);  // cached, not regenerated

  std::array<double, 256> counts{};
  for (unsigned char c : train) counts[c] += 1;
  int unique = 0;
  double bits = 0;
  for (double n : counts)
    if (n > 0) {
      ++unique;
      const double p = n / double(train.size());
      bits -= p * std::log2(p);
    }
  CHECK(unique >= 30);
  CHECK(unique <= 100);
  CHECK(bits < 4.5);
  CHECK(train.find(". ") != std::string::npos);
  CHECK(train.find("\n\n") != std::string::npos);

  // Independent of any transformer: a trigram model fitted on train, interpolated down to
  // uniform, must already predict val well below ln 256 = 5.55 nats per byte.
  const int order = 2;
  std::vector<std::unordered_map<std::uint32_t, std::array<std::uint32_t, 257>>> ctx(order + 1);
  auto key = [](const std::string& s, std::size_t i, int k) {
    std::uint32_t h = 0;
    for (int j = 1; j <= k; ++j) h = h << 8 | static_cast<unsigned char>(s[i - std::size_t(j)]);
    return h;
  };
  for (std::size_t i = order; i < train.size(); ++i)
    for (int k = 0; k <= order; ++k) {
      auto& row = ctx[std::size_t(k)][key(train, i, k)];
      row[static_cast<unsigned char>(train[i])] += 1;
      row[256] += 1;  // total
    }
  double nats = 0;
  for (std::size_t i = order; i < val.size(); ++i) {
    double p = 1.0 / 256;
    for (int k = 0; k <= order; ++k) {
      const auto it = ctx[std::size_t(k)].find(key(val, i, k));
      if (it == ctx[std::size_t(k)].end()) break;
      p = (it->second[static_cast<unsigned char>(val[i])] + p) / (it->second[256] + 1.0);
    }
    nats -= std::log(p);
  }
  nats /= double(val.size() - order);
  INFO("trigram cross-entropy on val: " << nats << " nats/byte");
  CHECK(nats < 1.5);
}
