# SPDX-License-Identifier: MIT
# The third-party headers nearly every source of the library parses (Kokkos through
# core/types.hpp, MPI, the standard containers), compiled once per build instead of once per
# source: the CI builds the library twice (the main build and the space-check build) on 2 cores,
# and parsing Kokkos_Core.hpp alone takes about a second a source. Only headers from outside
# the project go in, so a source still compiles without it (FSDP_PCH=OFF, or another compiler);
# the code generated is the same either way.
option(FSDP_PCH "Precompile the library's common third-party headers (GCC host builds)" ON)
# Whether this build precompiles: tests/CMakeLists.txt asks the same for the unit-test binary.
set(FSDP_USE_PCH OFF)
if(FSDP_PCH AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT FSDP_ENABLE_CUDA)
  set(FSDP_USE_PCH ON)
endif()
if(FSDP_USE_PCH)
  target_precompile_headers(fsdp PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:<Kokkos_Core.hpp>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<mpi.h>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<string>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<vector>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<map>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<memory>>"
    "$<$<COMPILE_LANGUAGE:CXX>:<functional>>")
  # Compiled with -fopenmp (oneDNN's threads): GCC refuses a header compiled without it.
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/model/gemm/onednn_matmul.cpp PROPERTIES
    SKIP_PRECOMPILE_HEADERS ON)
endif()
