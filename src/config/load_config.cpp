// SPDX-License-Identifier: MIT
// TOML deck + overrides -> checked RunConfig, and the resolved deck and help text, all driven by
// the schema so a key is described in exactly one place.
#include "config/load_config.hpp"

#include <cerrno>

#include <toml++/toml.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "config/schema.hpp"
#include "core/input_file.hpp"

namespace fsdp {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& key,
                       const std::string& complaint) {
  throw ConfigError(where + ": " + key + ": " + complaint);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string known_keys(const std::string& section) {
  std::vector<std::string> keys;
  for (const KeySpec& k : config_schema())
    if (k.section == section) keys.push_back(k.key);
  return "known keys in [" + section + "]: " + join(keys);
}

bool is_section(const std::string& name) {
  auto s = config_sections();
  return std::find(s.begin(), s.end(), name) != s.end();
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string located(const std::string& source, const toml::source_region& r) {
  if (r.begin.line == 0) return source;
  return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
}

std::optional<ConfigValue> scalar(const toml::node& n) {
  if (auto* v = n.as_integer()) return ConfigValue{v->get()};
  if (auto* v = n.as_floating_point()) return ConfigValue{v->get()};
  if (auto* v = n.as_boolean()) return ConfigValue{v->get()};
  if (auto* v = n.as_string()) return ConfigValue{v->get()};
  return std::nullopt;
}

std::string non_scalar_kind(const toml::node& n) {
  if (n.is_table()) return "a table";
  if (n.is_array()) return "an array";
  return "a date/time";
}

// The config being built, and where each key was last set, so that a cross-key complaint names
// the source that broke the rule rather than the one that set the other half.
struct Deck {
  RunConfig config;
  std::string source;
  std::map<std::string, std::pair<int, std::string>> origin;  // key -> (order, source)

  void apply(const KeySpec& k, const ConfigValue& given, const std::string& where) {
    ConfigValue v;
    std::string complaint = check_value(k, given, v);
    if (!complaint.empty()) fail(where, k.name(), complaint);
    k.set(config, v);
    origin[k.name()] = {static_cast<int>(origin.size()) + 1, where};
  }

  std::string blame(const std::string& a, const std::string& b) const {
    auto ia = origin.find(a), ib = origin.find(b);
    if (ia == origin.end() && ib == origin.end()) return source;
    if (ia == origin.end()) return ib->second.second;
    if (ib == origin.end()) return ia->second.second;
    return ia->second.first > ib->second.first ? ia->second.second : ib->second.second;
  }
};

void apply_table(Deck& d, const toml::table& root) {
  for (auto&& [name_key, section_node] : root) {
    const std::string name(name_key.str());
    const std::string where = located(d.source, section_node.source());
    const toml::table* table = section_node.as_table();
    if (!table)
      fail(where, name,
           "expected a [section] table (known sections: " + join(config_sections()) +
               "), got a top-level key");
    if (!is_section(name))
      fail(where, name, "unknown section (known sections: " + join(config_sections()) + ")");
    for (auto&& [key, node] : *table) {
      const std::string key_where = located(d.source, node.source());
      const KeySpec* k = find_key(name, std::string(key.str()));
      if (!k)
        fail(key_where, name + "." + std::string(key.str()),
             "unknown key (" + known_keys(name) + ")");
      std::optional<ConfigValue> given = scalar(node);
      if (!given)
        fail(key_where, k->name(),
             "expected " + describe_accepted(*k) + ", got " + non_scalar_kind(node));
      d.apply(*k, *given, key_where);
    }
  }
}

// toml++ 3.3 reaches __builtin_unreachable (undefined behaviour) when it asks whether some
// non-ASCII characters are whitespace: anywhere outside strings and comments, and after a
// backslash in a multi-line basic string (marzer/tomlplusplus#190, #295). TOML allows neither,
// so such text is turned away before it reaches the parser. The scan errs on the strict side: a
// quote opens a string only where toml++ would read one (never inside a bare key or value, where
// toml++ scans everything up to whitespace, ',', ']', '}' or '#'). Returns the 1-based line and
// column of the first offending character, or {0, 0}.
std::pair<int, int> unsafe_non_ascii(const std::string& text) {
  enum class In { Code, Comment, Basic, Literal, MultiBasic, MultiLiteral } in = In::Code;
  int line = 1, col = 0;
  bool value = false;    // after '=' (or in an array): a bare value runs to a terminator
  bool bare = false;     // inside a bare key or value
  std::string nest;      // open arrays ('a') and inline tables ('t') of the current value
  std::size_t i = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;  // a UTF-8 byte order mark
  auto at = [&](const char* s) { return text.compare(i, std::strlen(s), s) == 0; };
  auto close = [&](char q) {  // a multi-line string's closing quotes, and any right after them
    while (i + 1 < text.size() && text[i + 1] == q) ++i, ++col;
    in = In::Code;
    bare = false;
  };
  for (; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      col = 0;
      if (in == In::Comment || in == In::Basic || in == In::Literal) in = In::Code;
      if (in == In::Code) {
        bare = false;
        value = !nest.empty() && nest.back() == 'a';
      }
      continue;
    }
    if ((c & 0xC0) != 0x80) ++col;  // count characters, not UTF-8 continuation bytes
    switch (in) {
      case In::Code:
        if (c >= 0x80) return {line, col};
        if (c == '#') {
          in = In::Comment;
        } else if (c == ' ' || c == '\t' || c == ',' || c == ']' || c == '}') {
          if (c == ']' && !nest.empty() && nest.back() == 'a') nest.pop_back();
          if (c == '}' && !nest.empty() && nest.back() == 't') nest.pop_back();
          if (c == ',') value = !nest.empty() && nest.back() == 'a';
          if (c == '}') value = true;
          bare = false;
        } else if (!bare && (c == '"' || c == '\'')) {
          if (at("\"\"\"")) in = In::MultiBasic, i += 2, col += 2;
          else if (at("'''")) in = In::MultiLiteral, i += 2, col += 2;
          else in = c == '"' ? In::Basic : In::Literal;
        } else if (!value && c == '=') {  // ends a key; in a value it is a bare character
          value = true;
          bare = false;
        } else if (!value && c == '.') {  // a dotted key's next part may be quoted: a."b c"
          bare = false;
        } else if (!bare && value && (c == '[' || c == '{')) {
          nest += c == '[' ? 'a' : 't';
          value = c == '[';
        } else if (!(c == '[' && !value)) {  // '[' of a table header is no bare character
          bare = true;
        }
        break;
      case In::Comment: break;
      case In::Basic:
        if (c == '\\' && i + 1 < text.size() && text[i + 1] != '\n') ++i, ++col;
        else if (c == '"') in = In::Code, bare = false;
        break;
      case In::Literal:
        if (c == '\'') in = In::Code, bare = false;
        break;
      case In::MultiBasic:
        if (c == '\\') {  // an escape, or a line-ending backslash and the whitespace it eats
          std::size_t j = i + 1;
          while (j < text.size() && text[j] != '\0' && std::strchr(" \t\r\n", text[j])) ++j;
          if (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x80)
            return {line, col + 1};
          if (j == i + 1 && j < text.size()) ++i, ++col;  // skip the escaped character
        } else if (at("\"\"\"")) {
          close('"');
        }
        break;
      case In::MultiLiteral:
        if (at("'''")) close('\'');
        break;
    }
  }
  return {0, 0};
}

// An override value reads as a TOML value; text that does not parse as one is a bare string.
ConfigValue parse_override_value(const std::string& text, KeyType type) {
  const bool quoted = !text.empty() && (text[0] == '"' || text[0] == '\'');
  // Paths and names like 2024 or builtin:train are meant as text, whatever they look like.
  if ((type == KeyType::String || type == KeyType::Enum) && !quoted) return text;
  if (text.find_first_of("\n\r") == std::string::npos && unsafe_non_ascii(text).first == 0) {
    try {
      toml::table t = toml::parse("v = " + text);
      if (t.size() == 1)
        if (std::optional<ConfigValue> v = scalar(*t.get("v"))) return *v;
    } catch (const toml::parse_error&) {
    }
  }
  return text;
}

void apply_override(Deck& d, const std::string& text) {
  const std::string where = "--set " + text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos)
    throw ConfigError(where + ": expected section.key=value, got no '='");
  const std::string name = trim(text.substr(0, eq));
  const size_t dot = name.find('.');
  if (dot == std::string::npos)
    fail(where, name, "expected section.key=value, got no section before the key");
  const std::string section = name.substr(0, dot), key = name.substr(dot + 1);
  if (!is_section(section))
    fail(where, name,
         "unknown section '" + section + "' (known sections: " + join(config_sections()) + ")");
  const KeySpec* k = find_key(section, key);
  if (!k) fail(where, name, "unknown key (" + known_keys(section) + ")");
  d.apply(*k, parse_override_value(trim(text.substr(eq + 1)), k->type), where);
}

