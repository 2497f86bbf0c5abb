// SPDX-License-Identifier: MIT
// `fsdp-bench tokenizer`: encode throughput of a Hugging Face tokenizer (data/tokenizer.hpp) on
// one core, one table row per run, each run from an empty word cache. The comparison with
// tiktoken on the same text is jobscripts/tokenizer_vs_tiktoken.sh.
#pragma once
#include <mpi.h>

#include <string>

namespace fsdp::bench {

struct TokenizerBenchOptions {
  std::string tokenizer;  // a directory with tokenizer.json, or the file
  std::string text;       // a UTF-8 text file, encoded whole
  int runs = 5;
  bool special = false;  // add_special_tokens
};

int run_tokenizer_bench(MPI_Comm world, const TokenizerBenchOptions& o);

}  // namespace fsdp::bench
