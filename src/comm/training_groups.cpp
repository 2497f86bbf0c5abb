// SPDX-License-Identifier: MIT
#include "comm/training_groups.hpp"

#include "comm/backend_plan.hpp"
#include "comm/process_groups.hpp"
#include "core/check.hpp"
#if defined(FSDP_ENABLE_CUDA)
#include "comm/cuda/device_select.hpp"
#endif

namespace fsdp::comm {
std::string plan_host_group(const std::string& backend, const std::string& name, int size) {
  const auto requested = parse_device_backend(backend);
  if (!requested)
    throw BackendError("comm.backend must be auto, nccl or mpi; got '" + backend + "'");
  const DevicePlan plan = plan_device_path(*requested, host_group_facts(name, size));
  if (!plan.error.empty()) throw BackendError(plan.error);
  return plan.description;
}

bool logs_path(const MeshGroup& g, int size) {
  return g.name == "world" || g.name == "shard" || g.name == "replicate" || size > 1;
}

DeviceMesh make_training_mesh(MPI_Comm world, const MeshShape& shape,
                              const std::vector<MeshGroup>& extra, const std::string& backend,
                              LinkEmulation link, const MpiOptions& mpi) {
#if defined(FSDP_ENABLE_CUDA)
  // Kokkos made its GPU current at initialisation (one per node-local rank, or as the
  // --kokkos-map-device-id-by flag says); the collectives follow the stream its kernels run on.
  DeviceCommOptions device;
  device.compute_stream = ExecSpace().cuda_stream();
  device.mpi = mpi;
  GroupFactory make = [&](MPI_Comm comm, const MeshGroup& g, std::string& path) {
    // Every group, the experts' too: their token exchange and their slices' gathers move
    // device buffers, which the host communicator refuses.
    device.name = g.name;
    std::unique_ptr<Communicator> c = make_device_communicator(comm, backend, link, path, device);
    if (!logs_path(g, c->size())) path.clear();
    return c;
  };
#else
  MpiOptions host = mpi;
  host.link = link;
  GroupFactory make = [&](MPI_Comm comm, const MeshGroup& g, std::string& path) {
    host.name = g.name;
    path.clear();
    int n = 0;
    FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));
    // Planned before the communicator is made: a refusal ends every rank at the same place.
    const std::string plan = plan_host_group(backend, g.name, n);
    std::unique_ptr<Communicator> c = make_communicator(comm, host);
    if (logs_path(g, n)) path = plan + " (" + c->backend() + ")";
    return c;
  };
#endif
  return DeviceMesh(world, shape, extra, make);
}

}  // namespace fsdp::comm
