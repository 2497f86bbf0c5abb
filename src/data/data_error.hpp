// SPDX-License-Identifier: MIT
// The one exception the data layer throws: a single line that names the file and the problem,
// so a bad deck fails at load with a message the user can act on.
#pragma once
#include <stdexcept>
#include <string>

namespace fsdp {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fsdp
