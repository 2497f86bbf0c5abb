// SPDX-License-Identifier: MIT
// The engine's own construction and training steps for one rank of a job the planner does not
// have: a counting memory tracker (buffers counted, never made: core/memory.hpp), a mesh whose
// groups move nothing (comm/null_communicator.hpp), an offload file that exists only as a
// layout, no kernels run. What the tracker then holds is what that rank's tracker would
// measure, by construction: the memory model reads its peaks (plan/memory_model.hpp).
#pragma once
#include <memory>

#include "config/run_setup.hpp"
#include "core/memory.hpp"
#include "core/step_log.hpp"

namespace fsdp::plan {

struct CountedStep {
  // What the two steps did, in order (core/step_log.hpp): the second's first gathers were issued
  // by the first one's optimizer where fsdp.prefetch_across_steps carries them. A third list
  // holds what the engine waited for as it was destroyed.
  std::unique_ptr<StepLog> log = std::make_unique<StepLog>();
  MemoryTracker tracker = MemoryTracker::counting_only(log.get());
};

// Rank `rank` of s.ranks builds its engine (and, with asynchronous checkpoints, the staging a
// save keeps) and runs two training steps as fsdp-train's first two: the first one's optimizer
// issues the next step's gathers where s.prefetch_across_steps asks. Each step runs
// s.micro_batches() micro-batches, or at most max_micro_batches > 0 of them. A setup the trainer
// refuses throws std::invalid_argument with its reason (RunSetup::validate).
CountedStep count_step(const RunSetup& s, int rank, int max_micro_batches = 0);

}  // namespace fsdp::plan
