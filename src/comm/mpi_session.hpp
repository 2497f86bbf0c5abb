// SPDX-License-Identifier: MIT
// MPI for the whole of a program's main: initialised first, finalised last (after Kokkos'
// ScopeGuard, which main opens inside it), every call checked. One per driver.
#pragma once
#include <mpi.h>

#include "core/check.hpp"

namespace fsdp::comm {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv) {
    // MPI_THREAD_MULTIPLE where the library has it: a checkpoint is written by a thread of its
    // own on a communicator of its own while training goes on (io/async_checkpointer.hpp).
    int provided = MPI_THREAD_SINGLE;
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
