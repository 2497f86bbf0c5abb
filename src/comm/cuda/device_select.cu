// SPDX-License-Identifier: MIT
#include <cstring>
#include <vector>

#include "comm/cuda/cuda_aware.hpp"
#include "comm/cuda/cuda_check.hpp"
#include "comm/cuda/device_select.hpp"
#include "comm/cuda/nccl_communicator.hpp"
#include "comm/cuda/staged_communicator.hpp"
#include "comm/owned_comm.hpp"
#include "comm/process_groups.hpp"
#include "core/check.hpp"

namespace fsdp::comm {

int visible_devices(std::string* reason) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    if (reason) *reason = std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
    (void)cudaGetLastError();  // not a failure of this program: there is just no GPU
    return 0;
  }
  if (n == 0 && reason) *reason = "0 devices";
  return n;
}

GroupFacts gather_group_facts(MPI_Comm comm, const std::string& name) {
  GroupFacts f;
  f.name = name;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &f.size));
  struct Mine {
    int has_gpu;
    unsigned char uuid[16];
  } mine{};
  std::string why_none;
  if (visible_devices(&why_none) == 0) f.no_gpu_reason = "cudaGetDeviceCount: " + why_none;
  if (f.no_gpu_reason.empty()) {
    int d = 0;
    FSDP_CUDA_CHECK(cudaGetDevice(&d));
    cudaDeviceProp prop{};
    FSDP_CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    mine.has_gpu = 1;
    std::memcpy(mine.uuid, prop.uuid.bytes, sizeof(mine.uuid));
  }
  std::vector<Mine> all(std::size_t(f.size));
  FSDP_MPI_CHECK(MPI_Allgather(&mine, int(sizeof(Mine)), MPI_BYTE, all.data(), int(sizeof(Mine)),
                               MPI_BYTE, comm));
  for (int a = 0; a < f.size; ++a) {
    const Mine& x = all[std::size_t(a)];
    f.ranks_with_gpu += x.has_gpu;
    for (int b = a + 1; b < f.size && f.shared_a < 0 && x.has_gpu; ++b) {
      const Mine& y = all[std::size_t(b)];
      if (y.has_gpu && std::memcmp(x.uuid, y.uuid, sizeof(x.uuid)) == 0) {
        f.shared_a = a;
        f.shared_b = b;
      }
    }
  }
  int aware = mpi_is_cuda_aware() ? 1 : 0, all_aware = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&aware, &all_aware, 1, MPI_INT, MPI_MIN, comm));
  f.mpi_cuda_aware = all_aware == 1;
  return f;
}

std::unique_ptr<Communicator> make_device_communicator(MPI_Comm comm, const std::string& backend,
                                                       LinkEmulation link, std::string& description,
                                                       const DeviceCommOptions& options) {
  const auto requested = parse_device_backend(backend);
  if (!requested) fatal("comm.backend must be auto, nccl or mpi; got '" + backend + "'");
  const GroupFacts facts = gather_group_facts(comm, options.name);
  const DevicePlan plan = plan_device_path(*requested, facts);
  if (!plan.error.empty()) fatal(plan.error);
  description = plan.description;
  MpiOptions mpi = options.mpi;
  mpi.name = options.name;
  mpi.link = link;
  switch (plan.path) {
    case DevicePath::Nccl:
      return std::make_unique<NcclCommunicator>(comm, options.name, link, options.compute_stream);
    case DevicePath::MpiStaged:
    case DevicePath::MpiCudaAware:
      return std::make_unique<StagedCommunicator>(comm, mpi, options.compute_stream,
                                                  plan.path == DevicePath::MpiCudaAware);
    case DevicePath::Host:
      return make_communicator(comm, mpi);
  }
  fatal("comm: no communicator for path " + std::string(label(plan.path)));
}

int bind_local_device(MPI_Comm comm) {
  // The split first: it is collective, and a rank without a GPU must still take part.
  MPI_Comm raw = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &raw));
  const OwnedComm node = OwnedComm::adopt(raw);
  int local = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(node.get(), &local));
  const int n = visible_devices();
  if (n == 0) return -1;
  const int d = local % n;
  FSDP_CUDA_CHECK(cudaSetDevice(d));
  return d;
}

}  // namespace fsdp::comm
