// SPDX-License-Identifier: MIT
// The metrics file: one JSON object per line (per step, per evaluation), written by rank 0,
// each line in one write and flushed, in place (io/output_path.hpp, OutputFile::Live): people
// and job scripts follow it during the run, and a killed job keeps every completed step.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "io/output_path.hpp"

namespace fsdp {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& path, bool append = false)
      : out_("--metrics", path, append, OutputFile::Live) {}
  // The first record of a new file carries kMetricsMarker (io/output_path.hpp): readers that
  // pick keys see one key more; a later run sees the file is ours.
  void write(nlohmann::json record) {
    if (first_ && out_.started_empty()) record[kMetricsMarker] = 1;
    first_ = false;
    out_.write(record.dump() + "\n", /*flush=*/true);
  }
  void finish() { out_.finish(); }

 private:
  OutputFile out_;
  bool first_ = true;
};

}  // namespace fsdp
