// SPDX-License-Identifier: MIT
// The ranks' trained-token masks joined in rank order on rank 0. A rank's bits start at bit 0
// of its own bytes, but its place in the whole mask rarely falls on a byte boundary, so rank 0
// re-lays them; the other ranks send their packed bytes (1 bit a token).
#pragma once
#include <mpi.h>

#include "data/trained_mask.hpp"

namespace fsdp::prepare {

// On rank 0 the whole mask (eos_id unset); on the others an empty one. Collective over comm.
TrainedMask gather_mask(MPI_Comm comm, const TrainedMask& mine);

}  // namespace fsdp::prepare
