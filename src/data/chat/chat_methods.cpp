// SPDX-License-Identifier: MIT
// Python's str and dict methods a chat template calls (message.content.split('</think>'),
// .strip('\n'), .startswith(...), message.get('x'), tool.items(), ...). Results keep the marks
// of the bytes they come from (the SFT mask). Case mapping covers ASCII; text holding letters
// of other cased scripts is refused rather than mapped wrongly.
#include <set>

#include "data/chat/chat_builtins.hpp"
#include "data/chat/chat_lexer.hpp"
#include "data/utf8.hpp"

namespace fsdp::chat {

const Value* Args::get(std::size_t index, const char* name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword)
    if (k == name) return &v;
  return nullptr;
}

std::vector<std::size_t> code_point_starts(const std::string& s) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < s.size(); i += utf8_at(s, i).bytes) starts.push_back(i);
  starts.push_back(s.size());
  return starts;
}

namespace {

using K = Value::Kind;

// Code points whose case Python would change beyond ASCII (Latin, Greek, Cyrillic, Armenian,
// Georgian, Cherokee, Glagolitic, Coptic, fullwidth, Deseret, ...).
bool has_non_ascii_case(const std::string& s) {
  static const std::uint32_t ranges[][2] = {
      {0xb5, 0xb5},       {0xc0, 0x58f},      {0x10a0, 0x10ff},   {0x13a0, 0x13ff},
      {0x1c80, 0x1cbf},   {0x1e00, 0x1fff},   {0x2100, 0x218f},   {0x24b6, 0x24e9},
      {0x2c00, 0x2d2f},   {0xa640, 0xa69f},   {0xa720, 0xa7ff},   {0xab30, 0xabbf},
      {0xfb00, 0xfb17},   {0xff21, 0xff5a},   {0x10400, 0x104ff}, {0x10c80, 0x10cff},
      {0x118a0, 0x118ff}, {0x16e40, 0x16e9f}, {0x1e900, 0x1e94f}};
  for (std::size_t i = 0; i < s.size();) {
    CodePoint c = utf8_at(s, i);
    for (const auto& r : ranges)
      if (c.value >= r[0] && c.value <= r[1]) return true;
    i += c.bytes;
  }
  return false;
}

const Text& need_string(const Value* v, const std::string& what) {
  if (!v || !v->is(K::string)) throw Error(what + " must be a string");
  return v->text;
}

// The set of code points to strip, or empty for whitespace.
bool in_chars(std::uint32_t cp, const std::string& chars) {
  for (std::size_t i = 0; i < chars.size();) {
    CodePoint c = utf8_at(chars, i);
    if (c.value == cp) return true;
    i += c.bytes;
  }
  return false;
}

List split(const Text& t, const Value* sep_v, const Value* maxsplit_v) {
  std::int64_t maxsplit = maxsplit_v && maxsplit_v->is(K::integer) ? maxsplit_v->i : -1;
  List parts;
  const std::string& s = t.s;
  if (!sep_v || sep_v->is(K::none)) {  // runs of whitespace; no empty parts
    std::size_t i = 0;
    for (;;) {
      while (i < s.size() && is_py_space(utf8_at(s, i).value)) i += utf8_at(s, i).bytes;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
        parts.push_back(Value::string(t.bytes(i, s.size())));  // the rest keeps its end
        break;
      }
      std::size_t j = i;
      while (j < s.size() && !is_py_space(utf8_at(s, j).value)) j += utf8_at(s, j).bytes;
      parts.push_back(Value::string(t.bytes(i, j)));
      i = j;
    }
    return parts;
  }
  const std::string& sep = need_string(sep_v, "split's separator").s;
  if (sep.empty()) throw Error("empty separator");
  std::size_t from = 0;
  for (std::size_t at; (at = s.find(sep, from)) != std::string::npos;) {
    if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) break;
    parts.push_back(Value::string(t.bytes(from, at)));
    from = at + sep.size();
  }
  parts.push_back(Value::string(t.bytes(from, s.size())));
  return parts;
}

Text replace(const Text& t, const std::string& old, const Text& with, std::int64_t count) {
  Text out;
  const std::string& s = t.s;
  if (old.empty()) {  // Python inserts `with` between code points and at both ends
    std::vector<std::size_t> starts = code_point_starts(s);
    for (std::size_t k = 0; k + 1 < starts.size(); ++k) {
      if (count < 0 || static_cast<std::int64_t>(k) < count) out.append(with);
      out.append(t.bytes(starts[k], starts[k + 1]));
    }
    if (count < 0 || static_cast<std::int64_t>(starts.size()) - 1 < count) out.append(with);
    return out;
  }
  std::size_t from = 0;
  for (std::int64_t n = 0; count < 0 || n < count; ++n) {
    std::size_t at = s.find(old, from);
    if (at == std::string::npos) break;
    out.append(t.bytes(from, at));
    out.append(with);
    from = at + old.size();
  }
  out.append(t.bytes(from, s.size()));
  return out;
}

bool affix(const Text& t, const Value& arg, bool prefix) {
  auto one = [&](const std::string& a) {
    return t.s.size() >= a.size() &&
           t.s.compare(prefix ? 0 : t.s.size() - a.size(), a.size(), a) == 0;
  };
  if (arg.is(K::list)) {
    for (const Value& v : *arg.list)
      if (one(need_string(&v, "a prefix or suffix").s)) return true;
    return false;
  }
  return one(need_string(&arg, "a prefix or suffix").s);
}

