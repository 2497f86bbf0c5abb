// SPDX-License-Identifier: MIT
// Where the tensors of one placement (TensorSpec::part) live on the mesh. A part of placement p
// is FSDP-sharded over 1/shard_split of its unit's shard group (consecutive positions) and
// replicated over the other shard_split - 1 slices and over the replicate dimension:
// torchtitan's dp2ep layout for experts, whose expert dimension is carved out of the shard
// ranks. A shard group smaller than shard_split (and dividing it) keeps the part whole on each
// rank; any other shard group is refused (config/run_setup.cpp).
#pragma once
#include <string>

namespace fsdp {

struct Placement {
  std::string name;
  int shard_split = 1;
};

}  // namespace fsdp
