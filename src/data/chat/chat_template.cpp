// SPDX-License-Identifier: MIT
// Hugging Face chat templates, rendered as transformers' apply_chat_template renders them.
//
// This is a hand-written Jinja2 interpreter: Debian 12 packages no C++ Jinja library (apt-cache
// search jinja finds only Python's), and the subset chat templates use is small. It is split by
// stage: chat_lexer (Jinja2's lexer with trim_blocks and lstrip_blocks), chat_parser (its
// grammar, refusing what is not supported by name and line), chat_eval (statements and
// scoping), chat_operators / chat_filters / chat_methods (Python's semantics) over chat_value.
// transformers renders with ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]), its own tojson (json.dumps, ensure_ascii=False), raise_exception,
// and the variables messages, tools (None unless given), documents=None, add_generation_prompt
// and the special tokens; tests/e2e/chat_template.sh compares the two on real templates, with
// transformers' apply_chat_template itself as the reference (tests/reference/chat_render.py).
#include "data/chat/chat_template.hpp"

#include <filesystem>

#include "core/input_file.hpp"
#include "data/chat/chat_eval.hpp"
#include "data/chat/chat_parser.hpp"
#include "data/json_at.hpp"

namespace fsdp {

struct ChatTemplate::Program {
  std::vector<chat::Stmt> body;
  std::string where;
};

ChatTemplate::ChatTemplate(std::unique_ptr<Program> chat, std::unique_ptr<Program> tool_use)
    : program_(std::move(chat)), tool_use_(std::move(tool_use)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

ChatTemplate ChatTemplate::parse(const std::string& source, const std::string& where) {
  auto p = std::make_unique<Program>();
  p->where = where;
  try {
    p->body = chat::parse(chat::lex(source));
  } catch (const chat::Error& e) {
    throw DataError(where + ": chat_template: " + e.what());
  }
  return ChatTemplate(std::move(p), nullptr);
}

ChatTemplate ChatTemplate::load(const std::string& model_dir_or_config) {
  namespace fs = std::filesystem;
  constexpr std::uint64_t kMaxBytes = std::uint64_t(64) << 20;
  std::error_code ec;
  std::string config = model_dir_or_config;
  if (fs::is_directory(model_dir_or_config, ec)) {
    // Newer transformers saves the template beside the config, and prefers it when present.
    const std::string jinja = (fs::path(model_dir_or_config) / "chat_template.jinja").string();
    if (fs::exists(jinja, ec))
      return parse(rethrow_input_as<DataError>([&] { return read_input(jinja, "chat template", kMaxBytes); }),
                   jinja);
    config = (fs::path(model_dir_or_config) / "tokenizer_config.json").string();
  }
  const nlohmann::json j = read_json_file(config, "tokenizer config", kMaxBytes);
  const std::string where = config + ": chat_template";
  if (!j.is_object() || !j.contains("chat_template") || j["chat_template"].is_null())
    throw DataError(where + ": missing (this model has no chat template)");
  const nlohmann::json& t = j["chat_template"];
  if (t.is_string()) return parse(t.get<std::string>(), config);
  if (t.is_array()) {
    // Named templates: transformers renders with "tool_use" when given tools and there is one,
    // else with "default" (and refuses a chat that would need a "default" it lacks).
    std::string names;
    ChatTemplate chosen(nullptr, nullptr);
    for (const nlohmann::json& named : t) {
      if (!named.is_object() || !named.contains("name") || !named.contains("template") ||
          !named["name"].is_string() || !named["template"].is_string())
        throw DataError(where + ": a list entry that is not {\"name\", \"template\"}");
      const std::string name = named["name"].get<std::string>();
      if (name == "default" || name == "tool_use") {
        ChatTemplate one = parse(named["template"].get<std::string>(), config);
        (name == "default" ? chosen.program_ : chosen.tool_use_) = std::move(one.program_);
      }
      names += (names.empty() ? "" : ", ") + name;
    }
    if (!chosen.program_ && !chosen.tool_use_)
      throw DataError(where + ": no template named \"default\" (it has: " + names + ")");
    if (!chosen.program_)
      chosen.no_default_ =
          where + ": no template named \"default\", for a chat without tools (it has: " + names + ")";
    return chosen;
  }
  throw DataError(where + ": neither a string nor a list of named templates");
}

namespace {

// apply_chat_template's names for a message's reasoning, the first the one templates read.
constexpr const char* kReasoning[] = {"reasoning_content", "thinking", "reasoning"};

// A message as template values, prepared as apply_chat_template prepares it: keys whose value
// is null dropped (so `'tool_calls' in message` is false for "tool_calls": null), then, when one
// of the reasoning names holds a value, "thinking" first and "reasoning_content" last set to it
// (transformers' {"thinking": r, **message, "reasoning_content": r}: a key the message has keeps
// its place, and its own "thinking" wins). An assistant message's content, reasoning and
// tool_calls are marked (the text that is trained, chat_eval.cpp); its role and the other
// messages are not.
chat::Value message_value(const nlohmann::ordered_json& m) {
  if (!m.is_object()) return chat::from_json(m, false);
  const bool assistant = m.contains("role") && m["role"] == "assistant";
  const nlohmann::ordered_json* reasoning = nullptr;
  for (const char* name : kReasoning)
    if (!reasoning && m.contains(name) && !m[name].is_null()) reasoning = &m[name];
  nlohmann::ordered_json prepared = nlohmann::ordered_json::object();
  if (reasoning) prepared["thinking"] = *reasoning;
  for (const auto& [k, v] : m.items())
    if (!v.is_null()) prepared[k] = v;
  if (reasoning) prepared["reasoning_content"] = *reasoning;
  chat::Dict d;
  for (const auto& [k, v] : prepared.items()) {
    bool trained = assistant && (k == "content" || k == "tool_calls" || k == kReasoning[0] ||
                                 k == kReasoning[1] || k == kReasoning[2]);
    d.emplace_back(chat::Text(k), chat::from_json(v, trained));
  }
  return chat::Value::make_dict(std::move(d));
}

}  // namespace

std::vector<ChatSegment> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                              const ChatVariables& vars) const {
  // transformers picks the named template "tool_use" when given tools (even an empty list).
  const Program* program = !vars.tools.is_null() && tool_use_ ? tool_use_.get() : program_.get();
  if (!program) throw DataError(no_default_);
  const std::string& where = program->where;
  if (!messages.is_array()) throw DataError(where + ": chat_template: messages must be a JSON array");
  if (!vars.tools.is_null() && !vars.tools.is_array())
    throw DataError(where + ": chat_template: tools must be a JSON array");
  chat::List list;
  for (const nlohmann::ordered_json& m : messages) list.push_back(message_value(m));
  chat::Scope globals(nullptr);
  globals.set("messages", chat::Value::make_list(std::move(list)));
  // The tokenizer's special tokens, only those it has (transformers' special_tokens_map).
  if (!vars.bos_token.empty()) globals.set("bos_token", chat::Value::string(chat::Text(vars.bos_token)));
  if (!vars.eos_token.empty()) globals.set("eos_token", chat::Value::string(chat::Text(vars.eos_token)));
  globals.set("add_generation_prompt", chat::Value::boolean(vars.add_generation_prompt));
  // transformers passes these even when the caller has none.
  globals.set("tools", chat::from_json(vars.tools, false));
  globals.set("documents", chat::Value::none());

  chat::Output out;
  try {
    chat::execute(program->body, globals, out);
  } catch (const chat::Error& e) {
    throw DataError(where + ": chat_template: " + e.what());
  }

  std::vector<bool> trained(out.text.s.size(), false);
  for (const auto& [begin, end] : out.trained)
    for (std::size_t b = begin; b < end; ++b) trained[b] = true;
  std::vector<ChatSegment> segments;
  for (std::size_t b = 0; b < out.text.s.size(); ++b) {
    if (segments.empty() || segments.back().trained != trained[b])
      segments.push_back(ChatSegment{"", trained[b]});
    segments.back().text += out.text.s[b];
  }
  return segments;
}

std::string ChatTemplate::render_text(const nlohmann::ordered_json& messages,
                                      const ChatVariables& vars) const {
  std::string text;
  for (const ChatSegment& s : render(messages, vars)) text += s.text;
  return text;
}

}  // namespace fsdp
