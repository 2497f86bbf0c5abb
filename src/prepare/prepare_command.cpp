// SPDX-License-Identifier: MIT
#include "prepare/prepare_command.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <optional>

#include "comm/agree.hpp"
#include "core/check.hpp"
#include "core/exit_codes.hpp"
#include "core/faults.hpp"
#include "prepare/document_encoder.hpp"
#include "prepare/eos_token.hpp"
#include "prepare/input_list.hpp"
#include "prepare/out_check.hpp"
#include "prepare/progress_line.hpp"
#include "prepare/token_writer.hpp"
#include "prepare/tokenize_share.hpp"
#include "data/tokenizer.hpp"

namespace fsdp::prepare {
namespace {

// A barrier that waits off the CPU. Shares are equal in bytes, not in time: a rank done early
// would otherwise poll in the next collective on a core the ranks still working may need
// (Open MPI's progress loop only yields). Millisecond sleeps cost nothing against seconds of work.
void wait_for_all(MPI_Comm comm) {
  MPI_Request req = MPI_REQUEST_NULL;
  FSDP_MPI_CHECK(MPI_Ibarrier(comm, &req));
  for (int done = 0;;) {
    FSDP_MPI_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::uint64_t sum(MPI_Comm comm, std::uint64_t v) {
  std::uint64_t s = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&v, &s, 1, MPI_UINT64_T, MPI_SUM, comm));
  return s;
}

}  // namespace

int run_prepare(MPI_Comm comm, const PrepareOptions& o) {
  int rank = 0, nranks = 1;
  FSDP_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  FSDP_MPI_CHECK(MPI_Comm_size(comm, &nranks));
  const double t0 = MPI_Wtime();
  const auto say = [&](const std::string& line) {
    if (rank == 0) std::fprintf(stderr, "fsdp-data: %s\n", one_line(line).c_str());
  };

  // What --out would write over, before any work: rank 0 looks (one look at a shared disk).
  std::string err = rank == 0 ? out_problem(o.out_path, o.inputs, o.tokenizer_dir) : std::string();
  if (const Agreed a = agree_on_failure(comm, err, exit_code::kBadConfig); a.rank >= 0) {
    say(a.message);
    return a.code;
  }

  // Every rank reads the tokenizer itself (one parse, under a second for Llama 3's): cheaper
  // than shipping its tables, and each rank needs its own word cache anyway.
  std::optional<Tokenizer> tok;
  std::int32_t eos = -1;
  int code = exit_code::kBadData;
  try {
    tok.emplace(Tokenizer::load(o.tokenizer_dir));
    code = exit_code::kBadConfig;  // from here, --eos is what is wrong
    eos = resolve_eos(*tok, o.eos);
  } catch (const DataError& e) {
    err = e.what();
  }
  if (const Agreed a = agree_on_failure(comm, err, code); a.rank >= 0) {
    say(a.message);
    return a.code;
  }

  const InputList in = list_inputs(comm, o.inputs);
  const ByteRange share = byte_share(in.total, nranks, rank);
  DocumentEncoder encoder(*tok, o.tokenizer_dir, eos);
  ProgressLine progress(rank == 0 && (o.progress || ::isatty(STDERR_FILENO)), in.total, share.end - share.begin,
                        nranks);
  faults::stop_if_asked(rank);
  ShareOutput out = tokenize_share(in, share, rank == nranks - 1, encoder,
                                   [&](std::uint64_t done, const ShareOutput& s) {
                                     progress.update(done, s.documents, s.tokens.size());
                                   });
  progress.clear();
  wait_for_all(comm);
  FoundError mine = out.error;
  if (in.problem.found() && (!mine.found() || in.problem.before(mine))) mine = in.problem;
  const FoundError first = agree_on_first_error(comm, mine);
  if (first.found()) {
    say(first.message);
    return exit_code::kBadData;
  }

  // A file info, decode and training all refuse (they need two tokens, one input and one
  // target) is not written: the inputs hold no text.
  if (const std::uint64_t all = sum(comm, out.tokens.size()); all < 2) {
    std::string names;
    for (std::size_t i = 0; i < o.inputs.size() && i < 3; ++i) names += (i ? ", " : "") + o.inputs[i];
    if (o.inputs.size() > 3) names += ", ...";
    say(names + ": no text to tokenize (" + std::to_string(all) + " token" + (all == 1 ? "" : "s") +
        " with the document end): " + o.out_path + " is not written");
    return exit_code::kBadData;
  }

  // Qwen3's eos_token, <|im_end|>, ends every turn: as the document separator it would cut
  // each chat into one "document" per turn.
  int held = encoder.chat_held_eos(), any_held = 0;
  FSDP_MPI_CHECK(MPI_Allreduce(&held, &any_held, 1, MPI_INT, MPI_MAX, comm));
  if (any_held)
    say("warning: the chat template writes the document end " + tok->decode({eos}) +
        " inside chats: documents would be split at every turn; consider --eos '<|endoftext|>'");

  const WriteResult w =
      write_token_files(comm, o.out_path, tok->vocab_size(), out.tokens, out.mask, eos);
  if (!w.error.empty()) {
    say(w.error);
    return exit_code::kError;
  }
  const std::uint64_t documents = sum(comm, out.documents);
  if (rank == 0)
    std::printf("fsdp-data: %s: %llu documents, %llu tokens, %llu trained, %.2f s (%d rank%s)\n",
                o.out_path.c_str(), (unsigned long long)documents, (unsigned long long)w.tokens,
                (unsigned long long)w.trained, MPI_Wtime() - t0, nranks, nranks > 1 ? "s" : "");
  return exit_code::kDone;
}

}  // namespace fsdp::prepare
