// SPDX-License-Identifier: MIT
// (Over 400 lines: every collective on every transport shares this file's fixtures; the
// transports themselves are in comm_paths.hpp, shared with test_all_to_all_v.cpp.)
// The communication layer against references computed locally: every collective, blocking and
// not, on the shared-memory path (with a normal and a tiny window) and the forced MPI path;
// bitwise rank-order sums; process groups; the emulated link's delay and overlap.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <type_traits>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "comm/device_mesh.hpp"
#include "comm/process_groups.hpp"
#include "comm_paths.hpp"
#include "core/memory.hpp"
#include "core/shared_arena.hpp"

using namespace fsdp;
using namespace fsdp::comm;
using namespace fsdp::comm::test;

namespace {

// Exactly representable small integers: any summation order gives the same float.
float ag_value(int rank, std::size_t i) { return float(rank * 1000 + int(i % 1000)); }
float rs_value(int rank, std::size_t j) { return float((rank + 1) * int(j % 97)); }

// Rank q's random data, reproducible on every rank.
std::vector<float> rank_data(int q, std::size_t n) {
  std::mt19937 gen(1234u + unsigned(q));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// The documented order, written out independently of the library's kernel.
std::vector<float> rank_order_sum(const std::vector<std::vector<float>>& all, ReduceOp op) {
  std::vector<float> s = all[0];
  for (std::size_t q = 1; q < all.size(); ++q)
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = s[i] + all[q][i];
  if (op == ReduceOp::Avg)
    for (auto& x : s) x = x / float(all.size());
  return s;
}

const std::size_t kCounts[] = {0, 1, 7, 1001, 3001};

void run_all_gather(Communicator& c, std::size_t count, bool blocking, bool in_place) {
  const int n = c.size(), r = c.rank();
  std::vector<float> recv(std::size_t(n) * count, -1.0f), want(recv.size());
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < count; ++i) want[std::size_t(q) * count + i] = ag_value(q, i);
  std::vector<float> send(count);
  for (std::size_t i = 0; i < count; ++i) send[i] = ag_value(r, i);
  ConstVec s = cvec(send);
  if (in_place) {
    std::copy(send.begin(), send.end(), recv.begin() + std::ptrdiff_t(std::size_t(r) * count));
    s = ConstVec(recv.data() + std::size_t(r) * count, count);
  }
  if (blocking) {
    c.all_gather(s, vec(recv));
  } else {
    Handle h = c.iall_gather(s, vec(recv));
    CHECK(std::string(h.op()) == "all_gather");
    CHECK(h.bytes() == recv.size() * sizeof(float));
    while (!h.test()) {
    }
    CHECK(h.done());
    CHECK(h.completion_time() >= h.issue_time());
  }
  CHECK(count_diff(recv, want) == 0);
}

void run_reduce_scatter(Communicator& c, std::size_t count, ReduceOp op, bool blocking) {
  const int n = c.size(), r = c.rank();
  std::vector<float> send(std::size_t(n) * count), recv(count, -1.0f), want(count);
  for (std::size_t j = 0; j < send.size(); ++j) send[j] = rs_value(r, j);
  for (std::size_t i = 0; i < count; ++i) {
    float s = 0;
    for (int q = 0; q < n; ++q) s += rs_value(q, std::size_t(r) * count + i);
    want[i] = op == ReduceOp::Avg ? s / float(n) : s;
  }
  if (blocking) {
    c.reduce_scatter(cvec(send), vec(recv), op);
  } else {
    Handle h = c.ireduce_scatter(cvec(send), vec(recv), op);
    h.wait();
    CHECK(h.done());
  }
  CHECK(count_diff(recv, want) == 0);
}

void run_all_reduce(Communicator& c, std::size_t count, ReduceOp op, bool blocking) {
  const int n = c.size(), r = c.rank();
  std::vector<float> buf(count), want(count);
  for (std::size_t i = 0; i < count; ++i) {
    buf[i] = rs_value(r, i);
    float s = 0;
    for (int q = 0; q < n; ++q) s += rs_value(q, i);
    want[i] = op == ReduceOp::Avg ? s / float(n) : s;
  }
  if (blocking) {
    c.all_reduce(vec(buf), op);
  } else {
    Handle h = c.iall_reduce(vec(buf), op);
    Handle moved = std::move(h);  // handles move; the moved-from one is complete and inert
    CHECK(h.done());
    moved.wait();
  }
  CHECK(count_diff(buf, want) == 0);
}

}  // namespace

