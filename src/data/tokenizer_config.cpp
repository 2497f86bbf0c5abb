// SPDX-License-Identifier: MIT
#include "data/tokenizer_config.hpp"

#include <filesystem>

#include "data/json_at.hpp"

namespace fsdp {
namespace {

// A token is written as its text, or as an AddedToken object {"content": ..., ...}.
std::string token_text(const JsonAt& config, const char* name) {
  if (!config.has(name)) return "";
  const JsonAt v = config.at(name);
  if (v.node().is_string()) return v.node().get<std::string>();
  if (v.node().is_object()) return v.string("content");
  v.fail("neither a string nor an object with \"content\"");
}

}  // namespace

TokenizerConfig read_tokenizer_config(const std::string& path) {
  TokenizerConfig c;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return c;
  // Files with long chat templates run to tens of KiB; 64 MiB bounds a stray one.
  const nlohmann::json j = read_json_file(path, "tokenizer config", std::uint64_t(64) << 20);
  const JsonAt config(j, path, "");
  config.object();
  c.bos_token = token_text(config, "bos_token");
  c.eos_token = token_text(config, "eos_token");
  if (config.has("add_bos_token")) c.add_bos_token = config.boolean("add_bos_token");
  return c;
}

}  // namespace fsdp
