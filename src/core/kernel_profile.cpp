// SPDX-License-Identifier: MIT
#include "core/kernel_profile.hpp"

#include "core/kernel_hooks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <vector>

namespace fsdp::profile {
namespace {

using Clock = std::chrono::steady_clock;

struct Stat {
  double seconds = 0.0;
  long calls = 0;
};

struct State {
  bool on = false;
  struct Open {
    std::uint64_t id;
    std::string name;
    Clock::time_point start;
  };
  std::vector<Open> open;  // launches begun and not ended, latest last
  std::vector<std::pair<std::string, Clock::time_point>> regions;
  std::map<std::string, Stat> stats;
};

State& state() {
  static State s;
  return s;
}

void begin(const char* name, const std::uint64_t id) {
  state().open.push_back({id, name, Clock::now()});
}

void end(const std::uint64_t id) {
  auto& s = state();
  const auto t = Clock::now();
  for (auto o = s.open.rbegin(); o != s.open.rend(); ++o) {
    if (o->id != id) continue;
    auto& st = s.stats[o->name];
    st.seconds += std::chrono::duration<double>(t - o->start).count();
    ++st.calls;
    s.open.erase(std::next(o).base());
    return;
  }
}

void push(const char* name) { state().regions.emplace_back(name, Clock::now()); }

void pop() {
  auto& s = state();
  if (s.regions.empty()) return;
  const auto t = Clock::now();
  auto& st = s.stats[s.regions.back().first];
  st.seconds += std::chrono::duration<double>(t - s.regions.back().second).count();
  ++st.calls;
  s.regions.pop_back();
}

}  // namespace

void enable() {
  auto& s = state();
  if (s.on) return;
  s.on = true;
  hooks::add_kernel_listener({begin, end});
  hooks::add_region_listener({push, pop});
}

bool enabled() { return state().on; }

void reset() { state().stats.clear(); }

std::string report(int steps) {
  auto& s = state();
  std::vector<std::pair<std::string, Stat>> rows(s.stats.begin(), s.stats.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double total = 0.0;
  for (const auto& r : rows) total += r.second.seconds;
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-34s %8s %12s %10s %7s\n", "kernel", "calls", "ms/step",
                "us/call", "share");
  out += buf;
  for (const auto& [name, st] : rows) {
    std::snprintf(buf, sizeof buf, "%-34s %8ld %12.2f %10.1f %6.1f%%\n", name.c_str(), st.calls,
                  1e3 * st.seconds / std::max(1, steps), 1e6 * st.seconds / std::max(1L, st.calls),
                  100.0 * st.seconds / std::max(1e-12, total));
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%-34s %8s %12.2f\n", "total (timed kernels)", "",
                1e3 * total / std::max(1, steps));
  out += buf;
  return out;
}

}  // namespace fsdp::profile
