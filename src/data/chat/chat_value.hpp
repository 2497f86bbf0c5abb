// SPDX-License-Identifier: MIT
// The values a chat template computes with (Jinja2's, which are Python's): undefined, none,
// bool, int, float, string, list, dict, namespace; and the Python conversions the renderer
// needs: truth, str(), repr(), ==, <, and json.dumps as transformers' tojson calls it.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fsdp::chat {

// A runtime error of the template (the evaluator adds the line).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A method or argument the renderer does not have: what() names it ("method 'format'"), the
// evaluator adds " at line L is not supported".
class Unsupported : public Error {
 public:
  using Error::Error;
};

// Text with a mark per byte: set on the bytes read from an assistant message's content,
// reasoning_content or tool_calls. The mark travels through concatenation, slicing and the
// string methods, so the renderer can find where an assistant turn's own text starts in the
// output (the SFT mask, docs/data.md).
struct Text {
  std::string s;
  std::vector<bool> marks;  // empty: no byte is marked; otherwise one per byte of s

  Text() = default;
  Text(std::string str) : s(std::move(str)) {}  // NOLINT: unmarked text converts implicitly
  Text(const char* str) : s(str) {}             // NOLINT
  Text(std::string str, bool marked);
  bool any_marked() const;
  bool marked(std::size_t i) const { return !marks.empty() && marks[i]; }
  void append(const Text& t);
  void append(std::string_view str);  // unmarked
  void append(const std::string& str) { append(std::string_view(str)); }
  void append(const char* str) { append(std::string_view(str)); }
  Text bytes(std::size_t begin, std::size_t end) const;  // the bytes [begin, end)
  Text marked_as(bool on) const;                          // every byte marked (or none)
};

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<Text, Value>>;  // insertion order, as Python's dict

struct Value {
  enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, ns };
  Kind kind = Kind::undefined;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  Text text;  // the string; for undefined, what was looked up (for its error message)
  std::shared_ptr<const List> list;
  bool tuple = false;  // a list that Python holds as a tuple: it prints as (a, b)
  std::shared_ptr<Dict> dict;  // a dict (never changed once built) or a namespace (mutable)
  int depth = 0;  // how deep its lists and dicts nest (the evaluator bounds it: data/nesting.hpp)

  static Value undefined(std::string what);
  static Value none();
  static Value boolean(bool v);
  static Value integer(std::int64_t v);
  static Value floating(double v);
  static Value string(Text t);
  static Value make_list(List items);
  static Value make_tuple(List items);
  static Value make_dict(Dict items);
  static Value make_namespace(Dict items);

  bool is(Kind k) const { return kind == k; }
  bool is_number() const { return kind == Kind::boolean || kind == Kind::integer || kind == Kind::floating; }
  // A dict's or namespace's member, or nullptr.
  const Value* find(std::string_view key) const;
};

// Jinja's truth: undefined, none, false, 0, "", [] and {} are false.
bool truthy(const Value& v);
// Python's str(v) (undefined prints nothing); a container holding marked text is wholly marked.
Text to_text(const Value& v);
// Python's repr(v), as str() of a list or dict shows its items.
std::string repr(const Value& v);
// Python's repr of a float: the shortest digits that read back, "1.0", "1e+16", "1e-05".
std::string format_float(double d);
// Python's == and the ordering of <, <=, >, >= (a TypeError for types that do not order).
bool equal(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);
// The type's name as Python says it, for error messages.
std::string type_name(const Value& v);
bool any_marked(const Value& v);

// A JSON document as values; every string in it (keys included) marked when `marked`. Objects
// keep their keys in the document's order, as Python's json.loads does (tojson shows them so).
Value from_json(const nlohmann::ordered_json& j, bool marked);

// transformers' tojson: json.dumps(v, ensure_ascii=..., indent=..., separators=...,
// sort_keys=...), Python's defaults unless given.
struct JsonStyle {
  bool indented = false;
  std::string indent;  // one level (indent=n: n spaces)
  bool has_separators = false;
  std::string item_sep, key_sep;
  bool ensure_ascii = false;
  bool sort_keys = false;
};
Text to_json(const Value& v, const JsonStyle& style);

}  // namespace fsdp::chat
