// SPDX-License-Identifier: MIT
// Chat-template values: construction, Python's truth, str(), repr(), == and ordering.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "data/chat/chat_budget.hpp"
#include "data/chat/chat_value.hpp"
#include "data/utf8.hpp"

namespace fsdp::chat {

Text::Text(std::string str, bool marked) : s(std::move(str)) {
  if (marked && !s.empty()) marks.assign(s.size(), true);
}

bool Text::any_marked() const {
  for (bool m : marks)
    if (m) return true;
  return false;
}

void Text::append(const Text& t) {
  grow_string(s.size(), t.s.size());
  if (!t.marks.empty() && marks.empty()) marks.assign(s.size(), false);
  s += t.s;
  if (!marks.empty()) {
    if (t.marks.empty()) marks.resize(s.size(), false);
    else marks.insert(marks.end(), t.marks.begin(), t.marks.end());
  }
}

void Text::append(std::string_view str) {
  grow_string(s.size(), str.size());
  s += str;
  if (!marks.empty()) marks.resize(s.size(), false);
}

Text Text::bytes(std::size_t begin, std::size_t end) const {
  Text t(s.substr(begin, end - begin));
  if (!marks.empty()) t.marks.assign(marks.begin() + begin, marks.begin() + end);
  return t;
}

Text Text::marked_as(bool on) const { return Text(s, on); }

Value Value::undefined(std::string what) {
  Value v;
  v.text = Text(std::move(what));
  return v;
}
Value Value::none() {
  Value v;
  v.kind = Kind::none;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind = Kind::boolean;
  v.b = b;
  return v;
}
Value Value::integer(std::int64_t i) {
  Value v;
  v.kind = Kind::integer;
  v.i = i;
  return v;
}
Value Value::floating(double f) {
  Value v;
  v.kind = Kind::floating;
  v.f = f;
  return v;
}
Value Value::string(Text t) {
  grow_string(0, t.s.size());
  Value v;
  v.kind = Kind::string;
  v.text = std::move(t);
  return v;
}
Value Value::make_list(List items) {
  Value v;
  v.kind = Kind::list;
  std::uint64_t bytes = 0;
  for (const Value& item : items) {
    v.depth = std::max(v.depth, item.depth + 1);
    bytes += item.text.s.size();
  }
  build_items(items.size(), bytes);
  v.list = std::make_shared<const List>(std::move(items));
  return v;
}
Value Value::make_tuple(List items) {
  Value v = make_list(std::move(items));
  v.tuple = true;
  return v;
}
Value Value::make_dict(Dict items) {
  Value v;
  v.kind = Kind::dict;
  std::uint64_t bytes = 0;
  for (const auto& [key, item] : items) {
    v.depth = std::max(v.depth, item.depth + 1);
    bytes += key.s.size() + item.text.s.size();
  }
  build_items(items.size(), bytes);
  v.dict = std::make_shared<Dict>(std::move(items));
  return v;
}
Value Value::make_namespace(Dict items) {
  Value v = make_dict(std::move(items));
  v.kind = Kind::ns;
  return v;
}

const Value* Value::find(std::string_view key) const {
  if (kind != Kind::dict && kind != Kind::ns) return nullptr;
  for (const auto& [k, v] : *dict)
    if (k.s == key) return &v;
  return nullptr;
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined:
    case Value::Kind::none: return false;
    case Value::Kind::boolean: return v.b;
    case Value::Kind::integer: return v.i != 0;
    case Value::Kind::floating: return v.f != 0;
    case Value::Kind::string: return !v.text.s.empty();
    case Value::Kind::list: return !v.list->empty();
    case Value::Kind::dict: return !v.dict->empty();
    case Value::Kind::ns: return true;
  }
  return false;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  // The shortest digits that read back, as Python's repr chooses them; then Python's layout:
  // positional for exponents -4..15, else d.ddde+XX.
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  bool negative = sci[0] == '-';
  std::string digits;
  for (std::size_t k = negative ? 1 : 0; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  std::string out;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out = "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return negative ? "-" + out : out;
}

namespace {

// Python's str.isprintable for the code points repr() escapes (controls, separators, format
// characters, private use); unassigned code points are taken as printable.
bool printable(std::uint32_t cp) {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad) return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f)) return false;
  if ((cp >= 0x205f && cp <= 0x206f) || cp == 0x3000 || cp == 0xfeff) return false;
  if ((cp >= 0xe000 && cp <= 0xf8ff) || (cp >= 0xfff9 && cp <= 0xfffb) || cp >= 0xf0000) return false;
  return true;
}

