// SPDX-License-Identifier: MIT
#include "prepare/document.hpp"

#include "data/nesting.hpp"
#include "data/utf8.hpp"

namespace fsdp::prepare {
namespace {

// Ordered: a chat's objects reach the template in the line's key order.
using json = nlohmann::ordered_json;

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

// "a string", "an array": a JSON value's type for a message.
std::string a_type(const json& j) {
  const std::string t = j.type_name();
  return (t[0] == 'a' || t[0] == 'o' ? "an " : "a ") + t;
}

// A chat's own "tools": what apply_chat_template(messages, tools=...) takes, a list of function
// definitions, each OpenAI's {"type": "function", "function": {"name", "description",
// "parameters"}} or the bare {"name", "description", "parameters"} (templates print either as
// given). null is no tools. Checked here so that a malformed list is one line naming the line,
// not a template's error about whatever it tripped over.
json checked_tools(const json& t) {
  if (t.is_null()) return t;
  if (!t.is_array())
    throw DocumentError("\"tools\" is " + a_type(t) +
                            ", not an array of function definitions" +
                            (t.is_string() ? " (a JSON string: decode it into the line)" : ""),
                        0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::string where = "\"tools\"[" + std::to_string(i) + "]";
    if (!t[i].is_object()) throw DocumentError(where + " is " + a_type(t[i]) + ", not an object", 0);
    const json* f = &t[i];
    if (f->contains("type") || f->contains("function")) {
      const auto type = f->find("type");
      if (type == f->end() || *type != "function")
        throw DocumentError(where + ": \"type\" is not \"function\"", 0);
      const auto fn = f->find("function");
      if (fn == f->end()) throw DocumentError(where + ": \"function\" is missing", 0);
      if (!fn->is_object())
        throw DocumentError(where + ": \"function\" is " + a_type(*fn) + ", not an object", 0);
      f = &*fn;
      where += ".function";
    }
    const auto name = f->find("name");
    if (name == f->end()) throw DocumentError(where + ": \"name\" is missing", 0);
    if (!name->is_string() || name->get_ref<const std::string&>().empty())
      throw DocumentError(where + ": \"name\" is " + (name->is_string() ? "empty" : a_type(*name) + ", not a string"), 0);
    if (const auto d = f->find("description"); d != f->end() && !d->is_string())
      throw DocumentError(where + ": \"description\" is " + a_type(*d) + ", not a string", 0);
    if (const auto p = f->find("parameters"); p != f->end() && !p->is_object())
      throw DocumentError(where + ": \"parameters\" is " + a_type(*p) + ", not an object (a JSON schema)", 0);
  }
  return t;
}

}  // namespace

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

Document read_jsonl_line(std::string_view line) {
  check_utf8(line);
  // Before parsing: the message values built from it recurse once per level.
  const std::size_t deep = json_too_deep_at(line);
  if (deep != std::string_view::npos)
    throw DocumentError("JSON " + nested_too_deep() + " at byte " + std::to_string(deep + 1), deep);
  json o;
  try {
    o = json::parse(line.begin(), line.end());
  } catch (const json::parse_error& e) {
    // e.byte is 1-based and points just past the offending character.
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    throw DocumentError("not JSON (a syntax error at byte " + std::to_string(at + 1) + ")", at);
  } catch (const json::exception& e) {  // a number past double's range (out_of_range.406)
    throw DocumentError(std::string("not usable JSON (") + e.what() + ")", 0);
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
    if (const auto t = o.find("tools"); t != o.end()) d.tools = checked_tools(*t);
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
