// SPDX-License-Identifier: MIT
// Catch2 main for multi-rank tests: MPI and Kokkos live for the whole run, and the job fails if
// any rank failed (a failure on rank 1 alone must not print "All tests passed" and exit 0).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <mpi.h>

#include <Kokkos_Core.hpp>

#include "core/kokkos_session.hpp"
#include "core/blas_setup.hpp"

int main(int argc, char** argv) {
  fsdp::select_blas_kernel(argv);
  int provided = MPI_THREAD_SINGLE;  // as the apps ask (comm/mpi_session.hpp)
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int failed = 0;
  {
    fsdp::KokkosSession kokkos(argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    Catch::Session session;
    int rc = session.applyCommandLine(argc, argv);
    if (rc == 0) rc = session.run();
    int any = rc != 0 ? 1 : 0;
    MPI_Allreduce(&any, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (failed && rc != 0) std::fprintf(stderr, "rank %d: tests failed\n", rank);
  }
  MPI_Finalize();
  return failed;
}
