// SPDX-License-Identifier: MIT
#include "fsdp/engine.hpp"

namespace fsdp {
namespace {

// The deck as this engine's process groups run it (the trainer has validated it).
RunSetup engine_setup(const RunConfig& cfg, const comm::ProcessGroups& g) {
  RunSetup s = setup_from_config(cfg, g.world->size(), 1);
  if (s.strategy == Strategy::Hybrid) s.shard_group_size = g.shard->size();
  return s;
}

}  // namespace

Engine::Engine(const RunConfig& cfg, comm::ProcessGroups& groups, MemoryTracker& tracker,
               Trace& trace)
    : cfg_(cfg),
      setup_(engine_setup(cfg, groups)),
      groups_(groups),
      tracker_(tracker),
      trace_(trace) {
  model_ = std::make_unique<Gpt2>(cfg.model, cfg.train.micro_batch_size, tracker,
                                  unit_cut(cfg.fsdp.unit), setup_.precision == Precision::BF16);
  state_ = std::make_unique<ShardedState>(setup_, model_->units(), *groups.shard,
                                          *groups.replicate, tracker, cfg.train.seed);
  if (setup_.precision == Precision::BF16)
    widener_ = std::make_unique<ParamWidener>(tracker, model_->units());
  if (setup_.bf16_gemms) model_->use_bf16_gemms(tracker);
  gather_ = std::make_unique<GatherPipeline>(state_->units(), *groups.shard, tracker, trace,
                                             setup_.prefetch, shards_params(setup_.strategy),
                                             comm_times_, widener_.get());
  reduce_ = std::make_unique<ReducePipeline>(*state_, tracker, trace, setup_.prefetch, comm_times_);
  optimizer_ = std::make_unique<ShardedOptimizer>(*state_, cfg_.train, tracker_);
}

Engine::~Engine() = default;

}  // namespace fsdp
