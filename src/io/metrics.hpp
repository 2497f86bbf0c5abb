// SPDX-License-Identifier: MIT
// The metrics file: one JSON object per line (per step, per evaluation), written by rank 0
// and flushed per line so a killed job keeps every completed step.
#pragma once
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace fsdp {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& path, bool append = false);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;
  void write(const nlohmann::json& record);

 private:
  std::FILE* f_ = nullptr;
};

}  // namespace fsdp
