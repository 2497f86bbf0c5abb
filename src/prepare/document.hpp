// SPDX-License-Identifier: MIT
// One training document as fsdp-data reads it: a whole .txt file, or one JSONL line in one of
// three shapes ({"text"}, {"prompt", "completion"}, {"messages"}). The reader only checks the
// shape; turning a document into tokens is document_encoder's job.
#pragma once
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fsdp::prepare {

enum class DocumentKind { Text, PromptCompletion, Messages };

struct Document {
  DocumentKind kind = DocumentKind::Text;
  std::string text;                // Text
  std::string prompt, completion;  // PromptCompletion
  // Messages: an array of objects with string role, content; tools: null, or the line's own
  // "tools" (function definitions for the template's `tools`). Both keep the line's key order,
  // which the template's tojson shows (as Python's json.loads keeps it).
  nlohmann::ordered_json messages, tools;
};

// What is wrong with a line or a file, without where (the caller knows the file and line).
// `at` is the byte offset of the problem within the text it was given.
struct DocumentError : std::runtime_error {
  DocumentError(const std::string& what, std::size_t at_byte)
      : std::runtime_error(what), at(at_byte) {}
  std::size_t at;
};

// True for a line of only spaces, tabs and '\r' (skipped, not an error).
bool is_blank(std::string_view line);

// One JSONL line (without its '\n'): DocumentError for text that is not UTF-8, not JSON, not an
// object, an object of none of the shapes or of two, a field that is missing or not a string,
// or a chat's "tools" that is not a list of function definitions (docs/data.md).
Document read_jsonl_line(std::string_view line);

// A whole .txt file: DocumentError at the first byte that is not UTF-8.
Document read_text_file(std::string_view bytes);

}  // namespace fsdp::prepare
