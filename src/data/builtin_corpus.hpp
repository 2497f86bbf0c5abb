// SPDX-License-Identifier: MIT
// An embedded English-like corpus, generated on first use by a small probabilistic grammar, so
// that the trainer and the tests run with no download and the loss has something to learn.
#pragma once
#include <string>

namespace fsdp {

// which: "train" (~1 MB) or "val" (~100 KB, another seed). Built once, then cached.
// Throws DataError for any other name.
const std::string& builtin_corpus(const std::string& which);

}  // namespace fsdp
