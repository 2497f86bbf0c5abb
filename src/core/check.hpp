// SPDX-License-Identifier: MIT
// Checked calls into MPI (and, later, NCCL/CUDA/HDF5): a failure names the rank, host, call,
// file:line and the library's own message, then aborts the whole job so no rank hangs.
#pragma once
#include <mpi.h>
#include <cstddef>
#include <string>

namespace fsdp {

// Ends the whole job from this rank: one line "fsdp: error on rank R (host): what" (made one
// line by one_line), then MPI_Abort with `code` (mpirun exits with it).
[[noreturn]] void fatal(const std::string& what, int code = 1);
// `s` as one bounded line for an error message: control characters (a newline in a value)
// escaped, and text longer than max_bytes cut in the middle ("... [N bytes] ..."), so a 50 MB
// value or raw bytes never reach a log as they are.
std::string one_line(const std::string& s, std::size_t max_bytes = 600);
// An exception no handler catches ends the whole job through fatal(), naming the program, this
// rank and what() in one line: never std::terminate's abort and core dump, and never an unwind
// through collective destructors that would leave the other ranks waiting. First in main.
void install_terminate_handler(const char* program);
// While it lives, an exception nothing catches on this thread ends the job with `code` and
// "<what>: " before its message (e.g. exit 7, "writing checkpoint X: ..."). For code that must
// not unwind (a parallel file's close is collective): run it in a noexcept function inside one.
class FatalContext {
 public:
  FatalContext(std::string what, int code);
  ~FatalContext();
  void set(std::string what);  // a more precise place, as the work goes on
  FatalContext(const FatalContext&) = delete;
  FatalContext& operator=(const FatalContext&) = delete;

 private:
  FatalContext* outer_;
  std::string what_;
  int code_;
  friend struct FatalContextAccess;
};
[[noreturn]] void mpi_failed(int code, const char* call, const char* file, int line);
std::string host_name();
int world_rank();

}  // namespace fsdp

#define FSDP_MPI_CHECK(call)                                         \
  do {                                                               \
    int fsdp_mpi_rc_ = (call);                                       \
    if (fsdp_mpi_rc_ != MPI_SUCCESS)                                 \
      ::fsdp::mpi_failed(fsdp_mpi_rc_, #call, __FILE__, __LINE__);   \
  } while (0)
