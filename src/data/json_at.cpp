// SPDX-License-Identifier: MIT
#include "data/json_at.hpp"

#include "core/input_file.hpp"
#include "data/data_error.hpp"
#include "data/nesting.hpp"

namespace fsdp {

bool JsonAt::has(const char* name) const {
  const auto it = object().find(name);
  return it != node_->end() && !it->is_null();
}

JsonAt JsonAt::at(const char* name) const {
  const auto it = object().find(name);
  const std::string key = key_.empty() ? name : key_ + "." + name;
  if (it == node_->end()) JsonAt(*node_, file_, key).fail("missing");
  return JsonAt(*it, file_, key);
}

JsonAt JsonAt::at_or_null(const char* name) const {
  static const nlohmann::json null;
  const auto it = object().find(name);
  const std::string key = key_.empty() ? name : key_ + "." + name;
  return JsonAt(it == node_->end() ? null : *it, file_, key);
}

JsonAt JsonAt::at(std::size_t index) const {
  return JsonAt((*node_)[index], file_, key_ + "[" + std::to_string(index) + "]");
}

const nlohmann::json& JsonAt::object() const {
  if (!node_->is_object()) fail(std::string("not an object but ") + node_->type_name());
  return *node_;
}

std::size_t JsonAt::array_size() const {
  if (!node_->is_array()) fail(std::string("not an array but ") + node_->type_name());
  return node_->size();
}

std::string JsonAt::string(const char* name) const {
  const JsonAt v = at(name);
  if (!v.node().is_string()) v.fail(std::string("not a string but ") + v.node().type_name());
  return v.node().get<std::string>();
}

bool JsonAt::boolean(const char* name, bool fallback) const {
  return has(name) ? boolean(name) : fallback;
}

bool JsonAt::boolean(const char* name) const {
  const JsonAt v = at(name);
  if (!v.node().is_boolean()) v.fail(std::string("not true or false but ") + v.node().type_name());
  return v.node().get<bool>();
}

std::int32_t JsonAt::id() const {
  if (!node_->is_number_unsigned() || node_->get<std::uint64_t>() > 0x7FFFFFFFu)
    fail("not a token id (an integer from 0 to 2^31-1)");
  return std::int32_t(node_->get<std::uint64_t>());
}

void JsonAt::fail(const std::string& problem) const { throw DataError(where() + ": " + problem); }

nlohmann::json read_json_file(const std::string& path, const std::string& what,
                              std::uint64_t max_bytes) {
  const std::string text =
      rethrow_input_as<DataError>([&] { return read_input(path, what, max_bytes); });
  const std::size_t deep = json_too_deep_at(text);
  if (deep != std::string::npos)
    throw DataError(path + ": " + nested_too_deep() + " at byte " + std::to_string(deep + 1));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(path + ": not valid JSON (" + std::string(e.what()).substr(0, 80) + ")");
  }
}

}  // namespace fsdp