void check_cross(const RunConfig& c, const std::function<std::string(const CrossCheck&)>& where) {
  for (const CrossCheck& x : config_cross_checks()) {
    std::string complaint = x.check(c);
    if (!complaint.empty()) fail(where(x), x.key, complaint);
  }
}

}  // namespace

RunConfig load_config_from_string(const std::string& toml_text, const std::string& source_name,
                                  const std::vector<std::string>& overrides) {
  Deck d;
  d.source = source_name;
  toml::table root;
  if (const auto [line, col] = unsafe_non_ascii(toml_text); line > 0)
    throw ConfigError(source_name + ":" + std::to_string(line) + ":" + std::to_string(col) +
                      ": TOML syntax error: a non-ASCII character outside a string or comment, "
                      "or after a backslash in a multi-line string");
  try {
    root = toml::parse(toml_text, source_name);
  } catch (const toml::parse_error& e) {
    throw ConfigError(located(source_name, e.source()) +
                      ": TOML syntax error: " + one_line(std::string(e.description())));
  }
  apply_table(d, root);
  for (const std::string& o : overrides) apply_override(d, o);
  check_cross(d.config, [&](const CrossCheck& x) { return d.blame(x.key, x.other); });
  d.config.resolved_toml = to_toml(d.config);
  for (const auto& [key, at] : d.origin) d.config.key_origin[key] = at.second;
  return d.config;
}

