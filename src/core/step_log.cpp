// SPDX-License-Identifier: MIT
#include "core/step_log.hpp"

namespace fsdp {

const char* to_string(Transfer t) {
  switch (t) {
    case Transfer::AllGather: return "all_gather";
    case Transfer::ReduceScatter: return "reduce_scatter";
    case Transfer::AllReduce: return "all_reduce";
    case Transfer::HostToDevice: return "host_to_device";
    case Transfer::DeviceToHost: return "device_to_host";
    case Transfer::AllToAll: return "all_to_all";
    case Transfer::DiskRead: return "disk_read";
    case Transfer::DiskWrite: return "disk_write";
  }
  return "?";
}

int StepLog::group(const std::string& name, const std::vector<int>& members) {
  for (std::size_t i = 0; i < groups_.size(); ++i)
    if (groups_[i].name == name && groups_[i].members == members) return int(i);
  groups_.push_back({name, members});
  return int(groups_.size()) - 1;
}

void StepLog::add(const LoggedEvent& e) {
  (steps_.empty() ? construction_ : steps_.back()).push_back(e);
}

int StepLog::issue(Transfer op, int group, double bytes, bool scalars) {
  LoggedEvent e;
  e.kind = LoggedEvent::Issue;
  e.op = op;
  e.group = group;
  e.bytes = bytes;
  e.scalars = scalars;
  e.handle = next_++;
  e.after = group >= 0 ? after_ : -1;
  add(e);
  return e.handle;
}

void StepLog::wait(int handle) {
  LoggedEvent e;
  e.kind = LoggedEvent::Wait;
  e.handle = handle;
  add(e);
}

int StepLog::copy(Transfer op, double bytes) {
  copies_.push_back(issue(op, -1, bytes));
  return copies_.back();
}

void StepLog::wait_copies() {
  for (int h : copies_) wait(h);
  copies_.clear();
}

void StepLog::compute(double flops, double recompute_flops) {
  LoggedEvent e;
  e.kind = LoggedEvent::Compute;
  e.flops = flops;
  e.recompute_flops = recompute_flops;
  add(e);
}

void StepLog::optimizer(double elements, bool on_host, bool moments) {
  LoggedEvent e;
  e.kind = LoggedEvent::Optimizer;
  e.elements = elements;
  e.on_host = on_host;
  e.moments = moments;
  add(e);
}

}  // namespace fsdp
