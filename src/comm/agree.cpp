// SPDX-License-Identifier: MIT
#include "comm/agree.hpp"

#include <chrono>
#include <thread>

#include "core/check.hpp"

namespace fsdp {

Agreed agree_on_failure(MPI_Comm comm, const std::string& mine, int code) {
  int rank = 0, size = 1;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &size));
  int first = mine.empty() ? size : rank;
  FSDP_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm));
  Agreed a;
  if (first == size) return a;
  a.rank = first;
  a.message = broadcast_string(comm, mine, first);
  a.code = code;
  FSDP_MPI_CHECK(MPI_Bcast(&a.code, 1, MPI_INT, first, comm));
  return a;
}

std::string agree_on_error(MPI_Comm comm, const std::string& mine) {
  return agree_on_failure(comm, mine, 0).message;
}

bool all_arrive_within(MPI_Comm comm, double timeout_s) {
  MPI_Request req = MPI_REQUEST_NULL;
  FSDP_MPI_CHECK(MPI_Ibarrier(comm, &req));
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    int done = 0;
    FSDP_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    if (std::chrono::steady_clock::now() > until) return false;  // the request is abandoned
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
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
