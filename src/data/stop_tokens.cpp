// SPDX-License-Identifier: MIT
#include "data/stop_tokens.hpp"

#include <algorithm>
#include <filesystem>

#include "data/json_at.hpp"

namespace fsdp {

std::vector<std::int32_t> stop_token_ids(const std::string& model_dir, const Tokenizer& tokenizer) {
  std::vector<std::int32_t> ids;
  auto add = [&](std::int64_t id) {
    if (id >= 0 && id < std::int64_t(tokenizer.vocab_size()) &&
        std::find(ids.begin(), ids.end(), std::int32_t(id)) == ids.end())
      ids.push_back(std::int32_t(id));
  };
  add(tokenizer.eos_id());
  namespace fs = std::filesystem;
  const fs::path dir = fs::is_directory(model_dir) ? fs::path(model_dir) : fs::path(model_dir).parent_path();
  for (const char* name : {"generation_config.json", "config.json"}) {
    const fs::path file = dir / name;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) continue;
    const nlohmann::json j = read_json_file(file.string(), name, std::uint64_t(1) << 24);
    if (!j.is_object() || !j.contains("eos_token_id")) continue;
    const nlohmann::json& e = j["eos_token_id"];
    if (e.is_number_integer()) add(e.get<std::int64_t>());
    else if (e.is_array())
      for (const auto& v : e)
        if (v.is_number_integer()) add(v.get<std::int64_t>());
  }
  return ids;
}

}  // namespace fsdp