static_assert(!std::is_copy_constructible_v<Handle>, "Handle is move-only");
static_assert(std::is_nothrow_move_constructible_v<Handle>, "Handle moves");

TEST_CASE("collectives match local references on every path", "[comm]") {
  const bool blocking = GENERATE(true, false);
  for (const Path& p : kPaths) {
    auto c = make_mpi(p);
    INFO(p.label << (blocking ? ", blocking" : ", non-blocking"));
    for (std::size_t count : kCounts) {
      INFO("count " << count);
      run_all_gather(*c, count, blocking, false);
      run_all_gather(*c, count, blocking, true);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
        run_reduce_scatter(*c, count, op, blocking);
        run_all_reduce(*c, count, op, blocking);
      }
    }
  }
}

TEST_CASE("all-gathers large enough to stream past the cache", "[comm]") {
  // Over 4 MiB in all: the staged path streams its stores; odd count, several window steps.
  const std::size_t count = 5 * kMiB / sizeof(float) / std::size_t(world_size()) + 3;
  for (const Path& p : kPaths) {
    if (p.window_bytes == 1024) continue;  // thousands of steps: slow, and covered above
    INFO(p.label);
    auto c = make_mpi(p);
    run_all_gather(*c, count, true, false);
    run_all_gather(*c, count, false, true);
  }
}

TEST_CASE("the single-rank backend and make_communicator agree with the references", "[comm]") {
  MpiOptions o;
  o.name = "self";
  auto c = make_communicator(MPI_COMM_SELF, o);
  CHECK(std::string(c->backend()) == "single");
  CHECK(c->size() == 1);
  CHECK(c->name() == "self");
  for (std::size_t count : kCounts) {
    run_all_gather(*c, count, true, false);
    run_all_gather(*c, count, false, true);
    run_reduce_scatter(*c, count, ReduceOp::Avg, false);
    run_all_reduce(*c, count, ReduceOp::Sum, true);
  }
  auto w = make_communicator(MPI_COMM_WORLD);
  CHECK(w->size() == world_size());
  CHECK(w->rank() == my_rank());
}

TEST_CASE("sums are bitwise the rank-order sum of random floats", "[comm]") {
  // Odd, and many steps of the tiny window; the larger one (over 2 MiB in all) is read straight
  // from the peers, in more than one piece, by the single-copy reduce-scatter and all-reduce.
  const std::size_t count = GENERATE(std::size_t(2053), std::size_t(300001));
  for (const Path& p : kPaths) {
    INFO(p.label);
    auto c = make_mpi(p);
    const int n = c->size(), r = c->rank();
    std::vector<std::vector<float>> all;
    for (int q = 0; q < n; ++q) all.push_back(rank_data(q, std::size_t(n) * count));
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      const std::vector<float> full = rank_order_sum(all, op);
      std::vector<float> recv(count), want(full.begin() + std::ptrdiff_t(r * count),
                                           full.begin() + std::ptrdiff_t((r + 1) * count));
      c->reduce_scatter(cvec(all[std::size_t(r)]), vec(recv), op);
      CHECK(count_diff(recv, want) == 0);
      std::vector<float> buf = all[std::size_t(r)];
      Handle h = c->iall_reduce(vec(buf), op);
      h.wait();
      CHECK(count_diff(buf, full) == 0);
    }
    std::vector<double> v(3), want(3, 0.0);
    for (int q = 0; q < n; ++q) {
      std::mt19937_64 gen(99u + unsigned(q));
      std::uniform_real_distribution<double> d(-1.0, 1.0);
      for (int i = 0; i < 3; ++i) {
        const double x = d(gen);
        if (q == r) v[std::size_t(i)] = x;
        want[std::size_t(i)] = q == 0 ? x : want[std::size_t(i)] + x;
      }
    }
    c->all_reduce_sum(v.data(), 3);
    CHECK(std::memcmp(v.data(), want.data(), sizeof(double) * 3) == 0);
  }
}

