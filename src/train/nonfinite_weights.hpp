// SPDX-License-Identifier: MIT
// Non-finite parameters at load: a NaN or infinity in a weights file or checkpoint would train
// (or sample, or be saved again into checkpoints that verify) without a word, since nothing
// downstream fails until a loss does. Every load scans its shards once and names the first.
#pragma once
#include <mpi.h>

#include <string>

#include "fsdp/engine.hpp"

namespace fsdp {

// "" when every parameter is finite, else "<tensor>[<index>] is <value>" for the first
// non-finite one in flat order (the lowest unit, then the lowest offset, over every rank's
// shard). Collective over `world`: every rank returns the same text.
std::string first_nonfinite_param(Engine& engine, MPI_Comm world);

}  // namespace fsdp
