// SPDX-License-Identifier: MIT
#include "core/host_buffer.hpp"

#include <map>
#include <utility>
#include <vector>

namespace fsdp {
namespace {

using Storage = Kokkos::View<float*, Kokkos::LayoutRight, PinnedSpace>;

struct HostCache {
  std::map<std::int64_t, std::vector<Storage>> free;  // by words
  bool hooked = false;
};

HostCache& host_cache() {
  static HostCache c;
  return c;
}

Storage take(const std::string& label, std::int64_t words, Fill f) {
  HostCache& c = host_cache();
  auto it = c.free.find(words);
  if (it != c.free.end() && !it->second.empty()) {
    Storage v = std::move(it->second.back());
    it->second.pop_back();
    if (f == Fill::Zero) Kokkos::deep_copy(v, 0.f);
    return v;
  }
  if (f == Fill::None) return Storage(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), words);
  return Storage(label, words);
}

void give_back(Storage v) {
  HostCache& c = host_cache();
  if (!c.hooked) {
    Kokkos::push_finalize_hook([] { HostBuffer::release_cache(); });
    c.hooked = true;
  }
  c.free[std::int64_t(v.extent(0))].push_back(std::move(v));
}

}  // namespace

void HostBuffer::release_cache() { host_cache().free.clear(); }

HostBuffer::HostBuffer(MemoryTracker& t, const std::string& label, std::int64_t n, MemCategory c,
                       Dtype d, Fill f)
    : label_(label), n_(n), cat_(c) {
  const std::int64_t words = d == Dtype::BF16 ? (n + 1) / 2 : n;
  t.on_alloc(c, MemSpace::Host, words * 4, label);
  words_ = words;
  if (!t.counting()) try {
    view_ = take(label, words, f);
  } catch (const std::exception& e) {
    t.on_free(c, MemSpace::Host, words * 4, label);
    t.on_alloc_failed(MemSpace::Host, words * 4, label, e.what());
  }
  tracker_ = &t;
}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    reset();  // o is left empty: what it held is now this buffer's
    std::swap(tracker_, o.tracker_);
    std::swap(view_, o.view_);
    std::swap(label_, o.label_);
    std::swap(n_, o.n_);
    std::swap(words_, o.words_);
    std::swap(cat_, o.cat_);
  }
  return *this;
}

void HostBuffer::reset() {
  if (tracker_) {
    tracker_->on_free(cat_, MemSpace::Host, bytes(), label_);
    if (held() && view_.use_count() == 1) give_back(std::move(view_));
  }
  tracker_ = nullptr;
  view_ = Storage();
  n_ = words_ = 0;
}

}  // namespace fsdp
