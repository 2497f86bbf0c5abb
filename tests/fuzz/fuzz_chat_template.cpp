// SPDX-License-Identifier: MIT
// libFuzzer target for the chat-template interpreter (fsdp-data prepare, fsdp-sample --chat): the
// input is a template, parsed and rendered over a small conversation. Only chat template errors
// (a DataError naming the template) may leave it: no crash, no other exception, and the nesting
// limit and the render's budget (data/nesting.hpp, data/chat/chat_budget.hpp) keep every input
// within the stack, the memory and the time libFuzzer allows.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "data/chat/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const nlohmann::json messages = nlohmann::json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi {{ there }} é"},
    {"role": "assistant", "content": "Hello.", "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
    {"role": "tool", "content": "42"}])");
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const fsdp::ChatTemplate t = fsdp::ChatTemplate::parse(source, "fuzz.jinja");
    fsdp::ChatVariables vars;
    vars.bos_token = "<s>";
    vars.eos_token = "</s>";
    vars.add_generation_prompt = size % 2 == 1;
    (void)t.render(messages, vars);
  } catch (const fsdp::DataError&) {
    // The expected way to refuse a template.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_chat_template: %s escaped: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
