// SPDX-License-Identifier: MIT
// OpenBLAS picks its kernels from the CPU model name; under virtual machines that report a
// generic "Intel Xeon Processor" it falls back to SSE3 kernels at a fifth of the speed. Before
// anything else runs, choose the kernel from the CPU's real feature flags and re-execute.
#pragma once
#include <string>

namespace fsdp {

// Sets OPENBLAS_CORETYPE (SkylakeX with AVX-512, Haswell with AVX2) when it is not set, then
// re-executes the program so OpenBLAS loads with it. FSDP_NO_BLAS_SETUP=1 disables this.
void select_blas_kernel(char** argv);

// The OpenBLAS kernel family in use ("SkylakeX"), or "" where the BLAS is not OpenBLAS.
std::string blas_kernel_in_use();

// OpenBLAS's own description of its build ("OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell
// MAX_THREADS=64"), or "" where the BLAS is not OpenBLAS.
std::string blas_config();

// The widest OpenBLAS kernel family this CPU runs ("SkylakeX", "Haswell"), or "" for neither.
std::string blas_best_kernel();

// A warning when the environment pins OpenBLAS to kernels narrower than this CPU runs (an
// OPENBLAS_CORETYPE=Haswell left in a login environment on an AVX-512 core halves the GEMMs'
// speed, and select_blas_kernel respects an explicit setting); "" otherwise.
std::string blas_kernel_warning();

}  // namespace fsdp
