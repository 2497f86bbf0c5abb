// SPDX-License-Identifier: MIT
// Catch2 main for serial tests: Kokkos lives for the whole run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <Kokkos_Core.hpp>

#include "core/kokkos_session.hpp"
#include "core/blas_setup.hpp"

int main(int argc, char** argv) {
  fsdp::select_blas_kernel(argv);
  fsdp::KokkosSession kokkos(argc, argv);
  return Catch::Session().run(argc, argv);
}
