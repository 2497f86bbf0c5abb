// SPDX-License-Identifier: MIT
// Python's operator semantics on chat-template values: ints stay ints (bool counts as one), /
// is true division, // and % floor toward negative infinity, + joins strings and lists, * repeats
// them; strings index and slice by code point. Ints are 64-bit: an overflow (where Python would
// grow the int) is an error, never a wrapped value.
#include <cmath>

#include "data/chat/chat_budget.hpp"
#include "data/chat/chat_builtins.hpp"
#include "data/chat/chat_operators.hpp"

namespace fsdp::chat {
namespace {

using K = Value::Kind;

bool is_int(const Value& v) { return v.is(K::integer) || v.is(K::boolean); }
std::int64_t int_of(const Value& v) { return v.is(K::boolean) ? v.b : v.i; }
double float_of(const Value& v) { return v.is(K::floating) ? v.f : static_cast<double>(int_of(v)); }

[[noreturn]] void type_error(const std::string& op, const Value& a, const Value& b) {
  throw Error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
              type_name(b) + "'");
}

// x op y, or an error where Python would have grown the int.
template <typename Op>
std::int64_t checked(Op op, std::int64_t x, std::int64_t y) {
  std::int64_t r = 0;
  if (op(x, y, &r)) throw Error("integer overflow (past 64 bits)");
  return r;
}
bool add(std::int64_t x, std::int64_t y, std::int64_t* r) { return __builtin_add_overflow(x, y, r); }
bool sub(std::int64_t x, std::int64_t y, std::int64_t* r) { return __builtin_sub_overflow(x, y, r); }
bool mul(std::int64_t x, std::int64_t y, std::int64_t* r) { return __builtin_mul_overflow(x, y, r); }

Value repeat(const Value& seq, std::int64_t n) {
  // The whole result is checked against the render's budget before any of it is built (a
  // product past the budget is passed as just past it: no overflow).
  const auto times = [n](std::uint64_t each) {
    return each > 0 && std::uint64_t(n) > kMaxBytes / each ? kMaxBytes + 1 : each * std::uint64_t(n);
  };
  if (n > 0 && seq.is(K::string)) grow_string(0, times(seq.text.s.size()));
  if (n > 0 && seq.is(K::list)) {
    std::uint64_t bytes = 0;
    for (const Value& item : *seq.list) bytes += item.text.s.size();
    build_items(times(seq.list->size()), times(bytes));
  }
  if (seq.is(K::string)) {
    Text t;
    for (std::int64_t k = 0; k < n; ++k) t.append(seq.text);
    return Value::string(std::move(t));
  }
  List items;
  for (std::int64_t k = 0; k < n; ++k) items.insert(items.end(), seq.list->begin(), seq.list->end());
  return Value::make_list(std::move(items));
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) type_error(op, a, b);
  if (is_int(a) && is_int(b)) {
    std::int64_t x = int_of(a), y = int_of(b);
    if (op == "+") return Value::integer(checked(add, x, y));
    if (op == "-") return Value::integer(checked(sub, x, y));
    if (op == "*") return Value::integer(checked(mul, x, y));
    if (op == "/") {
      if (y == 0) throw Error("division by zero");
      return Value::floating(static_cast<double>(x) / static_cast<double>(y));
    }
    if (op == "//" || op == "%") {
      if (y == 0) throw Error("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) throw Error("integer overflow (past 64 bits)");
      std::int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) --q, m += y;
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (y < 0) return Value::floating(std::pow(static_cast<double>(x), static_cast<double>(y)));
      std::int64_t p = 1;
      for (std::int64_t k = 0; k < y; ++k) {
        p = checked(mul, p, x);
        if (p == 0 || p == 1) break;
      }
      return Value::integer(p);
    }
  }
  double x = float_of(a), y = float_of(b);
  if (op == "+") return Value::floating(x + y);
  if (op == "-") return Value::floating(x - y);
  if (op == "*") return Value::floating(x * y);
  if (op == "**") return Value::floating(std::pow(x, y));
  if (y == 0) throw Error("float division by zero");
  if (op == "/") return Value::floating(x / y);
  double m = std::fmod(x, y);
  if (m != 0 && ((m < 0) != (y < 0))) m += y;
  if (op == "%") return Value::floating(m);
  return Value::floating(std::floor((x - m) / y + 0.5));  // Python's float floor division
}

// Python's slice.indices(length), then the positions it selects.
std::vector<std::int64_t> slice_positions(std::int64_t len, const Value& start, const Value& stop,
                                          const Value& step_v) {
  std::int64_t step = step_v.is(K::none) ? 1 : int_of(step_v);
  if (step == 0) throw Error("slice step cannot be zero");
  auto bound = [&](const Value& v, bool is_start) {
    if (v.is(K::none)) return is_start ? (step > 0 ? 0 : len - 1) : (step > 0 ? len : -1);
    std::int64_t i = int_of(v);
    if (i < 0) {
      i += len;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
    return i;
  };
  std::int64_t from = bound(start, true), to = bound(stop, false);
  std::vector<std::int64_t> out;
  for (std::int64_t i = from; step > 0 ? i < to : i > to; i += step) out.push_back(i);
  return out;
}

}  // namespace