TEST_CASE("broadcast, barrier and the scalar helpers", "[comm]") {
  for (const Path& p : kPaths) {
    INFO(p.label);
    auto c = make_mpi(p);
    const int n = c->size(), r = c->rank(), root = n - 1;
    std::vector<float> buf(1001, -7.0f), want(1001);
    for (std::size_t i = 0; i < buf.size(); ++i) {
      want[i] = ag_value(root, i);
      if (r == root) buf[i] = want[i];
    }
    c->broadcast(vec(buf), root);
    CHECK(count_diff(buf, want) == 0);
    c->barrier();
    CHECK(c->all_reduce_sum(double(r + 1)) == double(n * (n + 1) / 2));
    CHECK(c->all_reduce_max(double(r) * 0.5) == double(n - 1) * 0.5);
    CHECK(c->all_reduce_max(r * 3) == (n - 1) * 3);
  }
}

TEST_CASE("several non-blocking collectives in flight at once", "[comm]") {
  for (const Path& p : kPaths) {
    INFO(p.label);
    auto c = make_mpi(p);
    const int n = c->size(), r = c->rank();
    const std::size_t count = 517;
    std::vector<float> send(count), gathered(std::size_t(n) * count);
    std::vector<float> grads(std::size_t(n) * count), shard(count), flat(count);
    for (std::size_t i = 0; i < count; ++i) send[i] = flat[i] = ag_value(r, i);
    for (std::size_t j = 0; j < grads.size(); ++j) grads[j] = rs_value(r, j);
    Handle a = c->iall_gather(cvec(send), vec(gathered));
    Handle b = c->ireduce_scatter(cvec(grads), vec(shard), ReduceOp::Sum);
    Handle d = c->iall_reduce(vec(flat), ReduceOp::Sum);
    d.wait();  // out of issue order on purpose
    a.wait();
    b.wait();
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i) {
        CHECK(gathered[std::size_t(q) * count + i] == ag_value(q, i));
        if (q == 0) {
          float s = 0, f = 0;
          for (int k = 0; k < n; ++k) {
            s += rs_value(k, std::size_t(r) * count + i);
            f += ag_value(k, i);
          }
          CHECK(shard[i] == s);
          CHECK(flat[i] == f);
        }
      }
  }
}

// The device mesh's communicators hold exactly the ranks its definition names
// (tests/unit/test_mesh_shape.cpp checks the definition itself), in world-rank order, for each
// shape this rank count allows: plain FSDP, hybrid, and at np 4 shard x context with experts
// inside shard and shard x tensor, with a part's groups on half the shard group and the
// experts' slices as extra groups.
TEST_CASE("device mesh groups hold the ranks their definition names", "[comm]") {
  const int n = world_size(), r = my_rank();
  std::vector<MeshShape> shapes;
  for (int s = 1; s <= n; ++s)
    if (n % s == 0) shapes.push_back(MeshShape{n / s, s, 1, 1, s % 2 == 0 ? 2 : 1});
  if (n == 4) {
    shapes.push_back(MeshShape{1, 2, 2, 1, 2});
    shapes.push_back(MeshShape{1, 2, 1, 2, 1});
    shapes.push_back(MeshShape{1, 1, 2, 2, 1});
  }
  for (const MeshShape& m : shapes) {
    INFO("mesh " << m.describe());
    std::vector<MeshGroup> extra;
    if (m.shard % 2 == 0)
      extra = {MeshGroup::part_shard(m.shard, 2), MeshGroup::part_replicate(m.shard, 2)};
    if (m.expert > 1) extra.push_back(MeshGroup::expert_slice(m.expert));
    const DeviceMesh mesh(MPI_COMM_WORLD, m, extra, host_groups());
    CHECK(mesh.rank() == r);
    // The planner's mesh of the same rank (groups that move nothing) has the same groups, sizes
    // and positions as the one that moves data.
    const DeviceMesh counted = DeviceMesh::without_transport(m, extra, r);
    std::vector<MeshGroup> all{MeshGroup::world(), MeshGroup::product({MeshDim::Shard})};
    for (MeshDim d : {MeshDim::Replicate, MeshDim::Shard, MeshDim::Context, MeshDim::Tensor,
                      MeshDim::Expert})
      all.push_back(MeshGroup::of(d, m.expert));
    all.insert(all.end(), extra.begin(), extra.end());
    for (const MeshGroup& g : all) {
      INFO("group " << g.name);
      Communicator& c = mesh.group(g);
      const std::vector<int> want = m.members(r, g);
      REQUIRE(c.size() == int(want.size()));
      CHECK(want[std::size_t(c.rank())] == r);
      std::vector<float> me{float(r)}, got(want.size());
      c.all_gather(cvec(me), vec(got));
      for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == float(want[i]));
      if (c.size() == 1) CHECK(std::string(c.backend()) == "single");
      Communicator& nc = counted.group(g);
      CHECK(nc.size() == c.size());
      CHECK(nc.rank() == c.rank());
      CHECK(!nc.moves_data());
    }
    // A dimension has its own communicator, named after it, even where it has the world's ranks.
    CHECK(mesh.group(MeshDim::Shard).name() == "shard");
    CHECK(mesh.world().name() == "world");
    CHECK(&mesh.group(MeshDim::Shard) != &mesh.world());
  }
  CHECK(ranks_per_node(MPI_COMM_WORLD) == n);
}

