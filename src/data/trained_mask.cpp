// SPDX-License-Identifier: MIT
#include "data/trained_mask.hpp"

#include <cstdio>
#include <memory>

#include "core/input_file.hpp"

namespace fsdp {
namespace {

constexpr std::int32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 1024;

std::int64_t le_int64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return static_cast<std::int64_t>(v);
}
void put_le(unsigned char* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataError(path + ": " + what);
}

}  // namespace

void TrainedMask::append(std::int64_t n, bool on) {
  const std::int64_t first = tokens_;
  tokens_ += n;
  bits_.resize(std::size_t((tokens_ + 7) / 8), 0);
  if (!on) return;
  for (std::int64_t i = first; i < tokens_; ++i) set(i, true);
}

std::int64_t TrainedMask::trained_count() const {
  std::int64_t n = 0;
  for (std::uint8_t b : bits_) n += __builtin_popcount(b);
  return n;
}

TrainedMask TrainedMask::load(const std::string& path, std::int64_t expected_tokens) {
  const InputFile in =
      rethrow_input_as<DataError>([&] { return InputFile(path, "trained-token mask"); });
  if (in.size() < kHeaderBytes) fail(path, "shorter than the 1024-byte header of a mask file");
  unsigned char h[kHeaderBytes];
  rethrow_input_as<DataError>([&] { in.read_at(0, kHeaderBytes, h, "header read failed"); });
  std::int32_t magic = 0, version = 0;
  for (int i = 3; i >= 0; --i) magic = magic << 8 | h[i], version = version << 8 | h[4 + i];
  if (magic != kMagic) fail(path, "not a trained-token mask (magic " + std::to_string(magic) + ")");
  if (version != kVersion) fail(path, "mask version " + std::to_string(version) + " (this build reads 1)");
  const std::int64_t tokens = le_int64(h + 8), trained = le_int64(h + 16);
  if (tokens < 0 || trained < 0 || trained > tokens) fail(path, "header counts are out of range");
  if (expected_tokens >= 0 && tokens != expected_tokens)
    fail(path, "masks " + std::to_string(tokens) + " tokens but its token file holds " +
                   std::to_string(expected_tokens));
  const std::uint64_t body = std::uint64_t(tokens + 7) / 8;
  if (in.size() != kHeaderBytes + body)
    fail(path, std::to_string(in.size()) + " bytes, expected " +
                   std::to_string(kHeaderBytes + body) + " for " + std::to_string(tokens) + " tokens");
  TrainedMask m(tokens);
  m.eos_id_ = static_cast<std::int32_t>(std::uint32_t(h[24]) | std::uint32_t(h[25]) << 8 |
                                        std::uint32_t(h[26]) << 16 | std::uint32_t(h[27]) << 24);
  if (m.eos_id_ < -1) fail(path, "document end id " + std::to_string(m.eos_id_) + " is out of range");
  m.pair_id_ = std::uint64_t(le_int64(h + 28));
  const std::string tail = ".trained";
  if (m.pair_id_ != 0 && path.size() > tail.size() &&
      path.compare(path.size() - tail.size(), tail.size(), tail) == 0) {
    const std::string token_file = path.substr(0, path.size() - tail.size());
    unsigned char t[20] = {};
    rethrow_input_as<DataError>([&] {
      InputFile(token_file, "token file").read_at(0, sizeof t, t, "llm.c header");
    });
    if (std::uint64_t(le_int64(t + 12)) != m.pair_id_)
      fail(path, "is not the mask of " + token_file +
                     " (their pair ids differ: an interrupted or another fsdp-data prepare; run "
                     "prepare again)");
  }
  if (body)
    rethrow_input_as<DataError>([&] { in.read_at(kHeaderBytes, body, m.bits_.data(), "read failed"); });
  if (tokens % 8 && (m.bits_.back() >> (tokens % 8)) != 0) fail(path, "bits set past the last token");
  if (m.trained_count() != trained)
    fail(path, "header says " + std::to_string(trained) + " trained tokens, its bits hold " +
                   std::to_string(m.trained_count()));
  return m;
}

void TrainedMask::save(const std::string& path) const {
  unsigned char h[kHeaderBytes] = {};
  put_le(h, std::uint32_t(kMagic), 4);
  put_le(h + 4, std::uint32_t(kVersion), 4);
  put_le(h + 8, std::uint64_t(tokens_), 8);
  put_le(h + 16, std::uint64_t(trained_count()), 8);
  put_le(h + 24, std::uint32_t(eos_id_), 4);
  put_le(h + 28, pair_id_, 8);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail(path, "cannot be written");
  if (std::fwrite(h, 1, kHeaderBytes, f.get()) != kHeaderBytes ||
      std::fwrite(bits_.data(), 1, bits_.size(), f.get()) != bits_.size())
    fail(path, "write failed");
  if (std::fclose(f.release()) != 0) fail(path, "write failed");
}

}  // namespace fsdp
