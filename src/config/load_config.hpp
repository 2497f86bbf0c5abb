// SPDX-License-Identifier: MIT
// Reads a run deck: a TOML file plus `section.key=value` overrides, checked against the schema
// (config/schema.hpp) before anything runs. Every rejection is one ConfigError line.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace fsdp {

// what(): "<source>: <section.key>: <complaint>", where source is the file (with line:col when
// known) or "--set <override>".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses the file, applies overrides in order (later wins), validates every key and the
// cross-key rules, and fills resolved_toml. Throws ConfigError.
RunConfig load_config(const std::string& toml_path, const std::vector<std::string>& overrides = {});

// The same, for deck text already in memory (e.g. the resolved_toml stored in a checkpoint);
// source_name stands in for the file path in messages.
RunConfig load_config_from_string(const std::string& toml_text, const std::string& source_name,
                                  const std::vector<std::string>& overrides = {});

// Range and cross-key checks for a RunConfig built in code; throws ConfigError naming `source`.
void validate_config(const RunConfig& config, const std::string& source);

// Every key, defaults included, as TOML text; load_config_from_string reproduces the config.
std::string to_toml(const RunConfig& config);

// Every key grouped by section with its type, default and meaning (appended to --help).
std::string config_help();

}  // namespace fsdp
