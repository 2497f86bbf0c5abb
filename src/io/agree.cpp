// SPDX-License-Identifier: MIT
#include "io/agree.hpp"

#include "core/check.hpp"

namespace fsdp {

std::string agree_on_error(MPI_Comm comm, const std::string& mine) {
  int rank = 0, size = 1;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  int first = mine.empty() ? size : rank;
  FSDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return {};
  return broadcast_string(comm, mine, first);
}

std::string broadcast_string(MPI_Comm comm, const std::string& s, int root) {
  std::string out = s;
  unsigned long long len = out.size();
  FSDP_MPI_CHECK(MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, root, comm));
  out.resize(std::size_t(len));
  if (len > 0) FSDP_MPI_CHECK(MPI_Bcast(out.data(), int(len), MPI_CHAR, root, comm));
  return out;
}

}  // namespace fsdp
