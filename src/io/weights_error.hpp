// SPDX-License-Identifier: MIT
// The one error every weight-file reader and writer throws: "<file>: <tensor or field>: <what>",
// one line, the same on every rank that read the same bytes. fsdp-train maps it to exit code 5.
#pragma once
#include <stdexcept>
#include <string>

namespace fsdp::weights {

struct WeightsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Clips a value quoted from a file to one short line (a hostile header may hold megabytes or
// newlines where a name belongs).
std::string quote(const std::string& s, std::size_t max_chars = 80);

}  // namespace fsdp::weights
