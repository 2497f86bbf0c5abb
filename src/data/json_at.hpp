// SPDX-License-Identifier: MIT
// A node of a JSON file together with the path that leads to it, so that every complaint about a
// tokenizer file is one line naming the file and the key: "tokenizer.json: model.merges[7]: ...".
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace fsdp {

class JsonAt {
 public:
  JsonAt(const nlohmann::json& node, std::string file, std::string key)
      : node_(&node), file_(std::move(file)), key_(std::move(key)) {}

  const nlohmann::json& node() const { return *node_; }
  const std::string& key() const { return key_; }
  // "<file>: <key>", how errors about this node begin.
  std::string where() const { return key_.empty() ? file_ : file_ + ": " + key_; }
  bool is_null() const { return node_->is_null(); }
  // A member that is present and not null.
  bool has(const char* name) const;
  // A member (a missing one is an error) or an element of an array.
  JsonAt at(const char* name) const;
  JsonAt at(std::size_t index) const;
  // A member that may be missing, as null then (tokenizer.json's optional parts).
  JsonAt at_or_null(const char* name) const;
  // The member `name` of this object whose value the caller already holds (when iterating).
  JsonAt member(const std::string& name, const nlohmann::json& value) const {
    return JsonAt(value, file_, key_.empty() ? name : key_ + "." + name);
  }
  // The node as an object or an array (each throws when it is not one), or the elements' count.
  const nlohmann::json& object() const;
  std::size_t array_size() const;
  // Members of given types; a missing optional one gives the fallback.
  std::string string(const char* name) const;
  bool boolean(const char* name, bool fallback) const;
  bool boolean(const char* name) const;
  std::int32_t id() const;  // this node as a token id (0 .. 2^31-1)

  // Throws DataError "<file>: <key>: <problem>".
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  const nlohmann::json* node_;
  std::string file_, key_;
};

// Parses a whole JSON file of at most max_bytes; DataError naming the file when it is not JSON.
nlohmann::json read_json_file(const std::string& path, const std::string& what,
                              std::uint64_t max_bytes);

}  // namespace fsdp
