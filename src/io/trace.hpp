// SPDX-License-Identifier: MIT
// Chrome/Perfetto trace-event JSON, one file per rank: compute per unit, each collective from
// issue to completion, and waits. Disabled (no cost beyond a branch) unless --trace is given.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "core/clock.hpp"

namespace fsdp {

class Trace {
 public:
  struct Event {
    std::string name, cat;
    double t0, t1;
    int tid;  // 0 = compute, 1 = communication
  };
  void enable(const std::string& path, int rank) {
    path_ = path;
    rank_ = rank;
    enabled_ = true;
  }
  bool enabled() const { return enabled_; }
  void add(const std::string& name, const std::string& cat, double t0, double t1, int tid = 0) {
    if (enabled_) events_.push_back({name, cat, t0, t1, tid});
  }
  const std::vector<Event>& events() const { return events_; }
  void write() const;  // to rank_path(path_, rank); io/output_path.hpp's OutputFile
  // `path` with %r replaced by the rank, or ".rank<r>.json" appended when it has none.
  static std::string rank_path(const std::string& path, int rank);

 private:
  void write_events() const;
  bool enabled_ = false;
  std::string path_;
  int rank_ = 0;
  std::vector<Event> events_;
};

}  // namespace fsdp