[[noreturn]] void fail_undefined(const Value& v) { throw Error(v.text.s); }

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    Text t = to_text(a);
    t.append(to_text(b));
    return Value::string(std::move(t));
  }
  if (a.is(K::undefined)) fail_undefined(a);
  if (b.is(K::undefined)) fail_undefined(b);
  if (op == "+") {
    if (a.is(K::string) && b.is(K::string)) {
      Text t = a.text;
      t.append(b.text);
      return Value::string(std::move(t));
    }
    if (a.is(K::list) && b.is(K::list)) {
      List items = *a.list;
      items.insert(items.end(), b.list->begin(), b.list->end());
      return Value::make_list(std::move(items));
    }
    if (a.is(K::string) || b.is(K::string))
      throw Error("can only concatenate str (not \"" + type_name(a.is(K::string) ? b : a) + "\") to str");
  }
  if (op == "*") {
    if ((a.is(K::string) || a.is(K::list)) && is_int(b)) return repeat(a, int_of(b));
    if (is_int(a) && (b.is(K::string) || b.is(K::list))) return repeat(b, int_of(a));
  }
  if (op == "%" && a.is(K::string)) throw Unsupported("string formatting with %");
  return arithmetic(op, a, b);
}

Value negate(const Value& a) {
  if (a.is(K::undefined)) fail_undefined(a);
  if (a.is(K::floating)) return Value::floating(-a.f);
  if (!is_int(a)) throw Error("bad operand type for unary -: '" + type_name(a) + "'");
  return arithmetic("-", Value::integer(0), a);
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case K::undefined: return false;
    case K::string:
      if (!item.is(K::string))
        throw Error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.text.s.find(item.text.s) != std::string::npos;
    case K::list:
      for (const Value& v : *container.list)
        if (equal(v, item)) return true;
      return false;
    case K::dict:
    case K::ns: return item.is(K::string) && container.find(item.text.s) != nullptr;
    default: throw Error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is(K::undefined)) fail_undefined(obj);
  if (is_method_name(obj, name)) throw Unsupported("method '" + name + "' used without a call");
  if (obj.is(K::dict) || obj.is(K::ns)) {
    if (const Value* v = obj.find(name)) return *v;
  }
  return Value::undefined("'" + type_name(obj) + " object' has no attribute '" + name + "'");
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is(K::undefined)) fail_undefined(obj);
  std::string missing = "'" + type_name(obj) + " object' has no attribute '" + to_text(key).s + "'";
  if (key.is(K::string)) {
    if (obj.is(K::dict) || obj.is(K::ns)) {
      if (const Value* v = obj.find(key.text.s)) return *v;
    }
    if (is_method_name(obj, key.text.s)) throw Unsupported("method '" + key.text.s + "' used without a call");
    return Value::undefined(missing);
  }
  if (is_int(key) && (obj.is(K::list) || obj.is(K::string))) {
    std::int64_t i = int_of(key);
    if (obj.is(K::list)) {
      auto n = static_cast<std::int64_t>(obj.list->size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return (*obj.list)[i];
    } else {
      std::vector<std::size_t> starts = code_point_starts(obj.text.s);
      auto n = static_cast<std::int64_t>(starts.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value::string(obj.text.bytes(starts[i], starts[i + 1]));
    }
  }
  return Value::undefined(missing);
}

Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is(K::undefined)) fail_undefined(obj);
  for (const Value* b : {&start, &stop, &step})
    if (!b->is(K::none) && !is_int(*b)) return Value::undefined("slice indices must be integers");
  if (obj.is(K::list)) {
    List items;
    for (std::int64_t i : slice_positions(static_cast<std::int64_t>(obj.list->size()), start, stop, step))
      items.push_back((*obj.list)[i]);
    return Value::make_list(std::move(items));
  }
  if (obj.is(K::string)) {
    std::vector<std::size_t> starts = code_point_starts(obj.text.s);
    Text t;
    for (std::int64_t i : slice_positions(static_cast<std::int64_t>(starts.size()) - 1, start, stop, step))
      t.append(obj.text.bytes(starts[i], starts[i + 1]));
    return Value::string(std::move(t));
  }
  return Value::undefined("'" + type_name(obj) + "' object is not subscriptable");
}

List iterate(const Value& v) {
  switch (v.kind) {
    case K::undefined: return {};
    case K::list: {  // copied: its strings cost their bytes
      std::uint64_t bytes = 0;
      for (const Value& item : *v.list) bytes += item.text.s.size();
      build_items(v.list->size(), bytes);
      return *v.list;
    }
    case K::dict: {
      List keys;
      for (const auto& [k, item] : *v.dict) keys.push_back(Value::string(k));
      return keys;
    }
    case K::string: {
      std::vector<std::size_t> starts = code_point_starts(v.text.s);
      build_items(starts.size(), v.text.s.size());
      List chars;
      for (std::size_t k = 0; k + 1 < starts.size(); ++k)
        chars.push_back(Value::string(v.text.bytes(starts[k], starts[k + 1])));
      return chars;
    }
    default: throw Error("'" + type_name(v) + "' object is not iterable");
  }
}

}  // namespace fsdp::chat
