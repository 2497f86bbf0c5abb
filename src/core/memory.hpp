// SPDX-License-Identifier: MIT
// Memory accounting: every buffer is allocated through a tracker with a category and a space,
// so the program reports measured peaks (and tests assert them against the ZeRO formulas).
// An allocation past the emulated device budget fails with a report of what is live.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include "core/bf16.hpp"
#include "core/types.hpp"

namespace fsdp {

class StepLog;  // core/step_log.hpp

// WidenedParams: the float copies that bf16 parameters are widened into for float kernels.
// CheckpointStaging: host copies of this rank's shards that an asynchronous checkpoint writes
// while training goes on (io/async_checkpointer.hpp); host memory only.
enum class MemCategory {
  ParamShard,
  GatheredParams,
  Grads,
  OptimizerState,
  Activations,
  CommBuffers,
  WidenedParams,
  CheckpointStaging
};
enum class MemSpace { Device, Host };
constexpr int kNumMemCategories = 8;
const char* to_string(MemCategory c);
const char* to_string(MemSpace s);

struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class MemoryTracker {
 public:
  explicit MemoryTracker(std::int64_t device_budget = 0) : budget_(device_budget) {}
  // A tracker whose buffers are counted and never made (their views are empty): the planner
  // runs the engine's own construction and step on one (plan/counted_step.hpp), so its peaks are
  // the tracker's by construction. Code that computes asks counting() and skips its kernels.
  // log: where that run records what the step did instead (core/step_log.hpp), or null.
  static MemoryTracker counting_only(StepLog* log = nullptr) {
    MemoryTracker t;
    t.counting_ = true;
    t.log_ = log;
    return t;
  }
  bool counting() const { return counting_; }
  // The counted run's log of transfers, compute and optimizer passes; null on a real tracker.
  StepLog* log() const { return log_; }
  void set_budget(std::int64_t bytes) { budget_ = bytes; }
  std::int64_t budget() const { return budget_; }

  void on_alloc(MemCategory c, MemSpace s, std::int64_t bytes, const std::string& label);
  // An allocation the system refused (after the buffer cache was released): throws
  // OutOfMemory naming the buffer, its size and the tracker's report.
  [[noreturn]] void on_alloc_failed(MemSpace s, std::int64_t bytes, const std::string& label,
                                    const std::string& why);
  // Called with the message before any OutOfMemory is thrown. A rank can run out alone while
  // the others wait in a collective; the trainer's handler ends the whole job then
  // (train/trainer.cpp, with comm/agree.hpp) rather than unwinding into a wait that never ends.
  void set_failure_handler(std::function<void(const std::string&)> h) { on_failure_ = std::move(h); }
  void on_free(MemCategory c, MemSpace s, std::int64_t bytes, const std::string& label);

  std::int64_t current(MemCategory c, MemSpace s = MemSpace::Device) const;
  std::int64_t peak(MemCategory c, MemSpace s = MemSpace::Device) const;
  std::int64_t current_total(MemSpace s = MemSpace::Device) const { return total_[int(s)]; }
  std::int64_t peak_total(MemSpace s = MemSpace::Device) const { return total_peak_[int(s)]; }
  void reset_peaks();
  std::string report() const;  // one line per category, for logs and OOM messages

 private:
  std::int64_t budget_;
  bool counting_ = false;
  StepLog* log_ = nullptr;
  std::array<std::array<std::int64_t, kNumMemCategories>, 2> cur_{}, peak_{};
  std::array<std::int64_t, 2> total_{}, total_peak_{};
  std::map<std::string, std::int64_t> live_;  // label -> bytes, for the OOM report
  std::function<void(const std::string&)> on_failure_;
  std::string largest_live() const;
};

enum class Dtype { F32, BF16 };
const char* to_string(Dtype d);

// Whether a new buffer is zero-filled (the default) or left as it was: for buffers that are
// entirely overwritten before anything reads them (a gathered unit).
enum class Fill { Zero, None };

// Freed buffers are kept and handed out again to the next allocation of the same size, as a
// GPU caching allocator does: the per-step transients (gathered units, full gradients, reduce
// buffers) then cost neither page faults on a CPU nor cudaMalloc/cudaFree on a GPU. The tracker
// accounts buffers in use; what the cache holds beyond them (FSDP_BUFFER_CACHE_BYTES; default
// 1 GiB on a CPU, unbounded on a GPU, where a failed allocation empties the cache and retries)
// is the allocator's reserve, as PyTorch's reserved memory. On a CPU the buffers themselves come
// from the shared arena where there is one (core/shared_arena.hpp), so node peers can read them.
struct BufferCache {
  static std::int64_t held_bytes();
  static void release_all();  // frees every cached buffer (also done at Kokkos::finalize)
};

// An owning, tracked 1-D buffer of n float or bf16 elements (bf16: whole 4-byte words, so an
// odd n costs 2 bytes more). Move-only; frees its accounting when destroyed. On a counting
// tracker it holds no memory: its size and bytes are the buffer's, its views are empty.
class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  TrackedBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c,
                MemSpace s = MemSpace::Device, Dtype d = Dtype::F32, Fill f = Fill::Zero);
  TrackedBuffer(TrackedBuffer&& o) noexcept { *this = std::move(o); }
  TrackedBuffer& operator=(TrackedBuffer&& o) noexcept;
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  ~TrackedBuffer() { reset(); }

  void reset();
  bool allocated() const { return tracker_ != nullptr; }
  std::int64_t size() const { return n_; }  // elements of dtype()
  Dtype dtype() const { return dtype_; }
  std::int64_t bytes() const { return words_ * 4; }
  float* data() const { return view_.data(); }
  // The bf16 elements of a Dtype::BF16 buffer.
  Bf16Vec bf16() const {
    return Bf16Vec(reinterpret_cast<std::uint16_t*>(view_.data()), held() ? n_ : 0);
  }
  ConstBf16Vec cbf16() const {
    return ConstBf16Vec(reinterpret_cast<const std::uint16_t*>(view_.data()), held() ? n_ : 0);
  }
  Vec vec() const { return Vec(view_.data(), view_.extent(0)); }
  Vec vec(std::int64_t off, std::int64_t n) const {
    return held() ? Vec(view_.data() + off, n) : Vec();
  }
  ConstVec cvec() const { return ConstVec(view_.data(), view_.extent(0)); }
  // The float buffer as a collective is handed it: vec(), except that on a counting tracker it
  // keeps the buffer's size at no address (a group that moves nothing measures it). Never for
  // a kernel.
  Vec wire() const { return Vec(view_.data(), words_); }

 private:
  MemoryTracker* tracker_ = nullptr;
  FlatView view_;
  std::string label_;
  bool held() const { return view_.data() != nullptr; }  // false on a counting tracker
  std::int64_t n_ = 0, words_ = 0;
  MemCategory cat_ = MemCategory::Activations;
  MemSpace space_ = MemSpace::Device;
  Dtype dtype_ = Dtype::F32;
};

std::string format_bytes(std::int64_t b);

}  // namespace fsdp
