// SPDX-License-Identifier: MIT
// Every exit code of every fsdp program, in one table: the apps return these names, and each
// app's --help prints its rows from here (so the README, --help and the code cannot drift).
#pragma once
#include <string>

namespace fsdp::exit_code {

inline constexpr int kDone = 0;
inline constexpr int kError = 1;         // any other error (names rank, host and call)
inline constexpr int kBadConfig = 2;     // bad run deck or arguments
inline constexpr int kBadData = 3;       // bad data or vocabulary file
inline constexpr int kNonFinite = 4;     // non-finite loss or gradients, train.on_nonfinite = abort
inline constexpr int kBadCheckpoint = 5; // a checkpoint or weights file that cannot be used
inline constexpr int kWatchdog = 6;      // comm.timeout_s: a collective or checkpoint I/O stalled
inline constexpr int kCheckpointWrite = 7;  // a checkpoint or offload file that cannot be
                                            // written (no space, checkpoint.dir or offload.path
                                            // unusable or in use, a file in the way, a disk
                                            // failing); the previous checkpoint stands
inline constexpr int kPreempted = 75;    // EX_TEMPFAIL: stopped by SIGUSR1/SIGTERM after a whole
                                         // step with a checkpoint written; the job scripts requeue
// fsdp-ckpt's own meanings (a verdict on files, not a run).
inline constexpr int kCkptDiffers = 1;     // a checksum mismatch, or the files differ
inline constexpr int kCkptUnreadable = 2;  // an unreadable file or bad usage

// "Exit codes: ..." for the --help footer of `app` (fsdp-train, fsdp-sample, fsdp-plan,
// fsdp-bench, fsdp-ckpt, fsdp-data).
std::string help(const std::string& app);

}  // namespace fsdp::exit_code
