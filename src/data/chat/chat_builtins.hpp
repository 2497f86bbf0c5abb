// SPDX-License-Identifier: MIT
// The filters, tests, functions and methods a chat template may call: their names (so the
// parser refuses the others by name) and their Python semantics.
#pragma once
#include <string>
#include <vector>

#include "data/chat/chat_value.hpp"

namespace fsdp::chat {

// Arguments as evaluated: positional, then keyword (name, value).
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The argument at `index` or named `name`, or nullptr when neither is given.
  const Value* get(std::size_t index, const char* name) const;
};

bool known_filter(const std::string& name);
bool known_test(const std::string& name);
bool known_function(const std::string& name);

// `value | name(args)`; a filter with a test argument (selectattr) calls apply_test.
Value apply_filter(const std::string& name, const Value& value, const Args& args);
bool apply_test(const std::string& name, const Value& value, const Args& args);
// A method of a string, dict or list value: chat::Error "method 'x' ... is not supported"
// (without the line, which the evaluator adds) for the others.
Value call_method(const Value& self, const std::string& name, const Args& args);
// Python attribute names that are methods of a value's type, which `value.name` would return
// uncalled (refused: a bound method cannot be rendered).
bool is_method_name(const Value& self, const std::string& name);

// String helpers the filters and methods share, counting code points as Python does.
// The byte offset of each code point of s, then s.size().
std::vector<std::size_t> code_point_starts(const std::string& s);
// Python's strip / lstrip / rstrip: `chars` (a string) or, when null or none, whitespace.
Text strip(const Text& t, const Value* chars, bool left, bool right);
// ASCII case mapping ('u'pper, 'l'ower, 't'itle, 'c'apitalize); Unsupported `what` for text
// holding letters of other cased scripts.
Text change_case(const Text& t, char mode, const std::string& what);

}  // namespace fsdp::chat
