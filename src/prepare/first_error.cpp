// SPDX-License-Identifier: MIT
#include "prepare/first_error.hpp"

#include <vector>

#include "comm/agree.hpp"
#include "core/check.hpp"

namespace fsdp::prepare {

FoundError agree_on_first_error(MPI_Comm comm, const FoundError& mine) {
  int size = 1;
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  // Every rank's (file, offset): N pairs, so every rank finds the same earliest and its owner.
  std::vector<std::uint64_t> all(2 * std::size_t(size));
  const std::uint64_t key[2] = {mine.file, mine.offset};
  FSDP_MPI_CHECK(MPI_Allgather(key, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, comm));
  int owner = -1;
  FoundError first;
  for (int r = 0; r < size; ++r) {
    FoundError e;
    e.file = all[2 * std::size_t(r)];
    e.offset = all[2 * std::size_t(r) + 1];
    if (e.found() && (owner < 0 || e.before(first))) first = e, owner = r;
  }
  if (owner < 0) return first;
  first.message = broadcast_string(comm, mine.message, owner);
  return first;
}

}  // namespace fsdp::prepare
