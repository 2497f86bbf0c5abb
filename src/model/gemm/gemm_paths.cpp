// SPDX-License-Identifier: MIT
#include "model/gemm/gemm_paths.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "core/kernel_profile.hpp"
#include "core/types.hpp"

namespace fsdp::kernels::gemm_paths {
namespace {

using Key = std::tuple<char, char, std::int64_t, std::int64_t, std::int64_t, bool, const std::string*>;

struct Stat {
  long calls = 0;
  double seconds = 0.0;
};

std::map<Key, Stat>& stats() {
  static std::map<Key, Stat> s;
  return s;
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool in_scope = false;
bool quiet = false;

}  // namespace

const std::string& intern(const std::string& path) {
  static std::set<std::string> names;
  return *names.insert(path).first;
}

const std::string& fp32_path() {
#if defined(KOKKOS_ENABLE_CUDA)
  static const std::string p = "cuBLAS sgemm";
#else
  static const std::string p = "OpenBLAS sgemm (KokkosBlas)";
#endif
  return p;
}

Scope::Scope(const Shape& shape, const std::string& path)
    : shape_(shape), path_(path), outer_(!in_scope) {
  in_scope = true;
  if (outer_ && timing()) start_ = now();
}

Scope::~Scope() {
  if (!outer_) return;
  in_scope = false;
  record(shape_, path_, start_ < 0 ? 0.0 : now() - start_);
}

void record(const Shape& s, const std::string& path, double seconds) {
  if (quiet) return;
  auto& st = stats()[Key{s.ta, s.tb, s.M, s.N, s.K, s.bf16, &path}];
  ++st.calls;
  st.seconds += seconds;
}

bool timing() {
#if defined(KOKKOS_ENABLE_CUDA)
  return false;
#else
  return profile::enabled();
#endif
}

void reset() { stats().clear(); }

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (const auto& [k, st] : stats()) {
    const auto& [ta, tb, M, N, K, bf16, path] = k;
    const Shape s{ta, tb, M, N, K, bf16};
    if (std::none_of(out.begin(), out.end(), [&](const Shape& o) {
          return o.ta == s.ta && o.tb == s.tb && o.M == s.M && o.N == s.N && o.K == s.K &&
                 o.bf16 == s.bf16;
        }))
      out.push_back(s);
  }
  return out;
}

std::vector<Use> uses() {
  std::vector<Use> out;
  for (const Shape& s : shapes()) out.push_back({s, 0});
  for (const auto& [k, st] : stats()) {
    const auto& [ta, tb, M, N, K, bf16, path] = k;
    for (Use& u : out)
      if (u.shape.ta == ta && u.shape.tb == tb && u.shape.M == M && u.shape.N == N &&
          u.shape.K == K && u.shape.bf16 == bf16)
        u.calls += st.calls;
  }
  return out;
}

Quiet::Quiet() : was_(quiet) { quiet = true; }
Quiet::~Quiet() { quiet = was_; }

std::string table(int steps, const std::string& indent) {
  std::vector<std::pair<Key, Stat>> rows(stats().begin(), stats().end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.seconds != b.second.seconds ? a.second.seconds > b.second.seconds
                                                : a.first < b.first;
  });
  std::string out;
  char buf[320];
  const bool times = steps > 0;
  auto line = [&](const char* op, const char* dims, const char* in, const std::string& calls,
                  const char* ms, const char* rate, const char* path) {
    if (times)
      std::snprintf(buf, sizeof buf, "%s%-4s %-22s %-5s %8s %10s %9s  %s\n", indent.c_str(), op,
                    dims, in, calls.c_str(), ms, rate, path);
    else
      std::snprintf(buf, sizeof buf, "%s%-4s %-22s %-5s %8s  %s\n", indent.c_str(), op, dims, in,
                    calls.c_str(), path);
    out += buf;
  };
  line("op", "M x N x K", "in", "calls", "ms/step", "GFLOP/s", "path");
  for (const auto& [k, st] : rows) {
    const auto& [ta, tb, M, N, K, bf16, path] = k;
    char dims[64], op[3] = {ta, tb, 0};
    std::snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
    char ms[16] = "-", rate[16] = "-";
    if (times && st.seconds > 0) {
      std::snprintf(ms, sizeof ms, "%.2f", 1e3 * st.seconds / steps);
      std::snprintf(rate, sizeof rate, "%.1f", 2.0 * M * N * K * st.calls / st.seconds / 1e9);
    }
    line(op, dims, bf16 ? "bf16" : "fp32", std::to_string(st.calls), ms, rate, path->c_str());
  }
  return out;
}

}  // namespace fsdp::kernels::gemm_paths
