// SPDX-License-Identifier: MIT
// Whether the MPI library can take device pointers, asked of the library at run time (the
// headers compiled against may differ from the library loaded). Never assumed.
#pragma once

namespace fsdp::comm {

// Open MPI: MPIX_Query_cuda_support() where <mpi-ext.h> declares it (MPIX_CUDA_AWARE_SUPPORT
// defined, even as 0). Any other MPI, or an Open MPI without the extension: false.
// Call after MPI_Init.
bool mpi_is_cuda_aware();

// What the headers said at compile time: "yes", "no" or "unknown" (for the log).
const char* mpi_cuda_aware_compile_time();

}  // namespace fsdp::comm
