// SPDX-License-Identifier: MIT
// The all-to-all with variable counts on every transport (comm_paths.hpp) and the single-rank
// backend, against MPI_Alltoallv called directly on the same data and against the values each
// sender wrote: empty blocks, a rank that sends nothing, one that receives nothing, a block
// large enough to take many window steps (or the single-copy reads), blocks out of rank order
// with gaps that must stay untouched, arbitrary bit patterns (NaNs included: bits, not values,
// move), many handles in flight waited in a rank-dependent order, bf16, and the count exchange.
// The hidden "[.error]" cases each end the job with one line; tests/comm.cmake runs them and
// matches that line.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/process_groups.hpp"
#include "comm_paths.hpp"

using namespace fsdp;
using namespace fsdp::comm;
using namespace fsdp::comm::test;

namespace {

// How many elements rank p sends rank q in a group of n.
struct Case {
  const char* label;
  std::int64_t (*count)(int p, int q, int n);
  bool large;  // many steps of a tiny window: skipped there (slow, and covered by the others)
};

const Case kCases[] = {
    {"uneven, some blocks empty",
     [](int p, int q, int) -> std::int64_t {
       return (p + 2 * q) % 3 == 0 ? 0 : 1 + (7 * p + 13 * q) % 50;
     },
     false},
    {"rank 0 sends nothing", [](int p, int q, int) -> std::int64_t { return p == 0 ? 0 : 20 + q; },
     false},
    {"the last rank receives nothing",
     [](int p, int q, int n) -> std::int64_t { return q == n - 1 ? 0 : 30 + p; }, false},
    {"every block empty", [](int, int, int) -> std::int64_t { return 0; }, false},
    // Over a default window step per block, and over the single-copy staging piece.
    {"300 thousand to one peer, a few to the others",
     [](int p, int q, int n) -> std::int64_t { return q == (p + 1) % n ? 300001 + p : 5; }, true},
};

// Sender p's element i of its block for q: any 32 bits (splitmix64 of the triple).
std::uint32_t bits(int p, int q, std::int64_t i) {
  std::uint64_t x = (std::uint64_t(p) << 56) ^ (std::uint64_t(q) << 48) ^ std::uint64_t(i);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return std::uint32_t(x ^ (x >> 31));
}

float as_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Blocks in reverse rank order, 3 elements apart, after 2 leading ones: a layout that neither
// packs nor follows rank order, with gaps that must keep their values.
PeerBlocks scattered(std::vector<std::int64_t> counts) {
  PeerBlocks b;
  b.displs.resize(counts.size());
  std::int64_t at = 2;
  for (std::size_t k = counts.size(); k-- > 0;) {
    b.displs[k] = at;
    at += counts[k] + 3;
  }
  b.counts = std::move(counts);
  return b;
}

std::vector<int> ints(const std::vector<std::int64_t>& v) { return {v.begin(), v.end()}; }

// One all-to-all-v of a case: buffers, the expected result and MPI's own, kept together so
// several can be in flight.
struct Exchange {
  Exchange(const Case& k, int n, int r, std::int64_t scale) {
    std::vector<std::int64_t> sc(static_cast<std::size_t>(n)), rc(sc.size());
    for (int q = 0; q < n; ++q) {
      sc[std::size_t(q)] = scale * k.count(r, q, n);
      rc[std::size_t(q)] = scale * k.count(q, r, n);
    }
    send_blocks = scattered(sc);
    recv_blocks = scattered(rc);
    send.assign(std::size_t(send_blocks.extent() + 2), as_float(0x7fc0beefu));
    for (int q = 0; q < n; ++q)
      for (std::int64_t i = 0; i < sc[std::size_t(q)]; ++i)
        send[std::size_t(send_blocks.displs[std::size_t(q)] + i)] = as_float(bits(r, q, i));
    recv.assign(std::size_t(recv_blocks.extent() + 2), as_float(0x7fc0deadu));
    want = reference = recv;
    for (int p = 0; p < n; ++p)
      for (std::int64_t i = 0; i < rc[std::size_t(p)]; ++i)
        want[std::size_t(recv_blocks.displs[std::size_t(p)] + i)] = as_float(bits(p, r, i));
  }

  void mpi_reference(MPI_Comm comm) {
    MPI_Alltoallv(send.data(), ints(send_blocks.counts).data(), ints(send_blocks.displs).data(),
                  MPI_FLOAT, reference.data(), ints(recv_blocks.counts).data(),
                  ints(recv_blocks.displs).data(), MPI_FLOAT, comm);
  }

