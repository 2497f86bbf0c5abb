// SPDX-License-Identifier: MIT
// Test tool: renders conversations with a model's chat template (fsdp::ChatTemplate), for
// tests/e2e/chat_template.sh to compare with tests/reference/chat_render.py (transformers'
// apply_chat_template).
//   chat_render MODEL_DIR_OR_CONFIG CASES.json OUT.json
// CASES.json: [{"name", "messages", "add_generation_prompt", "bos_token", "eos_token"[, "tools"]},
// ...], read with its objects' keys in the file's order (as Python reads them);
// OUT.json: [{"name", "segments": [[text, trained], ...]} or {"name", "error"}, ...].
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "data/chat/chat_template.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: chat_render MODEL_DIR_OR_CONFIG CASES.json OUT.json\n";
    return 2;
  }
  try {
    const fsdp::ChatTemplate tmpl = fsdp::ChatTemplate::load(argv[1]);
    std::ifstream in(argv[2]);
    const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(in);
    nlohmann::json out = nlohmann::json::array();
    for (const nlohmann::ordered_json& c : cases) {
      fsdp::ChatVariables vars;
      vars.bos_token = c.value("bos_token", "");
      vars.eos_token = c.value("eos_token", "");
      vars.add_generation_prompt = c.value("add_generation_prompt", false);
      if (c.contains("tools")) vars.tools = c["tools"];
      nlohmann::json result = {{"name", c["name"]}};
      try {
        nlohmann::json segments = nlohmann::json::array();
        for (const fsdp::ChatSegment& s : tmpl.render(c["messages"], vars))
          segments.push_back({s.text, s.trained});
        result["segments"] = segments;
      } catch (const fsdp::DataError& e) {
        result["error"] = e.what();
      }
      out.push_back(result);
    }
    std::ofstream(argv[3]) << out.dump(1);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
