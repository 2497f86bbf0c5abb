// SPDX-License-Identifier: MIT
#include "io/trace.hpp"

#include <cstdio>

#include "io/output_path.hpp"

namespace fsdp {

std::string Trace::rank_path(const std::string& path, int rank) {
  std::string out = path;
  const auto pos = out.find("%r");
  if (pos != std::string::npos) out.replace(pos, 2, std::to_string(rank));
  else out += ".rank" + std::to_string(rank) + ".json";
  return out;
}

void Trace::write() const {
  if (!enabled_ || path_.empty()) return;
  try {
    write_events();
  } catch (const std::exception& e) {  // the run is done; only its trace is lost
    std::fprintf(stderr, "fsdp-train: warning: %s\n", e.what());
  }
}

void Trace::write_events() const {
  OutputFile f("--trace", rank_path(path_, rank_), /*append=*/false);
  f.write("{\"traceEvents\":[\n", false);
  const double base = events_.empty() ? 0.0 : events_.front().t0;
  for (std::size_t i = 0; i < events_.size(); ++i) {
    const auto& e = events_[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                  "\"ts\":%.3f,\"dur\":%.3f}%s\n",
                  e.name.c_str(), e.cat.c_str(), rank_, e.tid, (e.t0 - base) * 1e6,
                  (e.t1 - e.t0) * 1e6, i + 1 < events_.size() ? "," : "");
    f.write(buf, false);
  }
  f.write("]}\n", true);
}

}  // namespace fsdp