  void check() const {
    CHECK(count_diff(reference, want) == 0);  // the test's own expectation agrees with MPI
    CHECK(count_diff(recv, want) == 0);
  }

  PeerBlocks send_blocks, recv_blocks;
  std::vector<float> send, recv, want, reference;
};

void run_case(Communicator& c, MPI_Comm reference_comm, const Case& k, bool blocking) {
  const int n = c.size(), r = c.rank();
  INFO(k.label << (blocking ? ", blocking" : ", non-blocking"));
  Exchange x(k, n, r, 1);
  // The counts a caller learns before sending: what every rank passed for this one.
  CHECK(c.exchange_counts(x.send_blocks.counts) == x.recv_blocks.counts);
  if (blocking) {
    c.all_to_all_v(cvec(x.send), x.send_blocks, vec(x.recv), x.recv_blocks);
  } else {
    Handle h = c.iall_to_all_v(cvec(x.send), x.send_blocks, vec(x.recv), x.recv_blocks);
    CHECK(std::string(h.op()) == "all_to_all_v");
    CHECK(h.bytes() == std::size_t(x.send_blocks.total()) * sizeof(float));
    while (!h.test()) {
    }
  }
  x.mpi_reference(reference_comm);
  x.check();
}

}  // namespace

TEST_CASE("all_to_all_v matches MPI_Alltoallv on every path", "[comm][a2a]") {
  const bool blocking = GENERATE(true, false);
  for (const Path& p : kPaths) {
    auto c = make_mpi(p);
    INFO(p.label);
    for (const Case& k : kCases)
      if (!(k.large && p.window_bytes > 0)) run_case(*c, MPI_COMM_WORLD, k, blocking);
  }
}

TEST_CASE("all_to_all_v on the single-rank backend is a copy of the one block", "[comm][a2a]") {
  MpiOptions o;
  o.name = "self";
  auto c = make_communicator(MPI_COMM_SELF, o);
  REQUIRE(std::string(c->backend()) == "single");
  for (const Case& k : kCases) {
    run_case(*c, MPI_COMM_SELF, k, true);
    run_case(*c, MPI_COMM_SELF, k, false);
  }
}

TEST_CASE("many all_to_all_v in flight, waited in a different order on each rank", "[comm][a2a]") {
  for (const Path& p : kPaths) {
    auto c = make_mpi(p);
    INFO(p.label);
    const int n = c->size(), r = c->rank();
    std::deque<Exchange> xs;  // a deque: the buffers stay where they are while it grows
    std::vector<Handle> hs;
    for (int round = 0; round < 2; ++round)
      for (const Case& k : kCases) {
        if (k.large && (p.window_bytes > 0 || round > 0)) continue;
        xs.emplace_back(k, n, r, 1 + round);
        Exchange& x = xs.back();
        hs.push_back(c->iall_to_all_v(cvec(x.send), x.send_blocks, vec(x.recv), x.recv_blocks));
      }
    // Rotated by rank, then backwards: no two ranks wait in the same order (n > 1).
    const std::size_t m = hs.size();
    for (std::size_t j = 0; j < m; ++j) hs[(m - 1 - j + std::size_t(r)) % m].wait();
    for (Exchange& x : xs) {
      x.mpi_reference(MPI_COMM_WORLD);
      x.check();
    }
  }
}

TEST_CASE("bf16 all_to_all_v moves the bits of even blocks", "[comm][a2a][bf16]") {
  const bool blocking = GENERATE(true, false);
  for (const Path& p : kPaths) {
    auto c = make_mpi(p);
    INFO(p.label << (blocking ? ", blocking" : ", non-blocking"));
    // Each float block seen as a bf16 block of twice the count at twice the displacement: the
    // result must be the float case's, bit for bit.
    Exchange x(kCases[0], c->size(), c->rank(), 1);
    auto twice = [](PeerBlocks b) {
      for (auto& v : b.counts) v *= 2;
      for (auto& v : b.displs) v *= 2;
      return b;
    };
    const PeerBlocks sb = twice(x.send_blocks), rb = twice(x.recv_blocks);
    auto b16 = [](std::vector<float>& v) { return reinterpret_cast<std::uint16_t*>(v.data()); };
    const ConstBf16Vec s(b16(x.send), x.send.size() * 2);
    const Bf16Vec d(b16(x.recv), x.recv.size() * 2);
    if (blocking)
      c->all_to_all_v(s, sb, d, rb);
    else
      c->iall_to_all_v(s, sb, d, rb).wait();
    MPI_Alltoallv(b16(x.send), ints(sb.counts).data(), ints(sb.displs).data(), MPI_UINT16_T,
                  b16(x.reference), ints(rb.counts).data(), ints(rb.displs).data(), MPI_UINT16_T,
                  MPI_COMM_WORLD);
    x.check();
  }
}

