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

// by_expert: the part is *divided* by fsdp.expert_parallel = P instead (the experts of a mixture,
// torchtitan's dp2ep): its tensors fall into P equal slices (experts [j E/P, (j+1) E/P) of the
// unit's layer), and the ranks at shard-group position q with q % P == j (those that compute
// those experts: model/decoder/moe_ep.cpp) gather, reduce and hold slice j, sharded over the
// S / P of them. Stored whole over the shard group all the same (rank q keeps piece
// (q % P) S/P + q / P of the whole part), so checkpoints, norms and the optimizer see a part
// like any other and a run resumes at any P. Divided only where it saves memory: zero3 and
// hybrid with P > 1, outside deterministic mode; anywhere else the tensors join placement 0.
struct Placement {
  std::string name;
  int shard_split = 1;
  bool by_expert = false;
  // Trained, or frozen (a LoRA run's base: gathered, computed with, never reduced or updated).
  bool trainable = true;
};

}  // namespace fsdp
