// SPDX-License-Identifier: MIT
#include "io/metrics.hpp"

#include <stdexcept>

namespace fsdp {

MetricsWriter::MetricsWriter(const std::string& path, bool append) {
  f_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!f_) throw std::runtime_error(path + ": cannot open the metrics file for writing");
}

MetricsWriter::~MetricsWriter() {
  if (f_) std::fclose(f_);
}

void MetricsWriter::write(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace fsdp