TEST_CASE("all_to_all_v with debug.check_collectives and an emulated link", "[comm][a2a]") {
  for (bool shm : {true, false}) {
    MpiOptions o;
    o.shared_memory = shm;
    o.link.latency_us = 20000;
    auto c = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, o);
    c->set_check_collectives(true);  // agreeing counts raise no alarm
    INFO(c->backend());
    Exchange x(kCases[0], c->size(), c->rank(), 1);
    Handle h = c->iall_to_all_v(cvec(x.send), x.send_blocks, vec(x.recv), x.recv_blocks);
    h.wait();
    CHECK(h.completion_time() - h.issue_time() >= 0.0199);
    x.mpi_reference(MPI_COMM_WORLD);
    x.check();
  }
}

// ---- Each ends the job with one line (tests/comm.cmake matches it); never run by default. ----

namespace {

// Two ranks: rank 0 sends rank 1 `to_one` elements; rank 1 expects `expect` from rank 0.
void mismatched(Communicator& c, std::int64_t to_one, std::int64_t expect) {
  std::vector<float> send(8, 1.0f), recv(8, 0.0f);
  PeerBlocks sb = PeerBlocks::packed({1, c.rank() == 0 ? to_one : 1});
  PeerBlocks rb = PeerBlocks::packed({c.rank() == 1 ? expect : 1, 1});
  c.all_to_all_v(cvec(send), sb, vec(recv), rb);
}

std::unique_ptr<MpiCommunicator> path(bool shm) {
  MpiOptions o;
  o.shared_memory = shm;
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, o);
}

}  // namespace

TEST_CASE("error: negative count", "[.error][negative]") {
  auto c = make_communicator(MPI_COMM_WORLD);
  std::vector<float> send(4), recv(4);
  std::vector<std::int64_t> counts(std::size_t(c->size()), 1);
  counts.back() = -1;
  c->all_to_all_v(cvec(send), PeerBlocks::packed(counts), vec(recv), PeerBlocks::packed(counts));
}

TEST_CASE("error: block outside its buffer", "[.error][range]") {
  auto c = make_communicator(MPI_COMM_WORLD);
  std::vector<float> send(4), recv(4);
  PeerBlocks b = PeerBlocks::packed(std::vector<std::int64_t>(std::size_t(c->size()), 1));
  b.displs.back() = 3;
  b.counts.back() = 2;
  c->all_to_all_v(cvec(send), PeerBlocks::packed(b.counts), vec(recv), b);
}

TEST_CASE("error: overlapping receive blocks", "[.error][overlap]") {
  auto c = path(true);  // two ranks
  std::vector<float> send(8), recv(8);
  c->all_to_all_v(cvec(send), PeerBlocks::packed({4, 4}), vec(recv), PeerBlocks{{4, 4}, {0, 2}});
}

TEST_CASE("error: odd bf16 count", "[.error][bf16_odd]") {
  auto c = make_communicator(MPI_COMM_WORLD);
  std::vector<std::uint16_t> send(8), recv(8);
  const PeerBlocks b = PeerBlocks::packed(std::vector<std::int64_t>(std::size_t(c->size()), 3));
  c->all_to_all_v(ConstBf16Vec(send.data(), 8), b, Bf16Vec(recv.data(), 8), b);
}

TEST_CASE("error: counts disagree (shared memory)", "[.error][mismatch_shm]") {
  auto c = path(true);
  mismatched(*c, 3, 2);
}

TEST_CASE("error: a sender sends more than its receiver expects (MPI)", "[.error][mismatch_mpi]") {
  auto c = path(false);
  mismatched(*c, 3, 2);
}

TEST_CASE("error: counts disagree (debug.check_collectives)", "[.error][mismatch_checked]") {
  auto c = path(false);
  c->set_check_collectives(true);
  mismatched(*c, 2, 3);
}
