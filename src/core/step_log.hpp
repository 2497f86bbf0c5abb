// SPDX-License-Identifier: MIT
// What a training step did, in order, as the planner's counted run of the engine records it
// (plan/counted_step.hpp): the collectives it issued and where it waited for them, its PCIe
// copies and disk requests, its compute (model FLOPs) and its optimizer passes. Nothing here
// moves or computes anything: a counting tracker (core/memory.hpp) carries the log to the
// engine's code, the groups that move nothing (comm/null_communicator.hpp) and the counting
// offload file write into it, and the planner's time model (plan/time_model.hpp) runs it on a
// timeline. It is the engine's own schedule, so the timeline has no second copy of it.
#pragma once
#include <string>
#include <vector>

namespace fsdp {

enum class Transfer {
  AllGather, ReduceScatter, AllReduce, HostToDevice, DeviceToHost, AllToAll,
  DiskRead, DiskWrite  // the rank's offload file (fsdp.offload = nvme), one queue per rank
};
const char* to_string(Transfer t);

// A group a collective ran over: its name and its members' world ranks, ascending.
struct LoggedGroup {
  std::string name;
  std::vector<int> members;
};

struct LoggedEvent {
  enum Kind { Compute, Issue, Wait, Optimizer } kind = Compute;
  Transfer op = Transfer::AllGather;  // Issue
  int group = -1;      // Issue on the network: StepLog::groups() index; -1: a copy or the disk
  double bytes = 0.0;  // Issue: the full buffer (nccl-tests' size; all-to-all-v: what is sent)
  int handle = -1;     // Issue, Wait
  int after = -1;      // Issue: starts once this handle's transfer is done (-1: at issue)
  bool scalars = false;  // Issue: the small all-reduce of norms, losses and flags
  double flops = 0.0, recompute_flops = 0.0;  // Compute: model FLOPs; checkpointing's recompute
  // Optimizer: a pass of an update rule over `elements` of the rank's state, on the host or the
  // device; `moments`: the pass reads and writes the moments (AdamW's, Muon's momentum pass).
  double elements = 0.0;
  bool on_host = false, moments = true;
};

class StepLog {
 public:
  // The index of the group with these members, recorded once per name and members.
  int group(const std::string& name, const std::vector<int>& members);
  const std::vector<LoggedGroup>& groups() const { return groups_; }

  // Starts the next step's list; events before the first call are the construction's.
  void begin_step() { steps_.emplace_back(); }
  int steps() const { return int(steps_.size()); }
  const std::vector<LoggedEvent>& events(int step) const { return steps_.at(std::size_t(step)); }

  // A transfer issued now; its handle. Network collectives name their group; copies and disk
  // requests pass -1. An issue made while order_after(h) holds starts only once h is done.
  int issue(Transfer op, int group, double bytes, bool scalars = false);
  void wait(int handle);
  // A host<->device copy on the compute stream (core/host_copy.hpp): waited for by the next
  // wait_copies(), as host_copy::wait_copies waits for every copy issued.
  int copy(Transfer op, double bytes);
  void wait_copies();
  // The collectives issued until order_after(-1) start after `handle` (an offloaded shard's
  // upload before its gathers: the comm stream is ordered after the compute stream's copies).
  void order_after(int handle) { after_ = handle; }
  void compute(double flops, double recompute_flops = 0.0);
  void optimizer(double elements, bool on_host, bool moments);

 private:
  void add(const LoggedEvent& e);
  std::vector<LoggedGroup> groups_;
  std::vector<LoggedEvent> construction_;
  std::vector<std::vector<LoggedEvent>> steps_;
  std::vector<int> copies_;  // copies issued since the last wait_copies
  int next_ = 0, after_ = -1;
};

}  // namespace fsdp
