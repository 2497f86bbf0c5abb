// SPDX-License-Identifier: MIT
#include "core/exit_codes.hpp"

#include <vector>

namespace fsdp::exit_code {
namespace {

struct Row {
  int code;
  const char* meaning;
  const char* apps;  // the programs that return it, space-separated
};

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
      {kDone, "done", "fsdp-train fsdp-sample fsdp-plan fsdp-bench"},
      {kDone, "good, identical or exported", "fsdp-ckpt"},
      {kDone, "done", "fsdp-data"},
      {kError, "the output cannot be written (the old files stand)", "fsdp-data"},
      {kBadConfig, "bad arguments (also an --eos that names no token)", "fsdp-data"},
      {kBadData, "a bad input line or file, tokenizer or token file (one line: file:line)",
       "fsdp-data"},
      {kError, "any other error", "fsdp-train fsdp-sample fsdp-plan fsdp-bench"},
      {kCkptDiffers, "checksum mismatch or difference", "fsdp-ckpt"},
      {kBadConfig, "bad run deck or arguments", "fsdp-train fsdp-sample fsdp-plan fsdp-bench"},
      {kCkptUnreadable, "unreadable file or bad usage", "fsdp-ckpt"},
      {kBadData, "bad data file", "fsdp-train"},
      {kBadData, "bad vocabulary file", "fsdp-sample"},
      {kNonFinite, "non-finite loss or gradients (train.on_nonfinite = abort)", "fsdp-train"},
      {kBadCheckpoint, "bad checkpoint or weights file", "fsdp-train"},
      {kBadCheckpoint, "unreadable model file", "fsdp-sample"},
      {kWatchdog,
       "the watchdog (comm.timeout_s) found a collective or checkpoint I/O that did not complete",
       "fsdp-train"},
      {kCheckpointWrite,
       "a checkpoint or the offload file cannot be written (no space, checkpoint.dir or "
       "offload.path unusable or in use by another run, a file of another run in the way, a disk "
       "failing mid-run); the previous checkpoint stands",
       "fsdp-train"},
      {kPreempted,
       "stopped by SIGUSR1 or SIGTERM after a whole step, checkpoint written (resume with "
       "--resume auto)",
       "fsdp-train"},
  };
  return r;
}

bool lists(const char* apps, const std::string& app) {
  const std::string all = std::string(" ") + apps + " ";
  return all.find(" " + app + " ") != std::string::npos;
}

}  // namespace

std::string help(const std::string& app) {
  std::string out = "Exit codes:";
  bool first = true;
  for (const Row& r : rows())
    if (lists(r.apps, app)) {
      out += std::string(first ? " " : ", ") + std::to_string(r.code) + " " + r.meaning;
      first = false;
    }
  return out + ".";
}

}  // namespace fsdp::exit_code
