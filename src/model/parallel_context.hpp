// SPDX-License-Identifier: MIT
// What a model is given beyond its parameters when it is built (Architecture::build): the run's
// device mesh, so that it can issue collectives of its own (an expert token exchange, a
// tensor-parallel sum) ordered like the engine's; and its units as the run placed them (each
// part's tensors together, every part padded: fsdp/part_layout.hpp), whose offsets its kernels
// must read. No execution-space instance: making one needs an initialised device, and the
// planner builds the model where there is none (plan/counted_step.hpp).
#pragma once
#include <vector>

#include "core/types.hpp"
#include "model/unit_layout.hpp"

namespace fsdp {

// Declared, not included: the model layer's headers stay free of MPI (the fuzz targets build
// the layouts without it); a model that issues collectives includes comm/device_mesh.hpp.
namespace comm {
class DeviceMesh;
class Communicator;
}

struct ParallelContext {
  comm::DeviceMesh* mesh = nullptr;                // null: a model on its own (tests, benches)
  comm::Communicator* experts = nullptr;           // fsdp.expert_parallel > 1: the expert group
  const std::vector<UnitLayout>* units = nullptr;  // null: the architecture's own layout
};

}  // namespace fsdp
