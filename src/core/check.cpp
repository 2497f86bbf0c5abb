// SPDX-License-Identifier: MIT
#include "core/check.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace fsdp {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

int world_rank() {
  int init = 0, fin = 0, r = -1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "fsdp: error on rank %d (%s): %s\n", world_rank(), host_name().c_str(),
               what.c_str());
  std::fflush(stderr);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

namespace {
const char* g_program = "fsdp";

[[noreturn]] void on_terminate() {
  std::string what = "terminate called";
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = std::string("uncaught exception: ") + x.what();
    } catch (...) {
      what = "uncaught exception of an unknown type";
    }
  }
  fatal(std::string(g_program) + ": " + what);
}
}  // namespace

void install_terminate_handler(const char* program) {
  g_program = program;
  std::set_terminate(on_terminate);
}

[[noreturn]] void mpi_failed(int code, const char* call, const char* file, int line) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, msg, &len);
  fatal(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + msg);
}

}  // namespace fsdp
