// SPDX-License-Identifier: MIT
// An MPI communicator this code created (a duplicate or a split) and frees exactly once.
#pragma once
#include <mpi.h>

namespace fsdp::comm {

class OwnedComm {
 public:
  OwnedComm() = default;
  // A private duplicate whose errors return to FSDP_MPI_CHECK instead of aborting silently.
  static OwnedComm dup(MPI_Comm comm);
  // Takes ownership of a communicator from MPI_Comm_split and the like (MPI_COMM_NULL is fine).
  static OwnedComm adopt(MPI_Comm comm) { return OwnedComm(comm); }

  OwnedComm(OwnedComm&& o) noexcept : comm_(o.comm_) { o.comm_ = MPI_COMM_NULL; }
  OwnedComm& operator=(OwnedComm&& o) noexcept;
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  ~OwnedComm() { reset(); }

  MPI_Comm get() const { return comm_; }
  void reset();

 private:
  explicit OwnedComm(MPI_Comm comm) : comm_(comm) {}
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace fsdp::comm
