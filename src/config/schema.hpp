// SPDX-License-Identifier: MIT
// The run-deck schema: every `section.key` of RunConfig with its type, default, accepted range
// and meaning. Validation, the resolved deck and the --help text are all generated from it.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/run_config.hpp"

namespace fsdp {

enum class KeyType { Int, Int64, Float, Bool, String, Enum, Bytes };

// A scalar as written in a deck; after check_value it is in the key's own kind (an integer given
// to a float key becomes a double, "1GiB" given to a byte count becomes an integer).
using ConfigValue = std::variant<bool, std::int64_t, double, std::string>;

struct Bound {
  double value;
  bool open;  // strict inequality
};

struct KeySpec {
  std::string section;
  std::string key;
  KeyType type;
  std::optional<Bound> lo, hi;
  std::vector<std::string> choices;  // Enum only
  std::string meaning;
  std::function<void(RunConfig&, const ConfigValue&)> set;  // value must have passed check_value
  std::function<ConfigValue(const RunConfig&)> get;

  std::string name() const { return section + "." + key; }
};

// A constraint between keys; check returns "" when it holds, else "expected ..., got ...".
struct CrossCheck {
  std::string key;    // the key the complaint is about
  std::string other;  // the key it depends on
  std::function<std::string(const RunConfig&)> check;
};

const std::vector<KeySpec>& config_schema();
const std::vector<CrossCheck>& config_cross_checks();
std::vector<std::string> config_sections();  // schema order
const KeySpec* find_key(const std::string& section, const std::string& key);

// Type and range check of one value. Returns "" and sets `out` on success, else the complaint
// "expected <what is accepted>, got <what was given>".
std::string check_value(const KeySpec& k, const ConfigValue& given, ConfigValue& out);

// "an integer >= 1", "a float in [0, 1)", `one of "none", "blocks"`; short form for help columns.
std::string describe_accepted(const KeySpec& k, bool short_form = false);
std::string toml_literal(const ConfigValue& v);  // valid TOML, floats round-trip exactly

// "512MiB", "2GB", "1.5 GiB", "4096" -> bytes; nullopt unless a whole, non-negative int64.
std::optional<std::int64_t> parse_byte_size(const std::string& text);

}  // namespace fsdp
