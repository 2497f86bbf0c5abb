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

std::string one_line(const std::string& s, std::size_t max_bytes) {
  auto escape = [](const std::string& in) {
    std::string out;
    out.reserve(in.size());
    for (unsigned char c : in) {
      if (c == '\n') out += "\\n";
      else if (c == '\t') out += "\\t";
      else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      } else out += char(c);
    }
    return out;
  };
  if (s.size() <= max_bytes) return escape(s);
  const std::size_t keep = max_bytes / 2;
  return escape(s.substr(0, keep)) + " ... [" + std::to_string(s.size() - 2 * keep) +
         " bytes] ... " + escape(s.substr(s.size() - keep));
}

[[noreturn]] void fatal(const std::string& what, int code) {
  const int rank = world_rank();
  if (rank >= 0)
    std::fprintf(stderr, "fsdp: error on rank %d (%s): %s\n", rank, host_name().c_str(),
                 one_line(what).c_str());
  else
    std::fprintf(stderr, "fsdp: error (%s): %s\n", host_name().c_str(), one_line(what).c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

struct FatalContextAccess {
  static thread_local FatalContext* current;
  static std::string what(const FatalContext& c) { return c.what_; }
  static int code(const FatalContext& c) { return c.code_; }
};
thread_local FatalContext* FatalContextAccess::current = nullptr;

FatalContext::FatalContext(std::string what, int code)
    : outer_(FatalContextAccess::current), what_(std::move(what)), code_(code) {
  FatalContextAccess::current = this;
}
FatalContext::~FatalContext() { FatalContextAccess::current = outer_; }
void FatalContext::set(std::string what) { what_ = std::move(what); }

namespace {
const char* g_program = "fsdp";

[[noreturn]] void on_terminate() {
  std::string what = "terminate called", detail;
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = std::string("uncaught exception: ") + x.what();
      detail = x.what();
    } catch (...) {
      what = "uncaught exception of an unknown type";
    }
  }
  if (const FatalContext* c = FatalContextAccess::current)
    fatal(std::string(g_program) + ": " + FatalContextAccess::what(*c) + ": " +
              (detail.empty() ? what : detail),
          FatalContextAccess::code(*c));
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
