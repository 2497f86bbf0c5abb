// SPDX-License-Identifier: MIT
// Who owns what in a checkpoint directory. A run (one training, across preemptions and
// requeues) has a run id: it is stored in every checkpoint the run writes and in the names of
// its partial files, and a resumed run takes the id of the file it resumed from. Retention
// removes only the run's own files, never the one just written nor the one it resumed from;
// another run's files, or files of unknown origin, are never touched. A lock file keeps a
// second job out of a directory while one is using it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/optimizer_kind.hpp"
#include "model/model_choices.hpp"
#include "model/model_config.hpp"

namespace fsdp::ckpt {

// 16 hex digits from the random device, the clock and the pid; rank 0 draws it.
std::string new_run_id();

// "<name>.<run>.tmp": a write in progress, named by its run so two jobs never share it.
std::string partial_name(const std::string& name, const std::string& run);
// "step_000012.<run>.h5": the name a checkpoint takes when step_000012.h5 is another run's (a
// directory shared with another model, a file of unknown origin): never replace it, never lose
// this run's state at a preemption either.
std::string run_file_name(std::int64_t step, const std::string& run);

struct DirFile {
  enum Kind { Complete, Partial };
  std::string name;          // the file's name in the directory
  Kind kind = Complete;
  std::int64_t step = 0;
  std::string run;           // the run that wrote it; "" when unknown (no run_id, unreadable)
  std::int64_t written = 0;  // modification time in ns: the order the files were written in
};

// step_<digits>[.<run>].h5, complete, or the same with .<run>.tmp after it, partial; at most
// 18 digits, else false (so step_99999999999999999999.h5 is nobody's, not an overflow).
bool parse_name(const std::string& name, DirFile& out);

// What retention removes from `files`: of `run`'s complete checkpoints all but the `keep`
// written last, never one named in `protect`, and `run`'s partial files not in `protect`.
// Names only; nothing of another run, and nothing of unknown origin. Pure, so a property
// test can drive it over any directory (tests/unit/test_output_safety.cpp).
std::vector<std::string> retention_victims(const std::vector<DirFile>& files,
                                           const std::string& run, int keep,
                                           const std::vector<std::string>& protect);

// The checkpoint files in dir (regular files, symlinks not followed), each complete one's run
// id read from its root attribute (serial HDF5, this rank only). Empty if dir is missing.
std::vector<DirFile> scan_dir(const std::string& dir);

// A checkpoint file's run_id attribute; "" when it has none or cannot be read. This rank only.
std::string read_run_id(const std::string& path);

// The name `latest` holds, "" when there is none or it is not a checkpoint name.
std::string read_latest(const std::string& dir);

// Bytes a checkpoint of model m takes on disk, with a margin for HDF5's metadata.
std::int64_t checkpoint_bytes(const ModelConfig& m, OptimizerKind optimizer = OptimizerKind::AdamW,
                              const LoraChoices& lora = {});

// "" when dir's file system has room for `bytes`, else why not (free and needed, in words).
std::string space_problem(const std::string& dir, std::int64_t bytes);

// Why `dir` cannot be a checkpoint directory, creating it (and its parents) when missing; ""
// when it can.
std::string prepare_dir(const std::string& dir);
// The same question without creating anything: dir, or its nearest existing ancestor, must be
// a writable directory.
std::string dir_problem(const std::string& dir);

// An exclusive lock on a checkpoint directory while this object lives (an fcntl lock on
// dir/.fsdp-lock, which the kernel drops when the process ends however it ends, so a killed
// job never leaves a stale lock). One per process: closing any descriptor of the file would
// drop it.
class DirLock {
 public:
  DirLock() = default;
  // Locks dir for `who` (host, pid, run), or returns why not: another process holds it (named
  // from the lock file's contents), or the file cannot be made. A file system without fcntl
  // locks (ENOLCK) is allowed unlocked, and `warning` says so.
  static std::string take(const std::string& dir, const std::string& who, DirLock& out,
                          std::string& warning);
  ~DirLock();
  DirLock(DirLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  DirLock& operator=(DirLock&& o) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace fsdp::ckpt
