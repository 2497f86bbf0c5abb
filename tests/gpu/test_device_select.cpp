// SPDX-License-Identifier: MIT
// The GPU communication path's host side, which runs anywhere: the CUDA-aware-MPI detector,
// comm.backend parsing, the path chosen for every combination of facts, and, on a machine
// without a GPU, the fallback to the host MPI path (which must then move data correctly).
#include <mpi.h>

#include <catch2/catch.hpp>
#include <vector>

#include "comm/cuda/cuda_aware.hpp"
#include "comm/cuda/device_select.hpp"
#include "comm/training_groups.hpp"

using namespace fsdp;
using namespace fsdp::comm;

namespace {

int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

int my_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

GroupFacts facts(int size, int with_gpu, bool shared = false, bool aware = false) {
  GroupFacts f;
  f.name = "shard";
  f.size = size;
  f.ranks_with_gpu = with_gpu;
  if (shared) {
    f.shared_a = 0;
    f.shared_b = 1;
  }
  f.mpi_cuda_aware = aware;
  if (with_gpu < size) f.no_gpu_reason = "cudaErrorNoDevice: no CUDA-capable device is detected";
  return f;
}

}  // namespace

TEST_CASE("mpi_is_cuda_aware answers, the same on every call and every rank") {
  const bool a = mpi_is_cuda_aware();
  REQUIRE(a == mpi_is_cuda_aware());
  int mine = a ? 1 : 0, lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  REQUIRE(lo == hi);
  const std::string compiled = mpi_cuda_aware_compile_time();
  REQUIRE((compiled == "yes" || compiled == "no" || compiled == "unknown"));
  // Without the extension there is nothing to ask: the answer must be the safe one.
  if (compiled == "unknown") REQUIRE_FALSE(a);
  if (my_rank() == 0)
    std::printf("MPI CUDA-aware: %s (headers: %s)\n", a ? "yes" : "no", compiled.c_str());
}

TEST_CASE("comm.backend values") {
  REQUIRE(parse_device_backend("auto") == DeviceBackend::Auto);
  REQUIRE(parse_device_backend("nccl") == DeviceBackend::Nccl);
  REQUIRE(parse_device_backend("mpi") == DeviceBackend::Mpi);
  REQUIRE_FALSE(parse_device_backend("NCCL").has_value());
  REQUIRE_FALSE(parse_device_backend("").has_value());
  REQUIRE_FALSE(parse_device_backend("gloo").has_value());
  for (auto b : {DeviceBackend::Auto, DeviceBackend::Nccl, DeviceBackend::Mpi})
    REQUIRE(parse_device_backend(to_string(b)) == b);
}

TEST_CASE("plan_device_path: every case") {
  using B = DeviceBackend;
  using P = DevicePath;
  SECTION("no GPU anywhere: host MPI for auto and mpi, an error for nccl") {
    for (B b : {B::Auto, B::Mpi}) {
      const DevicePlan p = plan_device_path(b, facts(2, 0));
      REQUIRE(p.error.empty());
      REQUIRE(p.path == P::Host);
      REQUIRE(contains(p.description, "shard (2 ranks): mpi (host memory)"));
      REQUIRE(contains(p.description, "no CUDA-capable device"));
    }
    const DevicePlan p = plan_device_path(B::Nccl, facts(2, 0));
    REQUIRE(contains(p.error, "comm.backend=nccl needs a GPU"));
  }
  SECTION("some ranks without a GPU: an error whatever was asked") {
    for (B b : {B::Auto, B::Mpi, B::Nccl}) {
      const DevicePlan p = plan_device_path(b, facts(4, 3));
      REQUIRE(contains(p.error, "only 3 of the 4 ranks"));
    }
  }
  SECTION("one GPU per rank") {
    REQUIRE(plan_device_path(B::Auto, facts(4, 4)).path == P::Nccl);
    REQUIRE(plan_device_path(B::Nccl, facts(4, 4)).path == P::Nccl);
    REQUIRE(plan_device_path(B::Auto, facts(1, 1)).path == P::Nccl);
    REQUIRE(plan_device_path(B::Mpi, facts(4, 4)).path == P::MpiStaged);
    REQUIRE(plan_device_path(B::Mpi, facts(4, 4, false, true)).path == P::MpiCudaAware);
    REQUIRE(contains(plan_device_path(B::Auto, facts(4, 4)).description, "shard (4 ranks): nccl"));
  }
  SECTION("ranks sharing a GPU: MPI for auto, an error for nccl") {
    const DevicePlan a = plan_device_path(B::Auto, facts(2, 2, true));
    REQUIRE(a.error.empty());
    REQUIRE(a.path == P::MpiStaged);
    REQUIRE(contains(a.description, "mpi (host staging)"));
    REQUIRE(contains(a.description, "ranks 0 and 1 share a GPU"));
    REQUIRE(plan_device_path(B::Auto, facts(2, 2, true, true)).path == P::MpiCudaAware);
    const DevicePlan n = plan_device_path(B::Nccl, facts(2, 2, true));
    REQUIRE(contains(n.error, "NCCL needs one GPU per rank"));
  }
}

