// SPDX-License-Identifier: MIT
// The GEMM rate of one rank: MFU's denominator where no data sheet gives one, and the machine
// bench's reference rate.
#pragma once
#include <string>
#include <vector>

#include "model/gemm/gemm_paths.hpp"

namespace fsdp {

// FLOP/s of one rank's float (or bf16) GEMM, the best of five 1024^3 products (the machine
// bench's reference rate).
double measure_gemm_flops(bool bf16 = false);

// The rate a step's own GEMMs reach: each shape of `mix` (a step's calls, gemm_paths::uses())
// timed warm on its own path (bf16 or fp32 inputs as recorded), at least twice and until it has
// run kProbeSecondsPerShape, its best call kept; the rate is the mix's FLOPs over the time its
// calls take at those speeds. A shape of more than kProbeMaxFlops per call is timed with fewer
// rows or columns of its output (each is independent of the others: past a few hundred the
// rate no longer changes), so that the probe costs about a second whatever the model.
// `what` receives one line saying what was measured.
constexpr double kProbeSecondsPerShape = 0.005;
constexpr double kProbeMaxFlops = 1e9;
double measure_step_gemm_flops(const std::vector<kernels::gemm_paths::Use>& mix,
                               std::string* what);

}  // namespace fsdp
