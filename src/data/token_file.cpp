// SPDX-License-Identifier: MIT
// Token file readers. Files are decoded as little-endian byte by byte so the result does not
// depend on the host, and read in chunks so a large file is never held twice.
#include "data/token_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/input_file.hpp"
#include "data/builtin_corpus.hpp"

namespace fsdp {
namespace {

// llm.c's token files: GPT-2's (uint16 tokens) and, for vocabularies over 65,535, the
// Llama 3 branch's (uint32 tokens).
constexpr std::int32_t kLlmcMagic = 20240520;
constexpr std::int32_t kLlmcVersion = 1;
constexpr std::int32_t kLlmc32Magic = 20240801;
constexpr std::int32_t kLlmc32Version = 7;
constexpr std::int64_t kLlmcHeaderBytes = 256 * 4;
constexpr const char* kBuiltinPrefix = "builtin:";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataError(path + ": " + what);
}

std::int32_t le_int32(const unsigned char* p) {
  std::uint32_t v = std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
                    std::uint32_t(p[3]) << 24;
  return static_cast<std::int32_t>(v);
}

// The token file opened as an input: a FIFO, device or directory is refused by its kind and
// never waited on.
InputFile open_checked(const std::string& path) {
  return rethrow_input_as<DataError>([&] { return InputFile(path, "token file"); });
}

// Reads `count` tokens of `width` bytes (1, 2 or 4, little-endian) from byte `offset`.
// A uint32 past INT32_MAX becomes negative, which the range check refuses.
std::vector<std::int32_t> read_tokens(const InputFile& in, std::int64_t offset, std::int64_t count,
                                      int width) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(count));
  std::vector<unsigned char> buf(std::size_t(1) << 20);
  const std::int64_t per_chunk = static_cast<std::int64_t>(buf.size()) / width;
  for (std::int64_t done = 0; done < count;) {
    const std::int64_t n = std::min(per_chunk, count - done);
    rethrow_input_as<DataError>([&] {
      in.read_at(std::uint64_t(offset + done * width), std::uint64_t(n * width), buf.data(),
                 "read failed after " + std::to_string(done) + " of " + std::to_string(count) +
                     " tokens");
    });
    std::int32_t* dst = out.data() + done;
    if (width == 1) {
      for (std::int64_t i = 0; i < n; ++i) dst[i] = buf[i];
    } else if (width == 2) {
      for (std::int64_t i = 0; i < n; ++i) dst[i] = buf[2 * i] | buf[2 * i + 1] << 8;
    } else {
      for (std::int64_t i = 0; i < n; ++i) dst[i] = le_int32(&buf[std::size_t(4 * i)]);
    }
    done += n;
  }
  return out;
}

// Tokens and where they start in the file (the header's bytes and each token's width), so a
// bad token can be named by its byte offset.
struct Loaded {
  std::vector<std::int32_t> tokens;
  std::int64_t header = 0;
  int width = 1;
};

Loaded load_llmc(const std::string& path) {
  const InputFile in = open_checked(path);
  const auto bytes = static_cast<std::int64_t>(in.size());
  if (bytes < kLlmcHeaderBytes)
    fail(path, "too short for an llm.c header (" + std::to_string(bytes) + " bytes, need " +
                   std::to_string(kLlmcHeaderBytes) + ")");
  unsigned char header[kLlmcHeaderBytes];
  rethrow_input_as<DataError>([&] { in.read_at(0, kLlmcHeaderBytes, header, "llm.c header"); });
  const std::int32_t magic = le_int32(header);
  const std::int32_t version = le_int32(header + 4);
  const std::int64_t count = static_cast<std::uint32_t>(le_int32(header + 8));
  if (magic != kLlmcMagic && magic != kLlmc32Magic)
    fail(path, "not an llm.c token file (magic " + std::to_string(magic) + ", expected " +
                   std::to_string(kLlmcMagic) + " or " + std::to_string(kLlmc32Magic) + ")");
  const bool wide = magic == kLlmc32Magic;
  const std::int32_t want = wide ? kLlmc32Version : kLlmcVersion;
  if (version != want)
    fail(path, "unsupported llm.c token file version " + std::to_string(version) + " for magic " +
                   std::to_string(magic) + " (expected " + std::to_string(want) +
                   (wide ? ": uint32 tokens)" : ": uint16 tokens)"));
  const int width = wide ? 4 : 2;
  const std::int64_t expected = kLlmcHeaderBytes + width * count;
  if (bytes != expected)
    fail(path, "size " + std::to_string(bytes) + " bytes does not match the header's " +
                   std::to_string(count) + " tokens (expected 1024 + " + std::to_string(width) +
                   "*" + std::to_string(count) + " = " + std::to_string(expected) + " bytes)");
  return {read_tokens(in, kLlmcHeaderBytes, count, width), kLlmcHeaderBytes, width};
}

