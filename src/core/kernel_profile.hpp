// SPDX-License-Identifier: MIT
// Per-kernel time breakdown through the Kokkos Tools callbacks: every labelled launch
// ("module::what") and every profiling region (the GEMMs) is timed, with no code in the kernels.
#pragma once
#include <string>

namespace fsdp::profile {

void enable();  // idempotent; costs a clock read per launch once enabled
bool enabled();
void reset();
// A table of kernels by total time: calls, total ms, ms per call, share of the timed total.
std::string report(int steps);

}  // namespace fsdp::profile
