// SPDX-License-Identifier: MIT
// Memory accounting: every buffer is allocated through a tracker with a category and a space,
// so the program reports measured peaks (and tests assert them against the ZeRO formulas).
// An allocation past the emulated device budget fails with a report of what is live.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>

#include "core/types.hpp"

namespace fsdp {

enum class MemCategory { ParamShard, GatheredParams, Grads, OptimizerState, Activations, CommBuffers };
enum class MemSpace { Device, Host };
constexpr int kNumMemCategories = 6;
const char* to_string(MemCategory c);
const char* to_string(MemSpace s);

struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class MemoryTracker {
 public:
  explicit MemoryTracker(std::int64_t device_budget = 0) : budget_(device_budget) {}
  void set_budget(std::int64_t bytes) { budget_ = bytes; }
  std::int64_t budget() const { return budget_; }

  void on_alloc(MemCategory c, MemSpace s, std::int64_t bytes, const std::string& label);
  void on_free(MemCategory c, MemSpace s, std::int64_t bytes, const std::string& label);

  std::int64_t current(MemCategory c, MemSpace s = MemSpace::Device) const;
  std::int64_t peak(MemCategory c, MemSpace s = MemSpace::Device) const;
  std::int64_t current_total(MemSpace s = MemSpace::Device) const { return total_[int(s)]; }
  std::int64_t peak_total(MemSpace s = MemSpace::Device) const { return total_peak_[int(s)]; }
  void reset_peaks();
  std::string report() const;  // one line per category, for logs and OOM messages

 private:
  std::int64_t budget_;
  std::array<std::array<std::int64_t, kNumMemCategories>, 2> cur_{}, peak_{};
  std::array<std::int64_t, 2> total_{}, total_peak_{};
  std::map<std::string, std::int64_t> live_;  // label -> bytes, for the OOM report
};

// An owning, tracked 1-D float buffer. Move-only; frees its accounting when destroyed.
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c,
                MemSpace s = MemSpace::Device);
  TrackedBuffer(TrackedBuffer&& o) noexcept { *this = std::move(o); }
  TrackedBuffer& operator=(TrackedBuffer&& o) noexcept;
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  ~TrackedBuffer() { reset(); }

  void reset();
  bool allocated() const { return tracker_ != nullptr; }
  std::int64_t size() const { return n_; }
  float* data() const { return view_.data(); }
  Vec vec() const { return Vec(view_.data(), view_.extent(0)); }
  Vec vec(std::int64_t off, std::int64_t n) const { return Vec(view_.data() + off, n); }
  ConstVec cvec() const { return ConstVec(view_.data(), view_.extent(0)); }

 private:
  MemoryTracker* tracker_ = nullptr;
  FlatView view_;
  std::string label_;
  std::int64_t n_ = 0;
  MemCategory cat_ = MemCategory::Activations;
  MemSpace space_ = MemSpace::Device;
};

std::string format_bytes(std::int64_t b);

}  // namespace fsdp