TEST_CASE("the emulated link delays completion and lets compute overlap it", "[comm]") {
  const int n = world_size();
  LinkEmulation link;
  link.gbps = 0.1;
  const std::size_t count = (std::size_t(1) << 20) / sizeof(float) / std::size_t(n);
  const double total = double(count * std::size_t(n) * sizeof(float));
  const double predicted = (n == 1 ? total : total * (n - 1) / n) / 0.1e9;  // ~5-10 ms
  std::vector<float> send(count, 1.0f), recv(count * std::size_t(n));
  using sec = std::chrono::duration<double>;

  MpiOptions o;
  o.link = link;
  auto c = make_communicator(MPI_COMM_WORLD, o);
  c->barrier();
  SECTION("a blocking all-gather takes the predicted time") {
    const auto t0 = Clock::now();
    c->all_gather(cvec(send), vec(recv));
    const double took = sec(Clock::now() - t0).count();
    CHECK(took >= 0.99 * predicted);
    CHECK(took < predicted + 2.0);
  }
  SECTION("wait() sleeps until issue + latency + bus bytes / bandwidth") {
    Handle h = c->iall_gather(cvec(send), vec(recv));
    // The data is there at once, but the link is "busy" until the emulated completion.
    if (h.test()) CHECK(to_seconds(Clock::now()) - h.issue_time() >= 0.99 * predicted);
    h.wait();
    CHECK(h.completion_time() - h.issue_time() >= 0.99 * predicted);
    CHECK(h.completion_time() - h.issue_time() < predicted + 2.0);
  }
  SECTION("a wait after compute as long as the transfer returns at once") {
    Handle h = c->iall_gather(cvec(send), vec(recv));
    std::this_thread::sleep_for(sec(predicted));  // the "compute"
    const auto t0 = Clock::now();
    h.wait();
    const double waited = sec(Clock::now() - t0).count();
    // Under FSDP_COMM_NO_SHM=1 the data moves inside wait(): CPU MPI has no progress thread.
    const bool moves_at_issue = std::string(c->backend()) != "mpi";
    if (moves_at_issue) CHECK(waited < 0.5 * predicted);
    if (!moves_at_issue) WARN("MPI fallback: overlap not checked; wait() took " << waited);
    CHECK(h.test());
  }
  SECTION("latency applies to small all-reduces and bus bytes double for all_reduce") {
    MpiOptions slow;
    slow.link.latency_us = 20000;
    auto s = make_communicator(MPI_COMM_WORLD, slow);
    auto t0 = Clock::now();
    CHECK(s->all_reduce_sum(1.0) == double(n));
    CHECK(sec(Clock::now() - t0).count() >= 0.0199);
    Handle h = c->iall_reduce(vec(recv), ReduceOp::Sum);
    h.wait();
    const double bus = n == 1 ? total : 2.0 * total * (n - 1) / n;
    CHECK(h.completion_time() - h.issue_time() >= 0.99 * bus / 0.1e9);
  }
}