Loaded load_raw(const std::string& path, int width) {
  const InputFile in = open_checked(path);
  const auto bytes = static_cast<std::int64_t>(in.size());
  if (bytes % width != 0)
    fail(path, "size " + std::to_string(bytes) + " bytes is not a multiple of " +
                   std::to_string(width) + "; a raw uint" + std::to_string(8 * width) +
                   " token file holds " + std::to_string(width) + " bytes per token");
  return {read_tokens(in, 0, bytes / width, width), 0, width};
}

std::vector<std::int32_t> load_builtin(const std::string& path) {
  const std::string which = path.substr(std::strlen(kBuiltinPrefix));
  if (which != "train" && which != "val")
    fail(path, "unknown builtin corpus (expected builtin:train or builtin:val)");
  const std::string& text = builtin_corpus(which);
  // Through unsigned char: bytes >= 128 must become tokens 128..255, not negative ids.
  return std::vector<std::int32_t>(
      reinterpret_cast<const unsigned char*>(text.data()),
      reinterpret_cast<const unsigned char*>(text.data()) + text.size());
}

}  // namespace

TokenFile::TokenFile(std::string name, std::vector<std::int32_t> tokens, int vocab_size,
                     int block_size, std::int64_t header_bytes, int width)
    : name_(std::move(name)), tokens_(std::move(tokens)), vocab_size_(vocab_size) {
  if (vocab_size <= 0)
    fail(name_, "vocab_size must be positive, got " + std::to_string(vocab_size));
  if (block_size <= 0)
    fail(name_, "block_size must be positive, got " + std::to_string(block_size));
  const auto bad = std::find_if(tokens_.begin(), tokens_.end(),
                                [vocab_size](std::int32_t t) { return t < 0 || t >= vocab_size; });
  if (bad != tokens_.end()) {
    const std::int64_t i = bad - tokens_.begin();
    // As the file holds it: a uint32 past INT32_MAX was read as negative.
    const std::string value = width == 4 ? std::to_string(std::uint32_t(*bad)) : std::to_string(*bad);
    fail(name_, "token " + value + " at index " + std::to_string(i) + " (byte offset " +
                    std::to_string(header_bytes + i * width) + ") is out of range for vocab_size " +
                    std::to_string(vocab_size));
  }
  const std::int64_t need = std::int64_t(block_size) + 1;
  if (size() < need)
    fail(name_, "holds " + std::to_string(size()) + " tokens; block_size " +
                    std::to_string(block_size) + " needs at least " + std::to_string(need));
}

TokenFile TokenFile::from_tokens(std::string name, std::vector<std::int32_t> tokens, int vocab_size,
                                 int block_size) {
  return TokenFile(std::move(name), std::move(tokens), vocab_size, block_size, 0, 4);
}

TokenFile TokenFile::load(const std::string& path, const std::string& format, int vocab_size,
                          int block_size) {
  Loaded l;
  if (path.rfind(kBuiltinPrefix, 0) == 0) {
    l = {load_builtin(path), 0, 1};
  } else if (format == "llmc") {
    l = load_llmc(path);
  } else if (format == "uint16") {
    l = load_raw(path, 2);
  } else if (format == "uint32") {
    l = load_raw(path, 4);
  } else if (format == "text") {
    l = load_raw(path, 1);
  } else {
    fail(path, "unknown token format '" + format + "' (expected llmc, uint16, uint32 or text)");
  }
  return TokenFile(path, std::move(l.tokens), vocab_size, block_size, l.header, l.width);
}

}  // namespace fsdp
