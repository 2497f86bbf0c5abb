// SPDX-License-Identifier: MIT
// The device communicators on a real GPU, against references computed on the host (the
// all-to-all-v included): NCCL on one rank (and across ranks when each has its own GPU), the
// host-staged MPI path bitwise against rank-ordered sums (at 2 ranks the ranks share one GPU),
// and the path comm.backend=auto picks.
// Buffers are filled by async copies on the compute stream just before each collective, so a
// missing compute -> comm event shows up as wrong values. Without a GPU: "SKIPPED", exit 77.
#define CATCH_CONFIG_RUNNER
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/kokkos_session.hpp"
#include "comm/cuda/cuda_resources.hpp"
#include "comm/cuda/device_select.hpp"
#include "comm/cuda/nccl_communicator.hpp"
#include "comm/cuda/staged_communicator.hpp"
#include "core/check.hpp"

using namespace fsdp;
using namespace fsdp::comm;

namespace {

constexpr int kSkip = 77;  // SKIP_RETURN_CODE in tests/gpu.cmake

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Rank q's j-th input: mixed signs and magnitudes, so the order of a sum changes its bits.
// A hash of (q, j, salt), cheap enough for millions of elements.
float value(int q, std::size_t j, int salt) {
  std::uint64_t x = (std::uint64_t(q) << 48) ^ (std::uint64_t(salt) << 40) ^ std::uint64_t(j);
  x += 0x9e3779b97f4a7c15ull;  // splitmix64
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const float u = float(x >> 40) / float(1 << 24);  // [0, 1), 24 bits
  return (2.0f * u - 1.0f) * std::ldexp(1.0f, int(j % 7) - 3);
}

std::vector<float> inputs(int q, std::size_t n, int salt) {
  std::vector<float> v(n);
  for (std::size_t j = 0; j < n; ++j) v[j] = value(q, j, salt);
  return v;
}

// Device memory filled from pinned memory by an async copy on `stream` (not waited for: the
// collective's own ordering must cover it).
struct Device {
  Device(const std::vector<float>& h, cudaStream_t stream) : d(h.size()), staging(h.size() * 4) {
    std::memcpy(staging.floats(), h.data(), h.size() * sizeof(float));
    REQUIRE(cudaMemcpyAsync(d.data(), staging.floats(), h.size() * sizeof(float),
                            cudaMemcpyHostToDevice, stream) == cudaSuccess);
  }
  Device(std::size_t n, cudaStream_t stream) : d(n), staging(4) {
    REQUIRE(cudaMemsetAsync(d.data(), 0xff, n * sizeof(float), stream) == cudaSuccess);  // NaNs
  }
  std::vector<float> get() const {
    std::vector<float> h(d.size());
    REQUIRE(cudaMemcpy(h.data(), d.data(), h.size() * sizeof(float), cudaMemcpyDeviceToHost) ==
            cudaSuccess);
    return h;
  }
  Vec vec() const { return Vec(d.data(), d.size()); }
  ConstVec cvec() const { return ConstVec(d.data(), d.size()); }
  cuda::DeviceBuffer<float> d;
  cuda::PinnedBuffer staging;  // lives until the copy from it is long done
};

void require_equal(const std::vector<float>& got, const std::vector<float>& want, bool exact) {
  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0, first = got.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = exact ? std::memcmp(&got[i], &want[i], sizeof(float)) == 0
                          : std::fabs(got[i] - want[i]) <= 1e-5f * (1.0f + std::fabs(want[i]));
    if (!ok && wrong++ == 0) first = i;
  }
  if (wrong > 0) {
    CAPTURE(wrong, first, got[first], want[first]);
    FAIL_CHECK("wrong elements");
  }
}