RunConfig load_config(const std::string& toml_path, const std::vector<std::string>& overrides) {
  // A deck is text a person wrote; 64 MiB is far past any and keeps /dev/zero-like inputs out.
  // read(2), not a stream: an I/O error must not read as an empty deck, which is valid.
  const std::string text = rethrow_input_as<ConfigError>(
      [&] { return read_input(toml_path, "run deck", std::uint64_t(64) << 20); });
  return load_config_from_string(text, toml_path, overrides);
}

void validate_config(const RunConfig& config, const std::string& source) {
  for (const KeySpec& k : config_schema()) {
    ConfigValue v;
    std::string complaint = check_value(k, k.get(config), v);
    if (!complaint.empty()) fail(source, k.name(), complaint);
  }
  check_cross(config, [&](const CrossCheck&) { return source; });
}

std::string to_toml(const RunConfig& config) {
  std::string out = "# Resolved run deck: every key, defaults included.\n";
  for (const std::string& section : config_sections()) {
    out += "\n[" + section + "]\n";
    for (const KeySpec& k : config_schema())
      if (k.section == section) out += k.key + " = " + toml_literal(k.get(config)) + "\n";
  }
  return out;
}

std::string config_help() {
  const RunConfig defaults;
  auto pad = [](std::string s, size_t w) {
    return s.size() + 2 > w ? s + "  " : s.append(w - s.size(), ' ');
  };
  std::string out =
      "Run deck keys: write them as `key = value` under [section] in the TOML file, or override\n"
      "any with --set section.key=value. A key the deck leaves out takes the default shown.\n";
  for (const std::string& section : config_sections()) {
    out += "\n[" + section + "]\n";
    for (const KeySpec& k : config_schema()) {
      if (k.section != section) continue;
      out += "  " + pad(k.key + " = " + toml_literal(k.get(defaults)), 40) +
             pad(describe_accepted(k, true), 30) + k.meaning + "\n";
    }
  }
  return out;
}

}  // namespace fsdp
