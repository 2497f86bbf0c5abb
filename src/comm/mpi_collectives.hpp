// SPDX-License-Identifier: MIT
// Collectives over plain MPI, for communicators without the shared-memory path (several nodes,
// or forced off). MPI promises no reduction order, so reductions move blocks with
// (I)alltoall(v) and sum them locally in rank order (rank_order_sum.hpp). The all-to-all-v
// (mpi_all_to_all_v.cpp) is point to point.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.hpp"

namespace fsdp::comm::mpi {

// Each returns what is still in flight; blocking calls (and the MPI blocking collectives they
// use) return nullptr. Counts are elements: per rank for all_gather, of recv for reduce_scatter.
std::unique_ptr<detail::Pending> all_gather(MPI_Comm comm, const float* send, float* recv,
                                            std::size_t count, bool in_place, bool blocking);
std::unique_ptr<detail::Pending> reduce_scatter(MPI_Comm comm, const float* send, float* recv,
                                                std::size_t count, ReduceOp op, bool blocking);
// bf16 blocks in, their float sum out (rank_order_sum.hpp).
std::unique_ptr<detail::Pending> reduce_scatter(MPI_Comm comm, const std::uint16_t* send,
                                                float* recv, std::size_t count, ReduceOp op,
                                                bool blocking);
std::unique_ptr<detail::Pending> all_reduce(MPI_Comm comm, float* buf, std::size_t count,
                                            ReduceOp op, bool blocking);

// Block q of send to rank q, rank p's block into recv's block p (elements; the caller has
// checked the blocks). Point to point, so each receiver sees what its sender sent: a count that
// disagrees is fatal, naming `where` and both counts. Per-peer counts must fit MPI's int.
std::unique_ptr<detail::Pending> all_to_all_v(MPI_Comm comm, const float* send,
                                              const PeerBlocks& send_blocks, float* recv,
                                              const PeerBlocks& recv_blocks,
                                              const std::string& where, bool blocking);

// MPI counts are int: larger messages are a clear error rather than a silent wrap.
int checked_count(std::size_t n, const char* op);

}  // namespace fsdp::comm::mpi
