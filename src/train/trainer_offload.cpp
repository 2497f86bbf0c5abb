// SPDX-License-Identifier: MIT
// fsdp.offload = nvme at start-up: every rank's offload file (core/offload_file.hpp), checked
// and opened in two agreed phases, so a bad offload.path stops every rank before the first step
// with one line (exit 2 or 7) and none is left waiting in a collective.
#include <cstdio>

#include "comm/agree.hpp"
#include "core/check.hpp"
#include "fsdp/sharded_state.hpp"
#include "model/architecture.hpp"
#include "train/trainer.hpp"

namespace fsdp {

void Trainer::open_offload(MPI_Comm world) {
  if (setup_.offload != Offload::Nvme) return;
  const std::int64_t bytes = ShardedState::offload_bytes(setup_, place_units(setup_, model_units(setup_.model, setup_.choices)));
  // The ranks on one node share its disk: one of them takes the directory's lock and checks
  // that the file system has room for all of their files.
  MPI_Comm node = MPI_COMM_NULL;
  FSDP_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  int local = 0, local_ranks = 1;
  FSDP_MPI_CHECK(MPI_Comm_rank(node, &local));
  FSDP_MPI_CHECK(MPI_Comm_size(node, &local_ranks));
  FSDP_MPI_CHECK(MPI_Comm_free(&node));

  const auto agreed = [&](const std::string& err, int code) {
    const Agreed a = agree_on_failure(world, err, code);
    if (a.rank >= 0) {
      offload_.reset();
      throw SetupError(a.message, true, a.code);
    }
  };
  std::string err;
  int code = 0;
  try {
    offload_ = OffloadFile::prepare(setup_.offload_path, bytes * local_ranks, local == 0);
  } catch (const OffloadError& e) {
    err = e.what();
    code = e.code;
  }
  agreed(err, code);  // every rank checked before any file takes room
  try {
    offload_->open(bytes);
  } catch (const OffloadError& e) {
    err = e.what();
    code = e.code;
  }
  agreed(err, code);
  if (rank_ == 0 && opts_.log)
    std::printf("fsdp-train: offload nvme: %s per rank in %s (%s, %s)\n",
                format_bytes(bytes).c_str(), setup_.offload_path.c_str(),
                offload_->direct() ? "direct I/O" : "buffered: no O_DIRECT on this file system",
                setup_.offload_params ? "parameter shards and AdamW moments"
                                      : "AdamW moments");
}

}  // namespace fsdp
