// SPDX-License-Identifier: MIT
// fsdp-data info and decode: one rank's look at a prepared token file (docs/data.md).
#pragma once
#include <cstdint>
#include <string>

namespace fsdp::prepare {

struct InspectOptions {
  std::string file, tokenizer_dir, eos;
  std::int64_t vocab = 0;  // 0: from the tokenizer, or unknown
  bool json = false;
  std::string documents, tokens;  // decode's ranges, "A:B"
};

// Each prints to stdout (errors: one line on stderr) and returns the exit code.
int run_info(const InspectOptions& o);
int run_decode(const InspectOptions& o);

}  // namespace fsdp::prepare