TEST_CASE("the facts of this machine agree on every rank") {
  const GroupFacts f = gather_group_facts(MPI_COMM_WORLD, "world");
  REQUIRE(f.size == world_size());
  REQUIRE(f.ranks_with_gpu >= 0);
  REQUIRE(f.ranks_with_gpu <= f.size);
  int mine[2] = {f.ranks_with_gpu, f.shared_a}, lo[2] = {0, 0}, hi[2] = {0, 0};
  MPI_Allreduce(mine, lo, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  REQUIRE(lo[0] == hi[0]);
  REQUIRE(lo[1] == hi[1]);
  REQUIRE((visible_devices() > 0) == (f.ranks_with_gpu > 0));
}

TEST_CASE("without a GPU, comm.backend auto and mpi fall back to the host MPI path") {
  std::string why;
  if (visible_devices(&why) > 0) {
    WARN("this machine has a GPU: the fallback is not exercised here (test_nccl covers it)");
    return;
  }
  REQUIRE_FALSE(why.empty());
  REQUIRE(bind_local_device(MPI_COMM_WORLD) == -1);
  const int n = world_size(), me = my_rank();
  for (const char* backend : {"auto", "mpi"}) {
    CAPTURE(backend);
    std::string description;
    DeviceCommOptions o;
    o.name = "world";
    auto comm = make_device_communicator(MPI_COMM_WORLD, backend, {}, description, o);
    if (me == 0) std::printf("comm.backend=%s: %s\n", backend, description.c_str());
    REQUIRE(contains(description, "world (" + std::to_string(n)));
    REQUIRE(contains(description, "mpi (host memory)"));
    REQUIRE(comm->size() == n);
    REQUIRE(comm->rank() == me);
    // The communicator it gives must work on host buffers: an all-gather and a reduce-scatter
    // of small integers (exact in float whatever the order).
    const std::size_t c = 5;
    std::vector<float> send(c), all(c * std::size_t(n));
    for (std::size_t i = 0; i < c; ++i) send[i] = float(100 * me + int(i));
    comm->all_gather(ConstVec(send.data(), c), Vec(all.data(), all.size()));
    for (int q = 0; q < n; ++q)
      for (std::size_t i = 0; i < c; ++i)
        REQUIRE(all[std::size_t(q) * c + i] == float(100 * q + int(i)));
    std::vector<float> block(c);
    comm->reduce_scatter(ConstVec(all.data(), all.size()), Vec(block.data(), c), ReduceOp::Sum);
    // Every rank sent the same gathered buffer: block q of the sum is n * (rank q's values).
    for (std::size_t i = 0; i < c; ++i) REQUIRE(block[i] == float(n * (100 * me + int(i))));
  }
}

TEST_CASE("without a GPU, device process groups name every group's path") {
  if (visible_devices() > 0) {
    WARN("this machine has a GPU: covered by test_nccl");
    return;
  }
  const DeviceMesh mesh = make_training_mesh(MPI_COMM_WORLD, MeshShape{1, world_size()}, {}, "auto",
                                             {}, {});
  REQUIRE(mesh.world().size() == world_size());
  REQUIRE(mesh.group(MeshDim::Shard).size() == world_size());
  REQUIRE(mesh.group(MeshDim::Replicate).size() == 1);
  std::string description;
  for (const std::string& line : mesh.paths()) description += line + "\n";
  REQUIRE(contains(description, "world ("));
  REQUIRE(contains(description, "\nshard ("));
  REQUIRE(contains(description, "\nreplicate (1 rank): mpi (host memory)"));
  if (my_rank() == 0) std::printf("%s\n", description.c_str());
}