// Every collective through `comm`, blocking and not, at sizes below and above a shared-memory
// step. exact: bitwise equality with rank-ordered float sums (the MPI paths' contract).
void check_collectives(Communicator& comm, cudaStream_t compute, bool exact) {
  const int n = comm.size(), me = comm.rank();
  auto* dev = dynamic_cast<DeviceCommunicator*>(&comm);
  for (std::size_t c : {std::size_t(1), std::size_t(1000), std::size_t(300001)}) {
    CAPTURE(comm.backend(), n, c);
    const std::size_t all = std::size_t(n) * c;
    // all-gather: exact on every path (no arithmetic).
    std::vector<float> want(all);
    for (int q = 0; q < n; ++q) {
      const auto v = inputs(q, c, 1);
      std::copy(v.begin(), v.end(), want.begin() + std::ptrdiff_t(std::size_t(q) * c));
    }
    {
      Device send(inputs(me, c, 1), compute);
      Device recv(all, compute);
      comm.all_gather(send.cvec(), recv.vec());
      require_equal(recv.get(), want, true);
    }
    {  // in place, non-blocking: send is recv's own block
      std::vector<float> mine(all, -7.0f);
      const auto v = inputs(me, c, 1);
      std::copy(v.begin(), v.end(), mine.begin() + std::ptrdiff_t(std::size_t(me) * c));
      Device recv(mine, compute);
      Handle h = comm.iall_gather(ConstVec(recv.d.data() + std::size_t(me) * c, c), recv.vec());
      h.wait();
      require_equal(recv.get(), want, true);
    }
    // reduce-scatter, Sum and Avg: block `me` of the rank-ordered sum.
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      std::vector<float> expect(c);
      for (std::size_t i = 0; i < c; ++i) {
        float acc = value(0, std::size_t(me) * c + i, 2);
        for (int q = 1; q < n; ++q) acc += value(q, std::size_t(me) * c + i, 2);
        expect[i] = op == ReduceOp::Avg ? acc / float(n) : acc;
      }
      Device send(inputs(me, all, 2), compute);
      Device recv(c, compute);
      Handle h = comm.ireduce_scatter(send.cvec(), recv.vec(), op);
      while (!h.test()) {
      }
      require_equal(recv.get(), expect, exact);
    }
    {  // all-reduce
      std::vector<float> expect(c);
      for (std::size_t i = 0; i < c; ++i) {
        float acc = value(0, i, 3);
        for (int q = 1; q < n; ++q) acc += value(q, i, 3);
        expect[i] = acc;
      }
      Device buf(inputs(me, c, 3), compute);
      comm.all_reduce(buf.vec(), ReduceOp::Sum);
      require_equal(buf.get(), expect, exact);
    }
    {  // broadcast from the last rank
      Device buf(inputs(me, c, 4), compute);
      comm.broadcast(buf.vec(), n - 1);
      require_equal(buf.get(), inputs(n - 1, c, 4), true);
    }
    {  // all-to-all-v: packed blocks of their own sizes, some empty; bits move, exact everywhere
      auto count = [&](int p, int q) -> std::int64_t {
        return (p + q) % 3 == 1 ? 0 : std::int64_t(c) + p;
      };
      auto at = [](int q, std::int64_t i) { return std::size_t(q) * 1000003u + std::size_t(i); };
      std::vector<std::int64_t> sc(static_cast<std::size_t>(n)), rc(sc.size());
      for (int q = 0; q < n; ++q) {
        sc[std::size_t(q)] = count(me, q);
        rc[std::size_t(q)] = count(q, me);
      }
      REQUIRE(comm.exchange_counts(sc) == rc);
      const PeerBlocks sb = PeerBlocks::packed(sc), rb = PeerBlocks::packed(rc);
      std::vector<float> send(std::size_t(std::max<std::int64_t>(sb.extent(), 1)));
      std::vector<float> expect(std::size_t(std::max<std::int64_t>(rb.extent(), 1)));
      std::memset(expect.data(), 0xff, expect.size() * sizeof(float));  // as Device(n) fills
      for (int q = 0; q < n; ++q) {
        for (std::int64_t i = 0; i < sc[std::size_t(q)]; ++i)
          send[std::size_t(sb.displs[std::size_t(q)] + i)] = value(me, at(q, i), 5);
        for (std::int64_t i = 0; i < rc[std::size_t(q)]; ++i)
          expect[std::size_t(rb.displs[std::size_t(q)] + i)] = value(q, at(me, i), 5);
      }
      Device s(send, compute);
      Device r(expect.size(), compute);
      Handle h = comm.iall_to_all_v(s.cvec(), sb, r.vec(), rb);
      h.wait();
      require_equal(r.get(), expect, true);
    }
    if (dev != nullptr && std::string(comm.backend()) == "nccl") {
      // The compute stream, not the host, waits for the collective: a copy queued on it after
      // compute_waits_for_comm() reads the gathered data.
      Device send(inputs(me, c, 1), compute);
      Device recv(all, compute);
      Handle h = comm.iall_gather(send.cvec(), recv.vec());
      dev->compute_waits_for_comm();
      std::vector<float> out(all);
      cuda::PinnedBuffer pinned(all * sizeof(float));
      REQUIRE(cudaMemcpyAsync(pinned.floats(), recv.d.data(), all * sizeof(float),
                              cudaMemcpyDeviceToHost, compute) == cudaSuccess);
      REQUIRE(cudaStreamSynchronize(compute) == cudaSuccess);
      std::memcpy(out.data(), pinned.floats(), all * sizeof(float));
      require_equal(out, want, true);
      h.wait();
    }
  }
  // The scalar helpers stay on the host whatever the path.
  REQUIRE(comm.all_reduce_sum(double(me + 1)) == double(n * (n + 1) / 2));
  REQUIRE(comm.all_reduce_max(me) == n - 1);
}

}  // namespace

