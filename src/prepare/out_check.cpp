// SPDX-License-Identifier: MIT
#include "prepare/out_check.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "core/input_file.hpp"
#include "data/trained_mask.hpp"

namespace fsdp::prepare {
namespace fs = std::filesystem;
namespace {

// The first 8 bytes of a regular file as two little-endian int32 words; false when shorter.
bool head_words(const std::string& path, std::int32_t& a, std::int32_t& b) {
  try {
    const InputFile in(path, "");
    if (in.size() < 8) return false;
    unsigned char h[8];
    in.read_at(0, 8, h, "header");
    a = std::int32_t(std::uint32_t(h[0]) | std::uint32_t(h[1]) << 8 | std::uint32_t(h[2]) << 16 |
                     std::uint32_t(h[3]) << 24);
    b = std::int32_t(std::uint32_t(h[4]) | std::uint32_t(h[5]) << 8 | std::uint32_t(h[6]) << 16 |
                     std::uint32_t(h[7]) << 24);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// An llm.c token file of a kind prepare writes (prepare/token_writer.hpp's two headers).
bool token_file(const std::string& path) {
  std::int32_t magic = 0, version = 0;
  return head_words(path, magic, version) &&
         ((magic == 20240520 && version == 1) || (magic == 20240801 && version == 7));
}

bool mask_file(const std::string& path) {
  std::int32_t magic = 0, version = 0;
  return head_words(path, magic, version) && magic == TrainedMask::kMagic;
}

// Why the existing `path` (OUT or OUT.trained) is not prepare's to replace, or "".
std::string existing_problem(const std::string& flag, const std::string& path, bool is_mask,
                             const std::vector<std::string>& inputs, const std::string& tokenizer_dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return {};
  const std::string what = flag + " " + path;
  if (fs::is_directory(st)) return what + ": is a directory";
  if (!fs::is_regular_file(st))
    return what + ": is not a regular file (a device, pipe or socket): refusing to write over it";
  for (const std::string& in : inputs)
    if (fs::equivalent(path, in, ec))
      return what + ": is an input of this run (" + in + "): refusing to write over it";
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
    if (fs::equivalent(path, fs::path(tokenizer_dir) / name, ec))
      return what + ": is the tokenizer's " + name + ": refusing to write over it";
  if (is_mask ? !mask_file(path) : !token_file(path))
    return what + ": exists and is not " +
           (is_mask ? std::string("a trained-token mask (magic ") + std::to_string(TrainedMask::kMagic) + ")"
                    : std::string("an llm.c token file (magic 20240520 or 20240801)")) +
           ", so not one fsdp-data wrote: refusing to write over it";
  return {};
}

}  // namespace

std::string out_problem(const std::string& out, const std::vector<std::string>& inputs,
                        const std::string& tokenizer_dir) {
  const std::string flag = "--out";
  if (out.empty()) return "--out '': names no file";
  if (out.back() == '/') return flag + " " + out + ": is a directory";
  const fs::path p(out);
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    return flag + " " + out + ": the directory " + parent.string() + " does not exist";
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    return flag + " " + out + ": the directory " + parent.string() + " is not writable (" +
           std::strerror(errno) + ")";
  std::string why = existing_problem(flag, out, false, inputs, tokenizer_dir);
  if (why.empty())
    why = existing_problem(flag, TrainedMask::path_for(out), true, inputs, tokenizer_dir);
  return why;
}

}  // namespace fsdp::prepare
