// SPDX-License-Identifier: MIT
// fsdp-data info and decode: what a prepared token file holds, read back with the readers
// training uses (TokenFile, TrainedMask), so what they report is what training will see.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp::prepare {

struct FileSummary {
  std::int64_t tokens = 0, trained = 0;
  std::int64_t documents = -1;  // -1: no document end id known
  std::int32_t eos_id = -1;
  std::int32_t max_id = -1;
  bool has_mask = false;
};

// `path`: an llm.c token file, with its mask beside it when there is one. eos_id (>= 0) counts
// documents when there is no mask (the mask's recorded id wins). DataError for a bad file.
FileSummary summarize_token_file(const std::string& path, std::int32_t eos_id);

// The tokens of path [begin, end): by token index, or by document (the ids between document
// ends, each document with its end id). DataError when the range is outside the file or the
// document end id is unknown.
std::vector<std::int32_t> tokens_in_range(const std::string& path, std::int64_t begin,
                                          std::int64_t end, bool by_document, std::int32_t eos_id);

// "A:B" (either side may be empty: from the start, to the end; "A" alone is A:A+1) as
// [begin, end); false when it does not parse.
bool parse_range(const std::string& s, std::int64_t& begin, std::int64_t& end);

}  // namespace fsdp::prepare
