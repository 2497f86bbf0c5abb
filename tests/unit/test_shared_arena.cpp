// SPDX-License-Identifier: MIT
// The shared arena's allocator against a model of which bytes are taken (random allocations and
// frees: no overlap, alignment kept, freed space found again after coalescing, nullptr when
// full), and a peer's view of the process's own arena through its /proc descriptor, which also
// sees a released block's pages given back.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "core/shared_arena.hpp"

using namespace fsdp;

TEST_CASE("shared arena: blocks never overlap, keep their alignment and are found again",
          "[arena]") {
  constexpr std::size_t kCap = std::size_t(8) << 20;
  std::vector<char> backing(kCap + 4096);
  char* base = backing.data() + (4096 - reinterpret_cast<std::uintptr_t>(backing.data()) % 4096);
  SharedArena arena(-1, base, kCap);
  std::vector<char> owner(kCap, 0);  // which bytes are taken, by the model
  struct Block {
    char* p;
    std::size_t n;
  };
  std::vector<Block> live;
  std::mt19937 gen(11);
  for (int i = 0; i < 4000; ++i) {
    if (live.empty() || gen() % 3 != 0) {
      const std::size_t n = gen() % 2 ? 1 + gen() % 4000 : 1 + gen() % (256 << 10);
      char* p = static_cast<char*>(arena.allocate(n));
      if (!p) continue;  // full for now
      const std::size_t off = std::size_t(p - base);
      REQUIRE(arena.contains(p));
      REQUIRE(off + n <= kCap);
      REQUIRE(off % (n >= (64 << 10) ? 4096 : 64) == 0);
      REQUIRE(std::none_of(owner.begin() + std::ptrdiff_t(off),
                           owner.begin() + std::ptrdiff_t(off + n), [](char c) { return c; }));
      std::memset(owner.data() + off, 1, n);
      live.push_back({p, n});
    } else {
      const std::size_t k = gen() % live.size();
      std::memset(owner.data() + (live[k].p - base), 0, live[k].n);
      arena.release(live[k].p);
      live.erase(live.begin() + std::ptrdiff_t(k));
    }
  }
  REQUIRE(arena.in_use() > 0);
  for (const Block& b : live) arena.release(b.p);
  REQUIRE(arena.in_use() == 0);
  // Everything coalesced: the whole capacity is one block again, and one byte more is not.
  void* all = arena.allocate(kCap);
  REQUIRE(all == base);
  REQUIRE(arena.allocate(64) == nullptr);
  arena.release(all);
  REQUIRE(arena.allocate(kCap + 1) == nullptr);
}

TEST_CASE("shared arena: a mapping of the memfd sees what the owner writes", "[arena]") {
  SharedArena* arena = SharedArena::get();
  if (!arena) {
    WARN("no shared arena here (FSDP_SHARED_ARENA=0 or no memfd): mapping untested");
    return;
  }
  auto* p = static_cast<float*>(arena->allocate(100000 * sizeof(float)));
  REQUIRE(p);
  for (int i = 0; i < 100000; ++i) p[i] = float(i) * 0.5f;
  const auto peer = PeerArena::open(getpid(), arena->fd(), arena->base(), arena->capacity());
  REQUIRE(peer);
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  const auto* seen = static_cast<const float*>(peer->find(addr, 100000 * sizeof(float)));
  REQUIRE(seen);
  REQUIRE(static_cast<const void*>(seen) != static_cast<const void*>(p));  // another mapping
  REQUIRE(std::memcmp(seen, p, 100000 * sizeof(float)) == 0);
  p[123] = -1.f;
  REQUIRE(seen[123] == -1.f);
  // Ranges that leave the arena are not found.
  REQUIRE(peer->find(arena->base() + arena->capacity() - 8, 16) == nullptr);
  REQUIRE(peer->find(arena->base() - 4, 8) == nullptr);
  // A released block's whole pages go back to the OS: they read as zeros again.
  REQUIRE(seen[50000] == 25000.f);
  arena->release(p);
  REQUIRE(seen[50000] == 0.f);
}
