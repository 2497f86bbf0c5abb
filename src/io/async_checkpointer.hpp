// SPDX-License-Identifier: MIT
// Checkpoints off the critical path (checkpoint.async): a save copies this rank's shards into
// staging buffers (io/checkpoint_staging.hpp) and returns; one writer thread per process then
// writes the file with Checkpointer::save, the same collective HDF5 layout, checksums, atomic
// rename, retention and `latest` as a synchronous save, so the file is the same bytes.
//
// Why it is sound: the writer thread makes every HDF5 call while a save is in flight (the
// training thread makes none then: it waits for the write before anything else touches a
// checkpoint), and its MPI calls go over the Checkpointer's own duplicated communicator, which
// nothing else uses, under MPI_THREAD_MULTIPLE (available() says whether MPI provides it; the
// trainer saves synchronously, saying so, where it does not). At most one save is in flight: a
// save due while the previous one is still writing waits for it first.
//
// A write that fails ends the process from the writer thread with exit 7, naming the file; the
// other ranks fail in the same collective or are ended by the watchdog (comm.timeout_s). The
// previous checkpoint stays intact and `latest` never names an unfinished file.
#pragma once
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "io/checkpoint.hpp"
#include "io/checkpoint_staging.hpp"

namespace fsdp {

class AsyncCheckpointer {
 public:
  // How much nicer than training the writer thread runs (writer_loop says why).
  static constexpr int kWriterNice = 10;

  // Whether this MPI library lets a second thread make MPI calls (MPI_THREAD_MULTIPLE).
  static bool available();

  // log: print a line when each background write completes (rank 0 asks), with the size of
  // the file's data, file_bytes.
  AsyncCheckpointer(Checkpointer& checkpointer, MemoryTracker& tracker, bool log,
                    std::int64_t file_bytes);
  // Waits for the write in flight, then stops the writer thread.
  ~AsyncCheckpointer();
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  // Makes (and touches) the staging buffers for `live` now, at start-up, rather than at the
  // first save.
  void prepare(CheckpointedState& live) { staged_.allocate(live); }

  struct Started {
    double waited_s = 0.0;  // for the previous write to complete
    double staged_s = 0.0;  // copying the shards
  };
  // Waits for the write in flight, stages the state and hands the file of header h to the
  // writer. Collective in the same order on every rank, as Checkpointer::save is.
  Started save(CheckpointedState& live, const ckpt::Header& h);

  struct Written {
    std::string path;  // "" before the first write completes
    std::int64_t step = -1;
    double write_s = 0.0;
  };
  // Waits until no write is in flight and returns the last one written; `waited_s`, when given,
  // receives the seconds spent waiting.
  Written wait(double* waited_s = nullptr);
  std::int64_t staging_bytes() const { return staged_.bytes(); }

 private:
  void writer_loop();

  Checkpointer& checkpointer_;
  StagedState staged_;
  bool log_;
  std::int64_t file_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;  // a job handed over, not yet written
  bool stop_ = false;
  ckpt::Header header_;
  Written last_;
  std::thread writer_;
};

}  // namespace fsdp
