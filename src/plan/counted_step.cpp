// SPDX-License-Identifier: MIT
#include "plan/counted_step.hpp"

#include <algorithm>
#include <memory>

#include "comm/device_mesh.hpp"
#include "core/offload_file.hpp"
#include "fsdp/engine.hpp"
#include "fsdp/part_layout.hpp"
#include "io/checkpoint_staging.hpp"
#include "io/trace.hpp"

namespace fsdp::plan {

CountedStep count_step(const RunSetup& s, int rank, int max_micro_batches) {
  s.validate();  // a setup the trainer refuses throws its reason here, before a mesh is cut
  CountedStep out;
  StepLog* log = out.log.get();
  comm::DeviceMesh mesh = comm::DeviceMesh::without_transport(s.mesh(), s.mesh_groups(), rank, log);
  std::unique_ptr<OffloadFile> disk;
  if (s.offload == Offload::Nvme)
    disk = OffloadFile::counting(
        ShardedState::offload_bytes(s, place_units(s, model_units(s.model, s.choices))), log);
  Trace trace;
  Engine engine(s, mesh, out.tracker, trace, disk.get());
  StagedState staged(out.tracker);  // train/trainer.cpp: made before the first step
  if (s.checkpoint_staging) staged.allocate(engine.state());
  const int micro = max_micro_batches > 0 ? std::min(max_micro_batches, s.micro_batches())
                                          : s.micro_batches();
  const Engine::LoadMicroBatch load = [](int, Decoder&) {};  // no tokens: nothing is computed
  for (int step = 0; step < 2; ++step) {
    log->begin_step();
    engine.set_prefetch_next_step(s.prefetch_across_steps && s.prefetch > 0 && step == 0);
    engine.train_step(step, micro, load);
  }
  // What the engine waits for as it is destroyed (the last disk writes) is no step's: in steady
  // state the next step's requests queue behind them, which the timeline models from the
  // first step's (plan/time_model.cpp).
  log->begin_step();
  return out;
}

}  // namespace fsdp::plan
