// SPDX-License-Identifier: MIT
// Which implementation each GEMM shape ran on, for the step log and --profile: every GEMM call
// records its shape, operand dtype and path; on CPUs, with the kernel profile on, also its time
// (a GPU call is asynchronous, so there only the calls are counted).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp::kernels::gemm_paths {

struct Shape {
  char ta, tb;
  std::int64_t M, N, K;
  bool bf16;  // bf16 inputs (fp32 accumulation and output either way)
};

// A lasting copy of `path`, for record().
const std::string& intern(const std::string& path);
// `path` must outlive the process: a string from intern() or fp32_path().
void record(const Shape& shape, const std::string& path, double seconds);
// The fp32 GEMM's library in this build.
const std::string& fp32_path();
// Whether calls are being timed (the kernel profile is on and this is a CPU build).
bool timing();
void reset();

// Times one call (when timing()) and records it on destruction. A Scope opened inside another
// records nothing: the widening bf16 path's fp32 GEMM is the bf16 call.
class Scope {
 public:
  Scope(const Shape& shape, const std::string& path);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Shape shape_;
  const std::string& path_;
  double start_ = -1.0;
  bool outer_;
};
// The distinct shapes recorded so far, in a fixed order.
std::vector<Shape> shapes();
// Each distinct shape with its calls so far (over every path it took), in the same order.
struct Use {
  Shape shape;
  long calls;
};
std::vector<Use> uses();
// While one is alive, GEMM calls record nothing (a measurement's own calls, not the model's).
class Quiet {
 public:
  Quiet();
  ~Quiet();
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  bool was_;
};
// One line per shape and path: op, M x N x K, dtype, path, calls; with times, ms per step and
// GFLOP/s. `steps` divides the totals (0: leave the times out); `indent` starts every line.
std::string table(int steps, const std::string& indent = "");

}  // namespace fsdp::kernels::gemm_paths