TEST_CASE("NCCL on one rank: every collective", "[nccl]") {
  // Each process its own one-rank NCCL communicator (at np 2 they share the GPU, which is fine
  // for separate communicators).
  cuda::Stream compute;
  std::printf("NCCL %s\n", nccl_version().c_str());
  NcclCommunicator comm(MPI_COMM_SELF, "self", {}, compute.get());
  REQUIRE(comm.size() == 1);
  check_collectives(comm, compute.get(), true);  // one rank: no reduction order to differ
}

TEST_CASE("NCCL across ranks with a GPU each", "[nccl]") {
  const GroupFacts f = gather_group_facts(MPI_COMM_WORLD, "world");
  if (f.size == 1 || f.shared_a >= 0) {
    WARN("ranks share a GPU (or there is one rank): NCCL across ranks is not possible here");
    return;
  }
  cuda::Stream compute;
  NcclCommunicator comm(MPI_COMM_WORLD, "world", {}, compute.get());
  // NCCL's reduction order is its own: sums agree with rank order to rounding only (except
  // at 2 ranks, where a + b == b + a).
  check_collectives(comm, compute.get(), f.size <= 2);
}

TEST_CASE("host-staged MPI path: bitwise rank-ordered results", "[mpi]") {
  cuda::Stream compute;
  for (bool shm : {true, false}) {
    MpiOptions o;
    o.name = "world";
    o.shared_memory = shm;
    StagedCommunicator comm(MPI_COMM_WORLD, o, compute.get(), /*cuda_aware=*/false);
    CAPTURE(comm.backend());
    if (shm && world_size() > 1 && !shm_disabled_by_env()) REQUIRE(comm.uses_shared_memory());
    check_collectives(comm, compute.get(), true);
    REQUIRE(comm.pinned_bytes() > 0);  // buffers went back to the pool
  }
}

TEST_CASE("comm.backend=auto picks a path the GPUs allow, and it works", "[select]") {
  cuda::Stream compute;
  const GroupFacts f = gather_group_facts(MPI_COMM_WORLD, "world");
  std::string description;
  DeviceCommOptions o;
  o.compute_stream = compute.get();
  auto comm = make_device_communicator(MPI_COMM_WORLD, "auto", {}, description, o);
  if (comm->rank() == 0) std::printf("comm.backend=auto: %s\n", description.c_str());
  if (f.shared_a >= 0) {
    REQUIRE(description.find("mpi (") != std::string::npos);
    REQUIRE(description.find("share a GPU") != std::string::npos);
  } else {
    REQUIRE(description.find(": nccl: ") != std::string::npos);
  }
  check_collectives(*comm, compute.get(), f.shared_a >= 0 || f.size <= 2);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string why;
  int mine = visible_devices(&why) > 0 ? 1 : 0, every = 0;
  MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (every == 0) {
    if (rank == 0)
      std::printf("SKIPPED: no CUDA device on %s (cudaGetDeviceCount: %s)\n", host_name().c_str(),
                  mine ? "rank 0 has one, another rank has none" : why.c_str());
    MPI_Finalize();
    return kSkip;
  }
  const int device = bind_local_device(MPI_COMM_WORLD);
  std::printf("rank %d on %s: GPU %d\n", rank, host_name().c_str(), device);
  int failed = 0;
  {
    fsdp::KokkosSession kokkos(argc, argv);
    Catch::Session session;
    int rc = session.applyCommandLine(argc, argv);
    if (rc == 0) rc = session.run();
    int any = rc != 0 ? 1 : 0;
    MPI_Allreduce(&any, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return failed;
}
