// SPDX-License-Identifier: MIT
#include "prepare/document.hpp"

#include "data/utf8.hpp"

namespace fsdp::prepare {
namespace {

using nlohmann::json;

// UTF-8 is checked before parsing so that the message names the byte, the same message a .txt
// file gets (the JSON parser's own says only "ill-formed UTF-8 byte").
void check_utf8(std::string_view s) {
  const std::size_t bad = utf8_invalid_at(s);
  if (bad != s.size())
    throw DocumentError("invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the line", bad);
}

std::string string_field(const json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end()) throw DocumentError(std::string("\"") + key + "\" is missing", 0);
  if (!it->is_string())
    throw DocumentError(std::string("\"") + key + "\" is a " + it->type_name() + ", not a string",
                        0);
  return it->get<std::string>();
}

json checked_messages(const json& m) {
  if (!m.is_array()) throw DocumentError(std::string("\"messages\" is a ") + m.type_name() + ", not an array", 0);
  if (m.empty()) throw DocumentError("\"messages\" is empty", 0);
  for (std::size_t i = 0; i < m.size(); ++i) {
    const std::string where = "\"messages\"[" + std::to_string(i) + "]";
    if (!m[i].is_object()) throw DocumentError(where + " is a " + m[i].type_name() + ", not an object", 0);
    for (const char* key : {"role", "content"}) {
      const auto it = m[i].find(key);
      if (it == m[i].end()) throw DocumentError(where + ": \"" + key + "\" is missing", 0);
      if (!it->is_string())
        throw DocumentError(where + ": \"" + key + "\" is a " + it->type_name() + ", not a string", 0);
    }
  }
  return m;
}

}  // namespace

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

Document read_jsonl_line(std::string_view line) {
  check_utf8(line);
  json o;
  try {
    o = json::parse(line.begin(), line.end());
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    throw DocumentError("not JSON (a syntax error at byte " + std::to_string(at + 1) + ")", at);
  }
  if (!o.is_object()) throw DocumentError(std::string("a JSON ") + o.type_name() + ", not an object", 0);
  const bool text = o.contains("text"), prompt = o.contains("prompt") || o.contains("completion"),
             messages = o.contains("messages");
  if (int(text) + int(prompt) + int(messages) > 1)
    throw DocumentError("an object with more than one of \"text\", \"prompt\"/\"completion\" and \"messages\"", 0);
  Document d;
  if (text) {
    d.kind = DocumentKind::Text;
    d.text = string_field(o, "text");
  } else if (prompt) {
    d.kind = DocumentKind::PromptCompletion;
    d.prompt = string_field(o, "prompt");
    d.completion = string_field(o, "completion");
  } else if (messages) {
    d.kind = DocumentKind::Messages;
    d.messages = checked_messages(o["messages"]);
  } else {
    throw DocumentError(
        "an object with none of \"text\", \"prompt\"/\"completion\" or \"messages\"", 0);
  }
  return d;
}

Document read_text_file(std::string_view bytes) {
  const std::size_t bad = utf8_invalid_at(bytes);
  if (bad != bytes.size())
    throw DocumentError("invalid UTF-8 at byte " + std::to_string(bad + 1) + " of the file", bad);
  Document d;
  d.text = std::string(bytes);
  return d;
}

}  // namespace fsdp::prepare
