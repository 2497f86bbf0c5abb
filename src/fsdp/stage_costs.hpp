// SPDX-License-Identifier: MIT
// What each stage of the step costs beyond its gathers and reductions, for the planner's
// counted run of the engine (plan/counted_step.hpp), where the model computes nothing: the
// model FLOPs its layers declare per pass, and the experts' token exchanges the model would issue
// from inside its compute. The engine logs them where it would have run the model.
#pragma once
#include <vector>

#include "config/run_setup.hpp"
#include "fsdp/part_layout.hpp"
#include "model/architecture.hpp"

namespace fsdp {

struct StageCost {
  UnitFlops flops;
  // fsdp.expert_parallel > 1: the bytes one all-to-all of the unit's sparse layers sends from
  // this rank with tokens routed evenly, (P - 1) / P of their N k rows of C (bf16 dispatches:
  // 3/4 of that, a bf16 dispatch and an fp32 return on the mean); two in forward, two in
  // backward (four with checkpointing). moe.grads_home: the experts' gradients sent home once.
  double exchange = 0.0, grads_home = 0.0;
};

struct StageCosts {
  std::vector<StageCost> units;  // per unit's stage
  StageCost head;                // the LM head's stage
};

// model: the run's, built for its micro-batch (its layers declare their FLOPs).
StageCosts stage_costs(const RunSetup& s, const RunLayout& layout, const Decoder& model);

}  // namespace fsdp
