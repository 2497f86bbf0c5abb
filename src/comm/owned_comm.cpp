// SPDX-License-Identifier: MIT
#include "comm/owned_comm.hpp"

#include "core/check.hpp"

namespace fsdp::comm {

OwnedComm OwnedComm::dup(MPI_Comm comm) {
  MPI_Comm d = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_dup(comm, &d));
  FSDP_MPI_CHECK(MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN));
  return OwnedComm(d);
}

OwnedComm& OwnedComm::operator=(OwnedComm&& o) noexcept {
  if (this != &o) {
    reset();
    comm_ = o.comm_;
    o.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

void OwnedComm::reset() {
  if (comm_ == MPI_COMM_NULL) return;
  // A communicator outliving MPI_Finalize (a leaked static) must not crash the exit path.
  int finalized = 0;
  FSDP_MPI_CHECK(MPI_Finalized(&finalized));
  if (!finalized) FSDP_MPI_CHECK(MPI_Comm_free(&comm_));
  comm_ = MPI_COMM_NULL;
}

}  // namespace fsdp::comm
