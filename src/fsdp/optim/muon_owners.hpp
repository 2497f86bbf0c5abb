// SPDX-License-Identifier: MIT
// Which rank orthogonalises each Muon matrix, and the buffers that costs it: the engine
// (fsdp/optim/muon_exchange.hpp) and the planner (plan/gpu_bf16_memory.cpp) read the same answer.
// Owners are positions in the matrix's part's shard group (every replica group repeats the
// same work on the same values), balanced by Newton-Schulz FLOPs, not by count: round by round
// (a unit's part, as the exchange runs them), longest job first to the position with the least
// work in the round, then the least so far. Rounds are balanced rather than the step as a whole
// because each round's owners must finish before its results return: at 2 ranks on GPT-2 124M,
// balancing the step alone left the rounds' imbalance exposed (1.44x the busiest rank's FLOPs at
// the GEMM rate, against 1.21x). The assignment depends on the layout and the shard group's size only.
#pragma once
#include <cstdint>
#include <vector>

#include "fsdp/part_layout.hpp"

namespace fsdp {

// A divided part (expert parallelism): each slice's matrices go to the positions storing that
// slice ((slice) S/P + its place in the slice's group, PartRank::position), balanced per slice.
struct MuonOwners {
  // owner[u][k][i]: the position owning tensor i of unit u's part k (the piece of the whole part
  // it stores); -1 for AdamW's tensors.
  std::vector<std::vector<std::vector<int>>> owner;
  // Newton-Schulz FLOPs per step of each position, per placement.
  std::vector<std::vector<double>> flops;
};
MuonOwners muon_owners(const RunLayout& layout, int ns_steps);

// What one rank allocates to run the exchange (elements each): the packed slices it sends in the
// largest round, the matrices it owns in the largest round, and Newton-Schulz's workspace for
// its largest matrix. positions[p]: the rank's position in placement p's shard group.
struct MuonBuffers {
  std::int64_t send = 0, gathered = 0, work = 0;
};
MuonBuffers muon_buffers(const RunLayout& layout, const MuonOwners& owners,
                         const std::vector<int>& positions, bool bf16);

}  // namespace fsdp
