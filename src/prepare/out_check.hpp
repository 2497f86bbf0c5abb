// SPDX-License-Identifier: MIT
// What fsdp-data prepare may write over (issue 63): OUT and OUT.trained are replaced only when
// each is absent or a file of the kind prepare writes (an llm.c token file, a trained-token
// mask), the rule --metrics follows for its own files (io/output_path.hpp). A FIFO or device,
// a directory, an input of this run or a tokenizer file is refused by name before any work.
#pragma once
#include <string>
#include <vector>

namespace fsdp::prepare {

// Why `out` cannot be prepare's output, or "" when it can: "--out PATH: <why>" (one line).
std::string out_problem(const std::string& out, const std::vector<std::string>& inputs,
                        const std::string& tokenizer_dir);

}  // namespace fsdp::prepare
