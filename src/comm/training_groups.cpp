// SPDX-License-Identifier: MIT
#include "comm/training_groups.hpp"

#include <sstream>

#include "comm/backend_plan.hpp"
#include "core/check.hpp"
#if defined(FSDP_ENABLE_CUDA)
#include "comm/cuda/device_select.hpp"
#endif

namespace fsdp::comm {

std::vector<std::string> plan_host_groups(const std::string& backend, int world_size,
                                          int shard_group_size) {
  const auto requested = parse_device_backend(backend);
  if (!requested)
    throw BackendError("comm.backend must be auto, nccl or mpi; got '" + backend + "'");
  const int s = shard_group_size == 0 ? world_size : shard_group_size;
  std::vector<std::string> lines;
  const std::pair<const char*, int> groups[] = {
      {"world", world_size}, {"shard", s}, {"replicate", s > 0 ? world_size / s : 1}};
  for (const auto& [name, size] : groups) {
    const DevicePlan plan = plan_device_path(*requested, host_group_facts(name, size));
    if (!plan.error.empty()) throw BackendError(plan.error);
    lines.push_back(plan.description);
  }
  return lines;
}

TrainingGroups make_training_groups(MPI_Comm world, int shard_group_size,
                                    const std::string& backend, LinkEmulation link,
                                    const MpiOptions& mpi, const std::vector<int>& splits) {
  TrainingGroups t;
#if defined(FSDP_ENABLE_CUDA)
  // Kokkos made its GPU current at initialisation (one per node-local rank, or as the
  // --kokkos-map-device-id-by flag says); the collectives follow the stream its kernels run on.
  DeviceCommOptions options;
  options.compute_stream = ExecSpace().cuda_stream();
  options.mpi = mpi;
  std::string description;
  t.groups =
      make_device_process_groups(world, shard_group_size, backend, link, description, options,
                                 splits);
  std::istringstream lines(description);
  for (std::string line; std::getline(lines, line);) t.paths.push_back(line);
#else
  int n = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(world, &n));
  t.paths = plan_host_groups(backend, n, shard_group_size);
  t.groups = make_process_groups(world, shard_group_size, link, mpi, splits);
  const Communicator* made[] = {t.groups.world.get(), t.groups.shard.get(),
                                t.groups.replicate.get()};
  for (int i = 0; i < 3; ++i)
    t.paths[std::size_t(i)] += std::string(" (") + made[i]->backend() + ")";
#endif
  return t;
}

}  // namespace fsdp::comm
