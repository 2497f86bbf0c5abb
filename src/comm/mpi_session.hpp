// SPDX-License-Identifier: MIT
// MPI for the whole of a program's main: initialised first, finalised last (after Kokkos'
// ScopeGuard, which main opens inside it), every call checked. One per driver.
#pragma once
#include <mpi.h>

#include <cstdlib>

#include "core/check.hpp"

namespace fsdp::comm {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    // MPI_THREAD_MULTIPLE where the library has it: a checkpoint is written by a thread of its
    // own on a communicator of its own while training goes on (io/async_checkpointer.hpp).
    int provided = MPI_THREAD_SINGLE;
    // Open MPI's progress loop gives the core away (sched_yield) when it has nothing to do, as
    // the shm collectives' barrier already does (comm/shm_window.hpp). The checkpoint writer
    // shares its rank's core with training and waits in MPI (its checksums, HDF5's collectives)
    // for the other ranks' writers: spinning there takes the core from training, which a
    // slower rank then holds up at the next collective. Measured on 2 vCPUs at np 2
    // (docs/checkpoints.md): a background save cost training 0.21-0.24 of a synchronous one
    // with it, 0.24-0.30 without; runs without checkpoints 0.98x (0.88-1.03). So it is the
    // default; a value the user set stands (OMPI_MCA_mpi_yield_when_idle=0 turns it off).
    // Other MPI libraries ignore the variable.
    ::setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    FSDP_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    FSDP_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    FSDP_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  }
  ~MpiSession() { FSDP_MPI_CHECK(MPI_Finalize()); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace fsdp::comm