TEST_CASE("bf16 all-gathers move the bits; bf16 reduce-scatters give the float rank-order sum",
          "[comm][bf16]") {
  // Per rank: even (whole words), many steps of the tiny window; the larger one is reduced from
  // the peers' buffers in more than one piece on the single-copy path.
  const std::size_t count = GENERATE(std::size_t(2054), std::size_t(140002));
  const bool blocking = GENERATE(true, false);
  for (const Path& p : kPaths) {
    INFO(p.label << (blocking ? ", blocking" : ", non-blocking"));
    auto c = make_mpi(p);
    const int n = c->size(), r = c->rank();
    // Every rank's bf16 data, made here from the float test data by truncation (any bits do).
    std::vector<std::vector<std::uint16_t>> all;
    for (int q = 0; q < n; ++q) {
      const std::vector<float> f = rank_data(q, std::size_t(n) * count);
      std::vector<std::uint16_t> h(f.size());
      for (std::size_t i = 0; i < f.size(); ++i) {
        std::uint32_t u;
        std::memcpy(&u, &f[i], 4);
        h[i] = std::uint16_t(u >> 16);
      }
      all.push_back(h);
    }
    // All-gather: block q of the result is rank q's first `count` elements, bit for bit.
    std::vector<std::uint16_t> gathered(std::size_t(n) * count, 0xdead);
    const ConstBf16Vec mine(all[std::size_t(r)].data(), count);
    const Bf16Vec out(gathered.data(), gathered.size());
    if (blocking) {
      c->all_gather(mine, out);
    } else {
      Handle h = c->iall_gather(mine, out);
      CHECK(h.bytes() == gathered.size() * 2);
      h.wait();
    }
    std::size_t wrong = 0;
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i)
        wrong += gathered[std::size_t(q) * count + i] != all[std::size_t(q)][i];
    CHECK(wrong == 0);
    // Reduce-scatter: widened exactly, summed in float in rank order, never rounded back.
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      std::vector<float> recv(count), want(count);
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t e = std::size_t(r) * count + i;
        float acc = from_bf16(all[0][e]);
        for (int q = 1; q < n; ++q) acc += from_bf16(all[std::size_t(q)][e]);
        want[i] = op == ReduceOp::Avg && n > 1 ? acc / float(n) : acc;
      }
      const ConstBf16Vec send(all[std::size_t(r)].data(), all[std::size_t(r)].size());
      if (blocking) {
        c->reduce_scatter(send, vec(recv), op);
      } else {
        Handle h = c->ireduce_scatter(send, vec(recv), op);
        CHECK(h.bytes() == all[std::size_t(r)].size() * 2);
        h.wait();
      }
      CHECK(count_diff(recv, want) == 0);
    }
  }
}

TEST_CASE("the single-rank backend moves and widens bf16", "[comm][bf16]") {
  MpiOptions o;
  auto c = make_communicator(MPI_COMM_SELF, o);
  std::vector<std::uint16_t> a(4, 1), b(4, 0);
  c->all_gather(ConstBf16Vec(a.data(), 4), Bf16Vec(b.data(), 4));
  CHECK(b == a);
  std::vector<float> w(2);
  c->reduce_scatter(ConstBf16Vec(a.data(), 2), Vec(w.data(), 2), ReduceOp::Avg);
  CHECK(w[0] == from_bf16(1));
}

TEST_CASE("a progress thread: the issue does not wait for a late peer, and order is kept",
          "[comm]") {
  MpiOptions o;
  o.progress_thread = true;
  o.window_bytes = 4096;  // many steps, so the thread sleeps on its peers again and again
  auto c = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, o);
  if (!c->uses_progress_thread()) {
    REQUIRE(c->size() == 1);  // a lone rank has nothing to move; shm off is FSDP_COMM_NO_SHM
    return;
  }
  const int n = c->size(), r = c->rank();
  const std::size_t count = 3001;
  std::vector<float> send(count), gathered(std::size_t(n) * count);
  std::vector<float> grads(std::size_t(n) * count), shard(count), flat(count);
  for (std::size_t i = 0; i < count; ++i) send[i] = flat[i] = ag_value(r, i);
  for (std::size_t j = 0; j < grads.size(); ++j) grads[j] = rs_value(r, j);
  c->barrier();
  // Rank 0 arrives 300 ms late; the others' issues must return long before it does.
  if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto t0 = std::chrono::steady_clock::now();
  Handle a = c->iall_gather(cvec(send), vec(gathered));
  Handle b = c->ireduce_scatter(cvec(grads), vec(shard), ReduceOp::Sum);
  const double issue_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r != 0) CHECK(issue_s < 0.15);
  // A blocking collective behind the queued ones runs after them, on every rank.
  c->all_reduce(vec(flat), ReduceOp::Sum);
  CHECK(a.test());
  CHECK(b.test());
  a.wait();
  b.wait();
  std::size_t wrong = 0;
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < count; ++i) {
      wrong += gathered[std::size_t(q) * count + i] != ag_value(q, i);
      if (q == 0) {
        float s = 0, f = 0;
        for (int k = 0; k < n; ++k) {
          s += rs_value(k, std::size_t(r) * count + i);
          f += ag_value(k, i);
        }
        wrong += shard[i] != s;
        wrong += flat[i] != f;
      }
    }
  CHECK(wrong == 0);
}