std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < s.size();) {
    CodePoint c = utf8_at(s, i);
    std::uint32_t cp = c.value;
    char buf[16];
    if (cp == static_cast<std::uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (printable(cp)) {
      out.append(s, i, c.bytes);
    } else {
      const char* fmt = cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x";
      std::snprintf(buf, sizeof buf, fmt, static_cast<unsigned>(cp));
      out += buf;
    }
    i += c.bytes;
  }
  return out + quote;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::string: return repr_string(v.text.s);
    case Value::Kind::undefined: return "Undefined";
    case Value::Kind::list: {
      std::string out = v.tuple ? "(" : "[";
      for (std::size_t k = 0; k < v.list->size(); ++k) out += (k ? ", " : "") + repr((*v.list)[k]);
      if (v.tuple && v.list->size() == 1) out += ",";
      return out + (v.tuple ? ")" : "]");
    }
    case Value::Kind::dict:
    case Value::Kind::ns: {
      std::string out = v.kind == Value::Kind::ns ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, item] : *v.dict) {
        out += (first ? "" : ", ") + repr_string(k.s) + ": " + repr(item);
        first = false;
      }
      return out + (v.kind == Value::Kind::ns ? "}>" : "}");
    }
    default: return to_text(v).s;
  }
}

bool any_marked(const Value& v) {
  switch (v.kind) {
    case Value::Kind::string: return v.text.any_marked();
    case Value::Kind::list:
      for (const Value& item : *v.list)
        if (any_marked(item)) return true;
      return false;
    case Value::Kind::dict:
    case Value::Kind::ns:
      for (const auto& [k, item] : *v.dict)
        if (k.any_marked() || any_marked(item)) return true;
      return false;
    default: return false;
  }
}

Text to_text(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return Text();
    case Value::Kind::none: return Text("None");
    case Value::Kind::boolean: return Text(v.b ? "True" : "False");
    case Value::Kind::integer: return Text(std::to_string(v.i));
    case Value::Kind::floating: return Text(format_float(v.f));
    case Value::Kind::string: return v.text;
    default: return Text(repr(v), any_marked(v));
  }
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::undefined: return "Undefined";
    case Value::Kind::none: return "NoneType";
    case Value::Kind::boolean: return "bool";
    case Value::Kind::integer: return "int";
    case Value::Kind::floating: return "float";
    case Value::Kind::string: return "str";
    case Value::Kind::list: return "list";
    case Value::Kind::dict: return "dict";
    case Value::Kind::ns: return "Namespace";
  }
  return "?";
}

namespace {
double as_double(const Value& v) {
  return v.kind == Value::Kind::floating  ? v.f
         : v.kind == Value::Kind::boolean ? (v.b ? 1.0 : 0.0)
                                          : static_cast<double>(v.i);
}
}  // namespace

bool equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.kind != K::floating && b.kind != K::floating)
      return (a.kind == K::boolean ? a.b : a.i) == (b.kind == K::boolean ? b.b : b.i);
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::undefined:
    case K::none: return true;
    case K::string: return a.text.s == b.text.s;
    case K::list:
      if (a.tuple != b.tuple || a.list->size() != b.list->size()) return false;
      for (std::size_t k = 0; k < a.list->size(); ++k)
        if (!equal((*a.list)[k], (*b.list)[k])) return false;
      return true;
    case K::dict:
      if (a.dict->size() != b.dict->size()) return false;
      for (const auto& [k, item] : *a.dict) {
        const Value* other = b.find(k.s);
        if (!other || !equal(item, *other)) return false;
      }
      return true;
    case K::ns: return a.dict == b.dict;
    default: return false;
  }
}

int compare(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    double x = as_double(a), y = as_double(b);
    if (a.kind != K::floating && b.kind != K::floating) {
      std::int64_t p = a.kind == K::boolean ? a.b : a.i, q = b.kind == K::boolean ? b.b : b.i;
      return p < q ? -1 : p > q ? 1 : 0;
    }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.kind == K::string && b.kind == K::string) {
    int c = a.text.s.compare(b.text.s);  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.kind == K::list && b.kind == K::list) {
    for (std::size_t k = 0; k < a.list->size() && k < b.list->size(); ++k) {
      if (equal((*a.list)[k], (*b.list)[k])) continue;
      return compare((*a.list)[k], (*b.list)[k]);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  throw Error("'<' not supported between instances of '" + type_name(a) + "' and '" +
              type_name(b) + "'");
}

Value from_json(const nlohmann::ordered_json& j, bool marked) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      for (const auto& [k, item] : j.items()) d.emplace_back(Text(k, marked), from_json(item, marked));
      return Value::make_dict(std::move(d));
    }
    case nlohmann::ordered_json::value_t::array: {
      List l;
      for (const auto& item : j) l.push_back(from_json(item, marked));
      return Value::make_list(std::move(l));
    }
    case nlohmann::ordered_json::value_t::string: return Value::string(Text(j.get<std::string>(), marked));
    case nlohmann::ordered_json::value_t::boolean: return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::integer(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value::floating(static_cast<double>(u));
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::floating(j.get<double>());
    default: return Value::none();
  }
}

}  // namespace fsdp::chat