Value dict_method(const Value& self, const std::string& name, const Args& args) {
  if (name == "get") {
    const Value* key = args.get(0, "key");
    const Value* fallback = args.get(1, "default");
    if (!key) throw Error("get expected at least 1 argument");
    const Value* v = key->is(K::string) ? self.find(key->text.s) : nullptr;
    return v ? *v : fallback ? *fallback : Value::none();
  }
  List out;
  for (const auto& [k, v] : *self.dict) {
    if (name == "items") out.push_back(Value::make_tuple({Value::string(k), v}));
    else if (name == "keys") out.push_back(Value::string(k));
    else if (name == "values") out.push_back(v);
    else throw Unsupported("method '" + name + "' of a dict");
  }
  return Value::make_list(std::move(out));
}

}  // namespace

Text strip(const Text& t, const Value* chars, bool left, bool right) {
  const std::string& s = t.s;
  bool whitespace = !chars || chars->is(K::none) || chars->is(K::undefined);
  const std::string set = whitespace ? std::string() : need_string(chars, "strip's characters").s;
  auto strips = [&](std::uint32_t cp) { return whitespace ? is_py_space(cp) : in_chars(cp, set); };
  std::size_t begin = 0, end = s.size();
  while (left && begin < end && strips(utf8_at(s, begin).value)) begin += utf8_at(s, begin).bytes;
  while (right && end > begin) {
    std::size_t b = utf8_before(s, end);
    if (!strips(utf8_at(s, b).value)) break;
    end = b;
  }
  return t.bytes(begin, end);
}

// ASCII case mapping, byte for byte (marks unchanged): mode 'u' upper, 'l' lower, 't' title
// (Python's: a letter after a letter is lowered, others raised), 'c' capitalize.
Text change_case(const Text& t, char mode, const std::string& what) {
  if (has_non_ascii_case(t.s)) throw Unsupported(what + " of non-ASCII letters");
  Text out = t;
  bool after_letter = false;
  for (std::size_t k = 0; k < out.s.size(); ++k) {
    char& c = out.s[k];
    bool upper = mode == 'u' || (mode == 't' && !after_letter) || (mode == 'c' && k == 0);
    bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (letter) c = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
    after_letter = letter;
  }
  return out;
}

bool is_method_name(const Value& self, const std::string& name) {
  static const std::set<std::string> str_methods = {
      "capitalize", "casefold", "center", "count", "encode", "endswith", "expandtabs", "find",
      "format", "format_map", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
      "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper",
      "join", "ljust", "lower", "lstrip", "maketrans", "partition", "removeprefix",
      "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip",
      "split", "splitlines", "startswith", "strip", "swapcase", "title", "translate", "upper",
      "zfill"};
  static const std::set<std::string> dict_methods = {"clear", "copy", "fromkeys", "get",
                                                     "items", "keys", "pop", "popitem",
                                                     "setdefault", "update", "values"};
  static const std::set<std::string> list_methods = {"append", "clear", "copy", "count", "extend",
                                                     "index", "insert", "pop", "remove",
                                                     "reverse", "sort"};
  if (self.is(K::string)) return str_methods.count(name) > 0;
  if (self.is(K::dict)) return dict_methods.count(name) > 0;
  if (self.is(K::list)) return list_methods.count(name) > 0;
  return false;
}

Value call_method(const Value& self, const std::string& name, const Args& args) {
  if (self.is(K::dict)) return dict_method(self, name, args);
  if (!self.is(K::string)) {
    if (self.is(K::list) && is_method_name(self, name))
      throw Unsupported("method '" + name + "' of a list");
    throw Error("'" + type_name(self) + " object' has no callable attribute '" + name + "'");
  }
  const Text& t = self.text;
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return Value::string(strip(t, args.get(0, "chars"), name != "rstrip", name != "lstrip"));
  if (name == "split") return Value::make_list(split(t, args.get(0, "sep"), args.get(1, "maxsplit")));
  if (name == "startswith" || name == "endswith") {
    if (args.positional.size() != 1 || !args.keyword.empty())
      throw Unsupported(name + " with a start or end argument");
    return Value::boolean(affix(t, args.positional[0], name == "startswith"));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize")
    return Value::string(change_case(t, name[0] == 'u' ? 'u' : name[0] == 'l' ? 'l' : name[0], name));
  if (name == "replace") {
    const Value* count = args.get(2, "count");
    return Value::string(replace(t, need_string(args.get(0, "old"), "replace's old").s,
                                 need_string(args.get(1, "new"), "replace's new"),
                                 count && count->is(K::integer) ? count->i : -1));
  }
  if (name == "find" || name == "count") {
    const std::string& sub = need_string(args.get(0, "sub"), name + "'s argument").s;
    if (args.positional.size() != 1) throw Unsupported(name + " with a start or end argument");
    if (name == "find") {
      std::size_t at = t.s.find(sub);
      return Value::integer(at == std::string::npos ? -1 : static_cast<std::int64_t>(
                                                             code_point_starts(t.s.substr(0, at)).size() - 1));
    }
    if (sub.empty()) return Value::integer(static_cast<std::int64_t>(code_point_starts(t.s).size()));
    std::int64_t n = 0;
    for (std::size_t at = t.s.find(sub); at != std::string::npos; at = t.s.find(sub, at + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    const Value* items = args.get(0, "iterable");
    if (!items || !items->is(K::list)) throw Error("join takes a list");
    Text out;
    for (std::size_t k = 0; k < items->list->size(); ++k) {
      if (k) out.append(t);
      out.append(need_string(&(*items->list)[k], "each item joined"));
    }
    return Value::string(std::move(out));
  }
  throw Unsupported("method '" + name + "' of a string");
}

}  // namespace fsdp::chat
