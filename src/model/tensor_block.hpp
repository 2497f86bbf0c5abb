// SPDX-License-Identifier: MIT
// A tensor split along one of its own dimensions over the ranks of a mesh dimension (the idea of
// PyTorch DTensor's Shard(d) placement): the block of its index space that one rank holds. A
// column-parallel weight is split along its output dimension, a row-parallel one along its input,
// a context-parallel activation along its sequence; checkpoints store the whole tensor and move
// each block as a hyperslab (io/h5_io.hpp: read_box, box_runs), so a tensor written at one split
// reads back at any other.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp {

struct TensorBlock {
  std::vector<std::int64_t> start, count;  // per dimension of the tensor
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::int64_t c : count) n *= c;
    return n;
  }
};

// The whole of a tensor of `shape`.
inline TensorBlock whole_block(const std::vector<std::int64_t>& shape) {
  return {std::vector<std::int64_t>(shape.size(), 0), shape};
}

// Part `coord` of `n` of block b along its dimension `dim`: indices [coord D / n, (coord+1) D / n)
// of its D, balanced so that a D the ranks do not divide still gives every rank D / n or one
// more (never an empty block unless D < n). Splitting twice (two mesh dimensions along the same
// tensor dimension, as DTensor's nested Shard) splits the block again.
inline TensorBlock split_block(TensorBlock b, int dim, int coord, int n) {
  const std::size_t d = std::size_t(dim);
  const std::int64_t D = b.count[d];
  const std::int64_t lo = D * coord / n, hi = D * (coord + 1) / n;
  b.start[d] += lo;
  b.count[d] = hi - lo;
  return b;
}

inline std::string block_text(const TensorBlock& b) {  // "[2:5, 0:768]"
  std::string s = "[";
  for (std::size_t i = 0; i < b.start.size(); ++i)
    s += (i ? ", " : "") + std::to_string(b.start[i]) + ":" + std::to_string(b.start[i] + b.count[i]);
  return s + "]";
}

}  // namespace fsdp
