// SPDX-License-Identifier: MIT
// Wall-clock seconds on the monotonic clock (what every timing in fsdp subtracts), and a
// thread's CPU seconds.
#pragma once
#include <time.h>

#include <chrono>

namespace fsdp {

inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// CPU seconds the calling thread has used: what a background thread takes from training.
inline double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace fsdp
