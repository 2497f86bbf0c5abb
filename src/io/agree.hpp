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

// root's `s` on every rank. Collective over comm.
std::string broadcast_string(MPI_Comm comm, const std::string& s, int root);

}  // namespace fsdp
