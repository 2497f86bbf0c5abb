// SPDX-License-Identifier: MIT
#include "io/trace.hpp"

#include <fstream>

namespace fsdp {

void Trace::write() const {
  if (!enabled_ || path_.empty()) return;
  std::string path = path_;
  const auto pos = path.find("%r");
  if (pos != std::string::npos) path.replace(pos, 2, std::to_string(rank_));
  else path += ".rank" + std::to_string(rank_) + ".json";
  std::ofstream f(path);
  f << "{\"traceEvents\":[\n";
  const double base = events_.empty() ? 0.0 : events_.front().t0;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const auto& e = events_[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                  "\"ts\":%.3f,\"dur\":%.3f}%s\n",
                  e.name.c_str(), e.cat.c_str(), rank_, e.tid, (e.t0 - base) * 1e6,
                  (e.t1 - e.t0) * 1e6, i + 1 < events_.size() ? "," : "");
    f << buf;
  }
  f << "]}\n";
}

}  // namespace fsdp
