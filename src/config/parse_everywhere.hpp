// SPDX-License-Identifier: MIT
// Command-line parsing on every rank of a job, failing together. A rank whose arguments do not
// parse (an MPMD launch `-np 1 ... : -np 1 ...`, a typo on one line of a wrapper) would
// otherwise return from main alone and wait in MPI_Finalize while the others wait in their
// first collective: a hang, not an error.
#pragma once
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <string>

#include "core/check.hpp"
#include "comm/agree.hpp"

namespace fsdp {

// Runs `parse` (app.parse and any checks that throw CLI::ParseError) on every rank of comm.
// Returns -1 when every rank parsed; else the exit code all ranks return (0 for --help,
// `bad_code` for an error), the message printed once, by rank 0 (naming the rank when it was
// another's). Collective over comm.
inline int parse_everywhere(CLI::App& app, const std::function<void()>& parse, MPI_Comm comm,
                            const char* program, int bad_code) {
  int rank = 0;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  std::string mine;
  int code = 0;
  try {
    parse();
  } catch (const CLI::ParseError& e) {
    code = e.get_exit_code() == 0 ? 0 : bad_code;
    if (rank == 0) app.exit(e);  // the help text, or the error with its usage hint
    mine = code == 0 ? std::string("--help") : std::string(e.what());
    if (mine.empty()) mine = "bad arguments";
  }
  const Agreed a = agree_on_failure(comm, mine, code);
  if (a.rank < 0) return -1;
  if (rank == 0 && mine.empty())
    std::fprintf(stderr, "%s: rank %d: %s\n", program, a.rank, one_line(a.message).c_str());
  return a.code;
}

}  // namespace fsdp
