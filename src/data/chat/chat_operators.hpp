// SPDX-License-Identifier: MIT
// Python's operators on chat-template values, as Jinja2 compiles them (arithmetic, `in`,
// ~ concatenation) and Jinja2's sandboxed attribute and item lookup (a missing key or index is
// undefined, not an error).
#pragma once
#include <string>

#include "data/chat/chat_value.hpp"

namespace fsdp::chat {

// a op b for op in + - * / // % ** ~ (undefined operands raise, as Jinja2's Undefined does).
Value binary_op(const std::string& op, const Value& a, const Value& b);
Value negate(const Value& a);
// item in container.
bool contains(const Value& container, const Value& item);
// obj.name and obj[key] (Jinja2's getattr and getitem).
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on a list or string; bounds may be none (or undefined: missing).
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// The items a for loop walks: a list's items, a dict's keys, a string's characters.
List iterate(const Value& v);
// The error an undefined value raises when used (its name, or the missing attribute).
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace fsdp::chat