TEST_CASE("tracked buffers in the shared arena are read directly, bit for bit", "[comm][arena]") {
  // The engine's buffers come from the shared arena: a peer reads them through its own mapping
  // of the arena (no system call) and sums as it reads. The results must be the rank-order sums
  // exactly, also when one rank's buffer is ordinary memory (read with process_vm_readv).
  const std::size_t count = GENERATE(std::size_t(2053), std::size_t(16001), std::size_t(300001));
  const bool rank0_plain = GENERATE(false, true);
  SharedArena* arena = SharedArena::get();
  for (const Path& p : kPaths) {
    if (!p.shm || p.single_copy_max_bytes == 0) continue;
    INFO(p.label << ", count " << count << (rank0_plain ? ", rank 0 plain memory" : ""));
    auto c = make_mpi(p);
    const int n = c->size(), r = c->rank();
    if (arena && c->uses_single_copy() && n > 1) CHECK(c->reads_peer_arenas());
    MemoryTracker t;
    TrackedBuffer send(t, "send", std::int64_t(n) * std::int64_t(count), MemCategory::Grads);
    TrackedBuffer recv(t, "recv", std::int64_t(count), MemCategory::Grads);
    TrackedBuffer gathered(t, "gathered", std::int64_t(n) * std::int64_t(count),
                           MemCategory::GatheredParams);
    if (arena) CHECK(arena->contains(send.data()));
    std::vector<float> plain_send;
    const bool plain = rank0_plain && r == 0;
    std::vector<std::vector<float>> all;
    for (int q = 0; q < n; ++q) all.push_back(rank_data(q, std::size_t(n) * count));
    std::copy(all[std::size_t(r)].begin(), all[std::size_t(r)].end(), send.data());
    if (plain) plain_send = all[std::size_t(r)];
    const ConstVec s = plain ? cvec(plain_send) : send.cvec();
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      const std::vector<float> full = rank_order_sum(all, op);
      const std::vector<float> want(full.begin() + std::ptrdiff_t(r * count),
                                    full.begin() + std::ptrdiff_t((r + 1) * count));
      c->reduce_scatter(s, recv.vec(), op);
      CHECK(count_diff(std::vector<float>(recv.data(), recv.data() + count), want) == 0);
    }
    // bf16 blocks: the float rank-order sum of the widened values.
    TrackedBuffer send16(t, "send16", std::int64_t(n) * std::int64_t(count), MemCategory::Grads,
                         MemSpace::Device, Dtype::BF16);
    std::vector<float> want16(count, 0.f);
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t u;
        std::memcpy(&u, &all[std::size_t(q)][std::size_t(r) * count + i], 4);
        const float w = from_bf16(std::uint16_t(u >> 16));
        want16[i] = q == 0 ? w : want16[i] + w;
      }
    for (std::size_t i = 0; i < std::size_t(n) * count; ++i) {
      std::uint32_t u;
      std::memcpy(&u, &all[std::size_t(r)][i], 4);
      send16.bf16()(i) = std::uint16_t(u >> 16);
    }
    c->reduce_scatter(send16.cbf16(), recv.vec(), ReduceOp::Sum);
    CHECK(count_diff(std::vector<float>(recv.data(), recv.data() + count), want16) == 0);
    // All-gather: block q is rank q's first `count` elements.
    const ConstVec own = plain ? ConstVec(plain_send.data(), count) : ConstVec(send.data(), count);
    c->all_gather(own, gathered.vec());
    std::vector<float> want_g;
    for (int q = 0; q < n; ++q)
      want_g.insert(want_g.end(), all[std::size_t(q)].begin(),
                    all[std::size_t(q)].begin() + std::ptrdiff_t(count));
    CHECK(count_diff(std::vector<float>(gathered.data(), gathered.data() + n * count), want_g) ==
          0);
  }
}
