// SPDX-License-Identifier: MIT
#include "core/faults.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "core/types.hpp"

namespace fsdp::faults {
namespace {

// "<name>@<number>" split at the '@', or false.
bool name_at(const char* spec, std::string& name, int& number) {
  if (!spec) return false;
  const std::string s(spec);
  const auto at = s.find('@');
  if (at == std::string::npos) return false;
  name = s.substr(0, at);
  number = std::atoi(s.c_str() + at + 1);
  return true;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

}  // namespace

std::string nan_unit(int step) {
  const char* spec = std::getenv("FSDP_TEST_INJECT_NAN");  // read each time: tests change it
  std::string unit;
  int at = -1;
  if (!name_at(spec, unit, at) || at != step) return "";
  return unit;
}

int offload_io_error(int world_rank, std::uint64_t request) {
  static const char* spec = std::getenv("FSDP_TEST_OFFLOAD_FAIL");
  std::string rank;
  int at = 0;
  if (!name_at(spec, rank, at) || std::atoi(rank.c_str()) != world_rank) return 0;
  if (request < std::uint64_t(at)) return 0;
  return std::string(spec).find(":enospc") != std::string::npos ? ENOSPC : EIO;
}

long long stream_piece() {
  const char* spec = std::getenv("FSDP_TEST_STREAM_PIECE");
  return spec ? std::atoll(spec) : 0;
}

bool skip_gather(const std::string& unit, int world_rank) {
  static const char* spec = std::getenv("FSDP_TEST_SKIP_GATHER");
  static bool used = false;
  std::string name;
  int rank = -1;
  if (used || !name_at(spec, name, rank) || name != unit || rank != world_rank) return false;
  used = true;
  return true;
}

void stall(int step, int world_rank) {
  static const char* spec = std::getenv("FSDP_TEST_STALL");
  if (!spec) return;
  int r = -1, s = -1;
  double seconds = 0;
  if (std::sscanf(spec, "%d@%d:%lf", &r, &s, &seconds) == 3 && r == world_rank && s == step)
    sleep_s(seconds);
}

void stop_if_asked(int world_rank) {
  static const char* spec = std::getenv("FSDP_TEST_STOP_RANK");
  if (spec && *spec && std::atoi(spec) == world_rank) ::raise(SIGSTOP);
}

void truncate_mapped_input(const std::string& path) {
  static const char* spec = std::getenv("FSDP_TEST_TRUNCATE_MAPPED");
  if (spec && *spec && ::truncate(path.c_str(), off_t(std::atoll(spec))) != 0)
    std::fprintf(stderr, "FSDP_TEST_TRUNCATE_MAPPED: cannot truncate %s\n", path.c_str());
}

void pause_in_checkpoint_write(int rank) {
  const char* s = std::getenv("FSDP_TEST_PAUSE_IN_CHECKPOINT_WRITE");
  if (!s || !*s) return;
  const double seconds = std::atof(s);
  if (rank == 0) {
    std::fprintf(stderr,
                 "checkpoint: pausing %.1f s inside the write "
                 "(FSDP_TEST_PAUSE_IN_CHECKPOINT_WRITE, tests only)\n",
                 seconds);
    std::fflush(stderr);
  }
  sleep_s(seconds);
}

bool skip_space_check() {
  static const bool skip = [] {
    const char* v = std::getenv("FSDP_TEST_SKIP_SPACE_CHECK");
    return v && *v && *v != '0';
  }();
  return skip;
}

void throw_if_asked(const char* program) {
  const char* v = std::getenv("FSDP_TEST_THROW");
  if (v && std::string(v) == program)
    throw std::runtime_error(std::string("FSDP_TEST_THROW=") + program);
}

// Out of line and not inlined, so the space check's stack names it. Through a View, as host
// code that forgets a mirror would read it.
__attribute__((noinline)) void touch_device_on_host(const float* device_data) {
  static const bool asked = [] {
    const char* v = std::getenv("FSDP_TEST_TOUCH_DEVICE");
    return v && std::string(v) == "1";
  }();
  if (!asked) return;
  const ConstVec d(device_data, 1);
  std::fprintf(stderr, "FSDP_TEST_TOUCH_DEVICE: a device buffer read on the host: %g\n",
               double(d(0)));
}

}  // namespace fsdp::faults
