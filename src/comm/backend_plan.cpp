// SPDX-License-Identifier: MIT
#include "comm/backend_plan.hpp"

namespace fsdp::comm {
namespace {

std::string ranks(int n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

std::string group(const GroupFacts& f) { return "group '" + f.name + "' (" + ranks(f.size) + ")"; }

DevicePlan planned(DevicePath path, const GroupFacts& f, const std::string& why) {
  DevicePlan p;
  p.path = path;
  p.description = f.name + " (" + ranks(f.size) + "): " + label(path) + ": " + why;
  return p;
}

DevicePlan refused(const std::string& why) {
  DevicePlan p;
  p.error = why;
  return p;
}

DevicePlan mpi_plan(const GroupFacts& f, const std::string& why) {
  if (f.mpi_cuda_aware)
    return planned(DevicePath::MpiCudaAware, f,
                   why +
                       "; MPI is CUDA-aware: all-gathers and broadcasts pass device pointers, "
                       "reductions go through pinned host memory for the rank-ordered sum");
  return planned(DevicePath::MpiStaged, f,
                 why + "; MPI is not CUDA-aware: device buffers go through pinned host memory");
}

std::string shared_gpu(const GroupFacts& f) {
  return "ranks " + std::to_string(f.shared_a) + " and " + std::to_string(f.shared_b) +
         " share a GPU";
}

}  // namespace

std::optional<DeviceBackend> parse_device_backend(const std::string& s) {
  if (s == "auto") return DeviceBackend::Auto;
  if (s == "nccl") return DeviceBackend::Nccl;
  if (s == "mpi") return DeviceBackend::Mpi;
  return std::nullopt;
}

const char* to_string(DeviceBackend b) {
  switch (b) {
    case DeviceBackend::Auto:
      return "auto";
    case DeviceBackend::Nccl:
      return "nccl";
    case DeviceBackend::Mpi:
      return "mpi";
  }
  return "?";
}

const char* label(DevicePath p) {
  switch (p) {
    case DevicePath::Nccl:
      return "nccl";
    case DevicePath::MpiStaged:
      return "mpi (host staging)";
    case DevicePath::MpiCudaAware:
      return "mpi (CUDA-aware)";
    case DevicePath::Host:
      return "mpi (host memory)";
  }
  return "?";
}

DevicePlan plan_device_path(DeviceBackend requested, const GroupFacts& f) {
  const std::string asked = std::string("comm.backend=") + to_string(requested);
  if (f.ranks_with_gpu == 0) {
    const std::string none =
        "no rank sees a GPU (" +
        (f.no_gpu_reason.empty() ? std::string("0 devices") : f.no_gpu_reason) + ")";
    if (requested == DeviceBackend::Nccl)
      return refused(asked + " needs a GPU on every rank of " + group(f) + ", but " + none +
                     "; use comm.backend=auto or mpi on a machine without GPUs");
    return planned(DevicePath::Host, f,
                   none +
                       "; the buffers are host memory, so the host collectives run on them "
                       "with nothing to stage");
  }
  if (f.ranks_with_gpu < f.size)
    return refused("only " + std::to_string(f.ranks_with_gpu) + " of the " + ranks(f.size) +
                   " of " + group(f) + " see a GPU" +
                   (f.no_gpu_reason.empty() ? "" : " (this one: " + f.no_gpu_reason + ")") +
                   "; every rank needs one, or none");
  const bool shared = f.shared_a >= 0;
  switch (requested) {
    case DeviceBackend::Nccl:
      if (shared)
        return refused(asked + ": " + shared_gpu(f) + " in " + group(f) +
                       ", and NCCL needs one GPU per rank; give each rank its own GPU "
                       "(srun --gpus-per-task=1, or one rank per GPU) or use comm.backend=mpi");
      return planned(DevicePath::Nccl, f, asked + ", every rank has its own GPU");
    case DeviceBackend::Auto:
      if (shared) return mpi_plan(f, shared_gpu(f) + ", which NCCL does not allow");
      return planned(DevicePath::Nccl, f,
                     f.size == 1 ? std::string("one rank with a GPU")
                                 : std::string("every rank has its own GPU"));
    case DeviceBackend::Mpi:
      return mpi_plan(f, asked);
  }
  return refused("unknown comm.backend");
}

GroupFacts host_group_facts(const std::string& name, int size) {
  GroupFacts f;
  f.name = name;
  f.size = size;
  f.no_gpu_reason = "this build computes on the CPU: Kokkos has no GPU backend";
  return f;
}

}  // namespace fsdp::comm
