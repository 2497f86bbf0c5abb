// SPDX-License-Identifier: MIT
// fsdp-data prepare: text, prompt/completion and chat inputs to an llm.c token file and its
// trained-token mask, on any number of ranks with the same bytes out (docs/data.md).
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace fsdp::prepare {

struct PrepareOptions {
  std::string tokenizer_dir, out_path;
  std::string eos;  // a token's text or id; "" = tokenizer_config.json's eos_token
  std::vector<std::string> inputs;
  // The progress line also when stderr is not a terminal: under mpirun a rank's stderr is a
  // pipe to mpirun even when mpirun's own is a terminal.
  bool progress = false;
};

// Runs the whole command; returns the exit code every rank returns (rank 0 has printed the
// summary or the one-line error). Collective over comm.
int run_prepare(MPI_Comm comm, const PrepareOptions& o);

}  // namespace fsdp::prepare
