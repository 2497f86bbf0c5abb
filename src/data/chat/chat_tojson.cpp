// SPDX-License-Identifier: MIT
// transformers' tojson filter, which is Python's json.dumps (not Jinja's own tojson, which
// escapes <, >, & and ' for HTML): the same separators, indentation, string escapes and float
// spelling, so a tool call's arguments render byte for byte as in training data made by
// transformers.
#include <algorithm>
#include <cstdio>

#include "data/chat/chat_budget.hpp"
#include "data/chat/chat_value.hpp"
#include "data/utf8.hpp"

namespace fsdp::chat {
namespace {

void hex4(std::string& out, unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", v);
  out += buf;
}

// json.dumps' string: ", \ and the controls escaped (\n \r \t \b \f by name, the others as
// \u00XX); with ensure_ascii everything past '~' too, astral code points as surrogate pairs.
void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    CodePoint c = utf8_at(s, i);
    std::uint32_t cp = c.value;
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp > 0x7e)) {
          if (cp >= 0x10000) {
            hex4(out, 0xd800 + ((cp - 0x10000) >> 10));
            hex4(out, 0xdc00 + ((cp - 0x10000) & 0x3ff));
          } else {
            hex4(out, cp);
          }
        } else {
          out.append(s, i, c.bytes);
        }
    }
    i += c.bytes;
  }
  out += '"';
}

class Dumper {
 public:
  explicit Dumper(const JsonStyle& style) : style_(style) {
    item_sep_ = style.has_separators ? style.item_sep : style.indented ? "," : ", ";
    key_sep_ = style.has_separators ? style.key_sep : ": ";
  }

  void dump(std::string& out, const Value& v, int level) {
    using K = Value::Kind;
    grow_string(out.size(), 0);  // the render's budget bounds the text built so far
    switch (v.kind) {
      case K::none: out += "null"; return;
      case K::boolean: out += v.b ? "true" : "false"; return;
      case K::integer: out += std::to_string(v.i); return;
      case K::floating: {
        std::string f = format_float(v.f);
        out += f == "nan" ? "NaN" : f == "inf" ? "Infinity" : f == "-inf" ? "-Infinity" : f;
        return;
      }
      case K::string: json_string(out, v.text.s, style_.ensure_ascii); return;
      case K::list: {
        if (v.list->empty()) {
          out += "[]";
          return;
        }
        out += '[';
        for (std::size_t k = 0; k < v.list->size(); ++k) {
          separate(out, k > 0, level + 1);
          dump(out, (*v.list)[k], level + 1);
        }
        close(out, level);
        out += ']';
        return;
      }
      case K::dict: {
        if (v.dict->empty()) {
          out += "{}";
          return;
        }
        std::vector<const std::pair<Text, Value>*> items;
        for (const auto& item : *v.dict) items.push_back(&item);
        if (style_.sort_keys)
          std::stable_sort(items.begin(), items.end(),
                           [](auto* a, auto* b) { return a->first.s < b->first.s; });
        out += '{';
        for (std::size_t k = 0; k < items.size(); ++k) {
          separate(out, k > 0, level + 1);
          json_string(out, items[k]->first.s, style_.ensure_ascii);
          out += key_sep_;
          dump(out, items[k]->second, level + 1);
        }
        close(out, level);
        out += '}';
        return;
      }
      default: throw Error("Object of type " + type_name(v) + " is not JSON serializable");
    }
  }

 private:
  void separate(std::string& out, bool after_item, int level) {
    if (after_item) out += item_sep_;
    if (style_.indented) newline(out, level);
  }
  void close(std::string& out, int level) {
    if (style_.indented) newline(out, level);
  }
  void newline(std::string& out, int level) {
    grow_string(out.size(), 1 + std::uint64_t(level) * style_.indent.size());
    out += '\n';
    for (int k = 0; k < level; ++k) out += style_.indent;
  }

  const JsonStyle& style_;
  std::string item_sep_, key_sep_;
};

}  // namespace

Text to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  Dumper(style).dump(out, v, 0);
  return Text(std::move(out), any_marked(v));
}

}  // namespace fsdp::chat
