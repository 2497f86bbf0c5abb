// SPDX-License-Identifier: MIT
// Wall-clock seconds on the monotonic clock: what every timing in fsdp subtracts.
#pragma once
#include <chrono>

namespace fsdp {

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace fsdp
