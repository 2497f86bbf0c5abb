// SPDX-License-Identifier: MIT
// The node-local disk's rates for fsdp.offload = nvme, measured the way the offload uses it:
// every rank of every node streams its own anonymous file in offload.path at once, with direct
// I/O from aligned buffers through the offload file's queue (core/offload_file.hpp). Rates are
// per node (bytes/s): the ranks' bytes over the slowest rank's time.
#pragma once
#include <cstdint>
#include <string>

#include "comm/communicator.hpp"

namespace fsdp::bench {

struct DiskRates {
  double read = 0.0, write = 0.0;  // bytes/s per node
  bool direct = false;             // O_DIRECT (else the page cache: not the disk's rate)
};

// node: this node's ranks; world: every rank (the figures are the slowest node's). A dir that
// cannot take bytes_per_rank per rank ends the job with the offload's one-line reason (exit 2).
DiskRates measure_disk(comm::Communicator& node, comm::Communicator& world, const std::string& dir,
                       std::int64_t bytes_per_rank);

}  // namespace fsdp::bench
