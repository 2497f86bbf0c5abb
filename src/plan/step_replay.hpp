// SPDX-License-Identifier: MIT
// The engine's training step replayed without data, as a list of events (allocate, free,
// compute, issue a collective, wait for it, optimizer pass): the engine's own stage schedule
// (fsdp/schedule.hpp), gather window policy (fsdp/gather_window.hpp) and padding rule
// (config/run_setup.hpp), with the buffers each stage allocates. The memory model folds the
// allocations into tracker peaks; the time model runs the compute and collectives on a
// timeline. test_plan_vs_tracker checks the peaks against the engine's tracker, byte for byte.
#pragma once
#include <cstdint>
#include <vector>

#include "plan/memory_model.hpp"

namespace fsdp::plan {

enum class Coll {
  AllGather, ReduceScatter, AllReduce, HostToDevice, DeviceToHost, AllToAll,
  DiskRead, DiskWrite  // fsdp.offload = nvme: the rank's offload file (one queue per rank)
};
// Expert: fsdp.expert_parallel's P consecutive ranks (the experts' token exchange).
enum class Group { Shard, Replicate, World, Pcie, Disk, Expert };
const char* to_string(Coll c);

struct StepEvent {
  enum Kind { Alloc, Free, Compute, Issue, Wait, Optimizer } kind;
  // Alloc/Free: a tracked buffer.
  MemCategory cat = MemCategory::Activations;
  MemSpace space = MemSpace::Device;
  // Alloc/Free: buffer bytes. Issue: the collective's full buffer (nccl-tests' "size").
  // Optimizer: bytes of memory traffic.
  double bytes = 0.0;
  double flops = 0.0;           // Compute: model FLOPs of this stage
  double recompute_flops = 0.0;  // Compute: activation-checkpointing recompute
  Coll op = Coll::AllGather;     // Issue
  Group group = Group::Shard;    // Issue
  int placement = 0;             // Issue over Shard or Replicate: whose part's groups
  bool on_host = false;          // Optimizer: runs on the host (offload)
  int handle = -1;               // Issue/Wait
  int after = -1;                // Issue: starts only once this handle's transfer is done
  int unit = -1;                 // the sharding unit concerned; -1: none
  // Issue: the previous step's optimizer issued this gather (fsdp.prefetch_across_steps), with
  // this fraction of its memory traffic still to go; the step is replayed in steady state.
  double carried_lead = -1.0;
};

// Construction (the model, then the Engine) followed by one training step of s.micro_batches()
// micro-batches (the tracker's peaks are reached in the first step and repeat in later ones).
// max_micro_batches > 0 replays at most that many: the first micro-batch reduces straight
// into the gradient shards, and from the third on each one repeats the previous one's
// allocations, so three give the memory peaks of any number. rank: whose step (deterministic
// mode's buffers depend on which micro-batches a rank holds; nothing else does).
std::vector<StepEvent> replay_step(const Setup& s, int max_micro_batches = 0, int rank = 0);

}  // namespace fsdp::plan
