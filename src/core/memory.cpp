// SPDX-License-Identifier: MIT
#include "core/memory.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <type_traits>
#include <vector>

#include "core/check.hpp"
#include "core/shared_arena.hpp"

namespace fsdp {

const char* to_string(MemCategory c) {
  switch (c) {
    case MemCategory::ParamShard:
      return "param_shard";
    case MemCategory::GatheredParams:
      return "gathered_params";
    case MemCategory::Grads:
      return "grads";
    case MemCategory::OptimizerState:
      return "optimizer_state";
    case MemCategory::Activations:
      return "activations";
    case MemCategory::CommBuffers:
      return "comm_buffers";
    case MemCategory::WidenedParams:
      return "widened_params";
    case MemCategory::CheckpointStaging:
      return "checkpoint_staging";
  }
  return "?";
}
const char* to_string(Dtype d) { return d == Dtype::BF16 ? "bf16" : "fp32"; }
const char* to_string(MemSpace s) { return s == MemSpace::Device ? "device" : "host"; }

std::string format_bytes(std::int64_t b) {
  char buf[64];
  const double x = static_cast<double>(b);
  if (x >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", x / (1 << 30));
  else if (x >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f MiB", x / (1 << 20));
  else if (x >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", x / 1024);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

void MemoryTracker::on_alloc(MemCategory c, MemSpace s, std::int64_t bytes,
                             const std::string& label) {
  const int si = int(s), ci = int(c);
  if (s == MemSpace::Device && budget_ > 0 && total_[si] + bytes > budget_) {
    std::ostringstream os;
    os << "out of device memory: allocating " << label << " (" << format_bytes(bytes) << ") with "
       << format_bytes(total_[si])
       << " live exceeds memory.device_budget = " << format_bytes(budget_)
       << "; live by category: " << report() << largest_live();
    if (on_failure_) on_failure_(os.str());
    throw OutOfMemory(os.str());
  }
  cur_[si][ci] += bytes;
  peak_[si][ci] = std::max(peak_[si][ci], cur_[si][ci]);
  total_[si] += bytes;
  total_peak_[si] = std::max(total_peak_[si], total_[si]);
  if (s == MemSpace::Device) live_[label] += bytes;
}

std::string MemoryTracker::largest_live() const {
  std::vector<std::pair<std::int64_t, std::string>> big;
  for (const auto& [l, n] : live_) big.emplace_back(n, l);
  std::sort(big.rbegin(), big.rend());
  std::string out = "; largest live buffers:";
  for (std::size_t i = 0; i < big.size() && i < 5; ++i)
    out += " " + big[i].second + "=" + format_bytes(big[i].first);
  return out;
}

void MemoryTracker::on_alloc_failed(MemSpace s, std::int64_t bytes, const std::string& label,
                                    const std::string& why) {
  // Kokkos' own message is several lines; its first says what failed.
  const std::string first = why.substr(0, why.find('\n'));
  std::ostringstream os;
  os << "out of " << (s == MemSpace::Device ? "device" : "host") << " memory: allocating "
     << label << " (" << format_bytes(bytes) << ") failed with "
     << format_bytes(total_[int(s)]) << " live (" << first
     << "); memory.device_budget or fsdp-plan sizes a run that fits; live by category: "
     << report() << largest_live();
  if (on_failure_) on_failure_(os.str());
  throw OutOfMemory(os.str());
}

void MemoryTracker::on_free(MemCategory c, MemSpace s, std::int64_t bytes,
                            const std::string& label) {
  cur_[int(s)][int(c)] -= bytes;
  total_[int(s)] -= bytes;
  if (s == MemSpace::Device) {
    auto it = live_.find(label);
    if (it != live_.end() && (it->second -= bytes) <= 0) live_.erase(it);
  }
}

std::int64_t MemoryTracker::current(MemCategory c, MemSpace s) const {
  return cur_[int(s)][int(c)];
}
std::int64_t MemoryTracker::peak(MemCategory c, MemSpace s) const { return peak_[int(s)][int(c)]; }

void MemoryTracker::reset_peaks() {
  peak_ = cur_;
  total_peak_ = total_;
}

std::string MemoryTracker::report() const {
  std::ostringstream os;
  for (int s = 0; s < 2; ++s) {
    if (total_peak_[s] == 0) continue;
    os << to_string(MemSpace(s)) << "[";
    for (int c = 0; c < kNumMemCategories; ++c) {
      if (peak_[s][c] == 0) continue;
      os << to_string(MemCategory(c)) << " " << format_bytes(cur_[s][c]) << " (peak "
         << format_bytes(peak_[s][c]) << ") ";
    }
    os << "] ";
  }
  return os.str();
}

namespace {

struct Cache {
  std::map<std::int64_t, std::vector<FlatView>> free;  // by words
  std::int64_t held = 0;
  std::int64_t limit = -1;
  bool hooked = false;
};

Cache& cache() {
  static Cache c;
  if (c.limit < 0) {
    const char* v = std::getenv("FSDP_BUFFER_CACHE_BYTES");
    // A CPU's cache is resident memory the job keeps: 1 GiB by default. A GPU's is bounded by
    // the device, and an allocation that fails frees the cache and tries again (take()).
    constexpr bool host = std::is_same_v<DeviceSpace, HostSpace>;
    const std::int64_t fallback = host ? (std::int64_t(1) << 30) : INT64_MAX / 2;
    c.limit = v && *v ? std::max<std::int64_t>(0, std::atoll(v)) : fallback;
  }
  return c;
}

FlatView take(const std::string& label, std::int64_t words, Fill f) {
  Cache& c = cache();
  auto it = c.free.find(words);
  if (it != c.free.end() && !it->second.empty()) {
    FlatView v = std::move(it->second.back());
    it->second.pop_back();
    c.held -= words * 4;
    if (f == Fill::Zero) Kokkos::deep_copy(v, 0.f);
    return v;
  }
  auto allocate = [&] {
    // The shared arena first (shared_arena.hpp): peers on the node can then read the buffer
    // directly. Its views are unmanaged; give_back() and release_all() return their memory.
    if (SharedArena* arena = SharedArena::get())
      if (void* p = arena->allocate(std::size_t(words) * 4)) {
        FlatView v(static_cast<float*>(p), words);
        if (f == Fill::Zero) Kokkos::deep_copy(v, 0.f);
        return v;
      }
    if (f == Fill::None)
      return FlatView(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), words);
    return FlatView(label, words);  // zero-initialised by Kokkos
  };
  try {
    return allocate();
  } catch (const std::exception&) {
    if (c.held == 0) throw;
    BufferCache::release_all();  // the cached buffers may be what stands in the way
    return allocate();
  }
}

bool in_arena(const FlatView& v) {
  SharedArena* arena = SharedArena::get();
  return arena && v.data() && arena->contains(v.data());
}

// Frees v's memory: Kokkos frees a managed view as it goes out of scope; an arena view is
// unmanaged, so its block goes back to the arena here.
void drop(FlatView& v) {
  if (in_arena(v)) SharedArena::get()->release(v.data());
  v = FlatView();
}

void give_back(FlatView v) {
  Cache& c = cache();
  const std::int64_t bytes = std::int64_t(v.extent(0)) * 4;
  if (bytes == 0 || c.held + bytes > c.limit) return drop(v);
  if (!c.hooked) {
    Kokkos::push_finalize_hook([] { BufferCache::release_all(); });
    c.hooked = true;
  }
  c.free[std::int64_t(v.extent(0))].push_back(std::move(v));
  c.held += bytes;
}

}  // namespace

std::int64_t BufferCache::held_bytes() { return cache().held; }

void BufferCache::release_all() {
  for (auto& [words, views] : cache().free)
    for (FlatView& v : views) drop(v);
  cache().free.clear();
  cache().held = 0;
}

TrackedBuffer::TrackedBuffer(MemoryTracker& t, const std::string& label, std::int64_t n,
                             MemCategory c, MemSpace s, Dtype d, Fill f)
    : label_(label), n_(n), cat_(c), space_(s), dtype_(d) {
  // Host memory is core/host_buffer.hpp's: a TrackedBuffer's view is always device memory.
  if (s != MemSpace::Device) fatal("TrackedBuffer " + label + " asked for host memory");
  const std::int64_t words = d == Dtype::BF16 ? (n + 1) / 2 : n;
  t.on_alloc(c, s, words * 4, label);
  words_ = words;
  if (!t.counting()) try {
    view_ = take(label, words, f);
  } catch (const std::exception& e) {
    t.on_free(c, s, words * 4, label);
    t.on_alloc_failed(s, words * 4, label, e.what());
  }
  tracker_ = &t;
}

TrackedBuffer& TrackedBuffer::operator=(TrackedBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    tracker_ = o.tracker_;
    view_ = std::move(o.view_);
    label_ = std::move(o.label_);
    n_ = o.n_;
    words_ = o.words_;
    cat_ = o.cat_;
    space_ = o.space_;
    dtype_ = o.dtype_;
    o.tracker_ = nullptr;
    o.view_ = FlatView();
    o.n_ = o.words_ = 0;
  }
  return *this;
}

void TrackedBuffer::reset() {
  if (tracker_) tracker_->on_free(cat_, space_, bytes(), label_);
  if (tracker_ && held() && (view_.use_count() == 1 || in_arena(view_)))
    give_back(std::move(view_));
  tracker_ = nullptr;
  view_ = FlatView();
  n_ = words_ = 0;
}

}  // namespace fsdp
