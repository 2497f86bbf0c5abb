// SPDX-License-Identifier: MIT
// fsdp-data: makes training data. `prepare` tokenizes text, prompt/completion and chat files
// into an llm.c token file and its trained-token mask (the same bytes under mpirun at any
// number of ranks); `info` and `decode` look at one (docs/data.md).
// Exit codes (core/exit_codes.hpp): 0 done; 1 the output cannot be written; 2 bad arguments;
// 3 a bad input, tokenizer or token file; 6 the watchdog (a rank stopped, --timeout).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <optional>

#include "comm/mpi_session.hpp"
#include "comm/safety.hpp"
#include "config/parse_everywhere.hpp"
#include "core/check.hpp"
#include "core/exit_codes.hpp"
#include "prepare/inspect_command.hpp"
#include "prepare/prepare_command.hpp"

int main(int argc, char** argv) {
  fsdp::install_terminate_handler("fsdp-data");
  fsdp::comm::MpiSession mpi(&argc, &argv);
  // The watchdog every app starts (comm/safety.hpp), over the start-up first.
  fsdp::comm::start_watchdog(fsdp::comm::kStartupTimeoutS);
  std::optional<fsdp::comm::Watch> starting(std::in_place, "start-up: reading the arguments");

  CLI::App app{"fsdp-data: tokenize training data into llm.c token files, and inspect them"};
  app.require_subcommand(1);
  double timeout_s = fsdp::comm::kStartupTimeoutS;
  app.add_option("--timeout", timeout_s,
                 "watchdog (s): a rank that shows no sign of life this long (stopped) ends the "
                 "job with exit code 6; 0: off")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  fsdp::prepare::PrepareOptions p;
  auto* prepare = app.add_subcommand(
      "prepare", "tokenize .txt files (one document each) and .jsonl files (text, "
                 "prompt/completion or chat messages per line) into OUT.bin and OUT.bin.trained");
  prepare->add_option("--tokenizer", p.tokenizer_dir,
                      "directory with tokenizer.json and tokenizer_config.json")
      ->required();
  prepare->add_option("--out", p.out_path, "the llm.c token file to write")->required();
  prepare->add_option("--eos", p.eos,
                      "the token ending each document, by text or id (default: the tokenizer's "
                      "eos_token)");
  prepare->add_flag("--progress", p.progress,
                    "draw the progress line even when stderr is not a terminal (under mpirun, "
                    "whose ranks write to a pipe)");
  prepare->add_option("inputs", p.inputs, ".txt and .jsonl files, in order")->required();

  fsdp::prepare::InspectOptions q;
  auto* info = app.add_subcommand(
      "info", "documents, tokens, trained tokens and the largest id of a token file");
  info->add_option("file", q.file, "llm.c token file")->required();
  auto* vocab = info->add_option("--vocab", q.vocab, "vocabulary size to check the ids against")
                    ->check(CLI::Range(std::int64_t(1), std::int64_t(1) << 31));
  info->add_option("--tokenizer", q.tokenizer_dir, "the tokenizer: its vocabulary and eos_token")
      ->excludes(vocab);
  info->add_option("--eos", q.eos, "the document end (when the file has no mask)");
  info->add_flag("--json", q.json, "one JSON object");

  auto* decode = app.add_subcommand("decode", "print the text of some documents or tokens");
  decode->add_option("file", q.file, "llm.c token file")->required();
  decode->add_option("--tokenizer", q.tokenizer_dir, "the tokenizer")->required();
  auto* docs = decode->add_option("--documents", q.documents, "A:B, documents A to B-1 (default 0:1)");
  decode->add_option("--tokens", q.tokens, "A:B, tokens A to B-1")->excludes(docs);
  decode->add_option("--eos", q.eos, "the document end (when the file has no mask)");
  app.footer(fsdp::exit_code::help("fsdp-data"));
  if (const int rc = fsdp::parse_everywhere(app, [&] { app.parse(argc, argv); }, MPI_COMM_WORLD,
                                            "fsdp-data", fsdp::exit_code::kBadConfig);
      rc >= 0)
    return rc;

  // Ranks tokenize shares of unequal cost and wait for each other (rank 0 alone reads for info
  // and decode): such waits are not timed, but one on a rank that has stopped (SIGSTOP, a
  // debugger) ends the job naming it, instead of holding the others for ever. On one node only
  // (ArrivalBoard: a rank's liveness is seen through shared memory); across nodes, untimed.
  fsdp::comm::start_watchdog(timeout_s);
  const auto board = fsdp::comm::ArrivalBoard::create(MPI_COMM_WORLD);  // collective: watched
  starting.reset();
  fsdp::comm::Watch alive("fsdp-data: waiting for another rank", board.get(), fsdp::comm::WhileAlive{});
  if (*prepare) return fsdp::prepare::run_prepare(MPI_COMM_WORLD, p);
  // info and decode read one file: rank 0 alone, the others wait for its exit code.
  int code = 0;
  if (mpi.rank() == 0) code = *info ? fsdp::prepare::run_info(q) : fsdp::prepare::run_decode(q);
  FSDP_MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return code;
}
