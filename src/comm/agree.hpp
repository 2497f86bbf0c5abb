// SPDX-License-Identifier: MIT
// Failing together: after a step that may fail on some ranks only, every rank learns whether
// any failed and gets the lowest failing rank's message, so all of them stop (or go on) at the
// same point and none is left waiting in a collective.
#pragma once
#include <mpi.h>

#include <string>

namespace fsdp {

// `mine`: this rank's error message, empty when it succeeded. Returns the message of the lowest
// failing rank (empty when none failed) on every rank. Collective over comm.
std::string agree_on_error(MPI_Comm comm, const std::string& mine);

// agree_on_error with the failing rank and an exit code: the lowest failing rank's message,
// rank and code on every rank (rank -1 and code 0 when none failed). Collective over comm.
struct Agreed {
  std::string message;
  int rank = -1;
  int code = 0;
};
Agreed agree_on_failure(MPI_Comm comm, const std::string& mine, int code);

// A failure that may have happened on this rank alone (out of memory, a rank-local exception
// mid-step): true when every rank of comm reaches this call within timeout_s (the failure is
// shared, and the ranks can stop together and report once), false when some rank does not come
// (it is waiting in another collective: the caller must end the job, not unwind into a wait).
// Collective over comm, which must be reserved for this (no other traffic on it).
bool all_arrive_within(MPI_Comm comm, double timeout_s);

// root's `s` on every rank. Collective over comm.
std::string broadcast_string(MPI_Comm comm, const std::string& s, int root);

}  // namespace fsdp
