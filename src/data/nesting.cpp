// SPDX-License-Identifier: MIT
#include "data/nesting.hpp"

namespace fsdp {

std::string nested_too_deep() {
  return "nested too deep (limit " + std::to_string(kMaxNesting) + ")";
}

std::size_t json_too_deep_at(std::string_view json) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) return i;
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced brackets are the parser's to report
    }
  }
  return std::string_view::npos;
}

}  // namespace fsdp
