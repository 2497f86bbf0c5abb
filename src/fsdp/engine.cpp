// SPDX-License-Identifier: MIT
#include "fsdp/engine.hpp"

namespace fsdp {
Engine::Engine(const RunSetup& setup, comm::DeviceMesh& mesh, MemoryTracker& tracker,
               Trace& trace, OffloadFile* offload)
    : setup_(setup),
      arch_(architecture_of(setup.model)),
      head_unit_(arch_.head_unit(setup.model, setup.choices)),
      mesh_(mesh),
      tracker_(tracker),
      counted_(tracker.counting()),
      trace_(trace) {
  // The mesh's layout, resolved once: every unit's parts over their groups. The model reads its
  // tensors where this places them and may use the groups for collectives of its own.
  layout_ = place_units(setup_, model_units(setup_.model, setup_.choices));
  parallel_.mesh = &mesh;
  parallel_.experts = mesh.shape().expert > 1 ? &mesh.group(comm::MeshDim::Expert) : nullptr;
  parallel_.units = &layout_.units;
  DecoderOptions o;
  o.micro_batch = setup_.micro_batch;
  o.bf16_attention = setup_.precision == Precision::BF16;
  o.parallel = &parallel_;
  o.choices = setup_.choices;
  model_ = arch_.build(setup_.model, o, tracker);
  state_ = std::make_unique<ShardedState>(setup_, layout_, mesh, tracker, setup_.train.seed,
                                          offload);
  if (setup_.precision == Precision::BF16)
    widener_ = std::make_unique<ParamWidener>(tracker, model_->units());
  if (setup_.bf16_gemms) model_->use_bf16_gemms(tracker);
  gather_ = std::make_unique<GatherPipeline>(state_->units(), tracker, trace, setup_.prefetch,
                                             shards_params(setup_.strategy), comm_times_,
                                             widener_.get());
  reduce_ = std::make_unique<ReducePipeline>(*state_, tracker, trace, setup_.prefetch, comm_times_);
  optimizer_ = std::make_unique<ShardedOptimizer>(*state_, setup_.train, tracker_);
  const int U = int(state_->units().size());
  stages_ = forward_stages(U, head_unit_);
  n_forward_ = int(stages_.size());
  forward_units_ = stage_units(stages_);
  const std::vector<Stage> backward = backward_stages(U, head_unit_);
  reduce_after_ = last_uses(backward);
  stages_.insert(stages_.end(), backward.begin(), backward.end());
  stage_units_ = stage_units(stages_);
  if (tracker_.log()) costs_ = stage_costs(setup_, layout_, *model_);
}

Engine::~Engine() = default;

}  // namespace fsdp
