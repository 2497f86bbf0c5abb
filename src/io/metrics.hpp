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
  void write(const nlohmann::json& record) { out_.write(record.dump() + "\n", /*flush=*/true); }
  void finish() { out_.finish(); }

 private:
  OutputFile out_;
};

}  // namespace fsdp
