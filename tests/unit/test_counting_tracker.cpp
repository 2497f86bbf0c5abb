// SPDX-License-Identifier: MIT
// The counting tracker the planner runs the engine on (core/memory.hpp): every buffer kind is
// counted exactly as a real tracker counts it (checked against one, allocation by allocation,
// frees and moves included), holds no memory and hands out empty views, so kernels over them
// do nothing; an offload file made for counting lays out regions and moves no bytes.
#include <catch2/catch.hpp>

#include "core/offload_file.hpp"
#include "core/shard_buffer.hpp"

using namespace fsdp;

namespace {

void same_peaks(const MemoryTracker& a, const MemoryTracker& b) {
  for (int s = 0; s < 2; ++s) {
    for (int c = 0; c < kNumMemCategories; ++c) {
      CHECK(a.peak(MemCategory(c), MemSpace(s)) == b.peak(MemCategory(c), MemSpace(s)));
      CHECK(a.current(MemCategory(c), MemSpace(s)) == b.current(MemCategory(c), MemSpace(s)));
    }
    CHECK(a.peak_total(MemSpace(s)) == b.peak_total(MemSpace(s)));
  }
}

}  // namespace

TEST_CASE("a counting tracker counts every buffer as a real one and holds none", "[memory]") {
  MemoryTracker real;
  MemoryTracker counted = MemoryTracker::counting_only();
  CHECK_FALSE(real.counting());
  CHECK(counted.counting());
  const std::int64_t cached = BufferCache::held_bytes();
  for (MemoryTracker* t : {&real, &counted}) {
    TrackedBuffer a(*t, "a", 1001, MemCategory::Activations);
    TrackedBuffer b(*t, "b", 1001, MemCategory::GatheredParams, MemSpace::Device, Dtype::BF16);
    HostBuffer h(*t, "h", 77, MemCategory::OptimizerState, Dtype::BF16);
    ShardBuffer sd(*t, "sd", 300, MemCategory::ParamShard, MemSpace::Device);
    ShardBuffer sh(*t, "sh", 300, MemCategory::Grads, MemSpace::Host);
    CHECK(a.bytes() == 4004);
    CHECK(b.bytes() == 2004);  // 501 whole words
    CHECK(h.bytes() == 156);
    CHECK(sd.size() == 300);
    CHECK(sd.view().sub(100, 200).size() == 200);
    CHECK(sh.view().in_host_memory());
    TrackedBuffer moved = std::move(a);
    CHECK(moved.bytes() == 4004);
    b.reset();
    if (t->counting()) {
      CHECK(moved.vec().extent(0) == 0);
      CHECK(moved.vec(10, 20).extent(0) == 0);
      CHECK(moved.data() == nullptr);
      CHECK(h.vec().extent(0) == 0);
      CHECK(sd.view().device().extent(0) == 0);
      CHECK(sh.view().host().extent(0) == 0);
      sd.view().fill(1.f);  // copies into a counted shard do nothing
    } else {
      CHECK(moved.vec().extent(0) == 1001);
      CHECK(sd.view().device().extent(0) == 300);
    }
  }
  same_peaks(real, counted);
  // The real buffers went back to the cache; the counted ones never came from it.
  CHECK(BufferCache::held_bytes() >= cached);
}

TEST_CASE("a counting offload file lays out regions and moves no bytes", "[memory]") {
  auto f = OffloadFile::counting(3 * kIoAlign + 5);
  CHECK(f->counts_only());
  CHECK(f->size() == 4 * kIoAlign);
  const std::int64_t a = f->allocate(10), b = f->allocate(kIoAlign + 1);
  CHECK(a == 0);
  CHECK(b == kIoAlign);
  const ShardVec s = ShardVec::on_disk(*f, b, 100);
  std::vector<float> v(100, 3.f);
  s.copy_from(v.data());
  s.copy_to(v.data());
  CHECK(v[0] == 3.f);  // nothing was read back over it
  f->wait(f->read(0, kIoAlign, nullptr));
  CHECK(f->done(1));
}
