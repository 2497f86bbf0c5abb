// SPDX-License-Identifier: MIT
#include "comm/process_groups.hpp"

#include "comm/owned_comm.hpp"
#include "comm/single_communicator.hpp"
#include "core/check.hpp"

namespace fsdp::comm {

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, MpiOptions options) {
  int n = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &n));
  if (n == 1) return std::make_unique<SingleCommunicator>(options.name, options.link);
  return std::make_unique<MpiCommunicator>(comm, std::move(options));
}

int ranks_per_node(MPI_Comm comm) {
  MPI_Comm raw = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &raw));
  const OwnedComm node = OwnedComm::adopt(raw);
  int local = 0, least = 0;
  FSDP_MPI_CHECK(MPI_Comm_size(node.get(), &local));
  FSDP_MPI_CHECK(MPI_Allreduce(&local, &least, 1, MPI_INT, MPI_MIN, comm));
  return least;
}

}  // namespace fsdp::comm
