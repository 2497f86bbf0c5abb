// SPDX-License-Identifier: MIT
// Output files a run writes beside its checkpoints (--metrics, --trace): they never replace a
// file that is not theirs (a checkpoint, a data file, this run's deck, a device), their
// directory is checked at start rather than at the end of a run, and they are written under a
// temporary name and renamed, so a reader never sees half a file.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace fsdp {

enum class OutputKind { Metrics, Trace };

// The key fsdp puts into the first record of a new metrics file, so that a later run can tell
// its own metrics file from any other JSON file (a config.json) before writing over it.
inline constexpr const char* kMetricsMarker = "fsdp_metrics";

// Why `path` cannot be the `flag` output ("--metrics", "--trace"), or "" when it can: its
// directory must exist and be writable; an existing file must be a regular file, none of
// `inputs` (the paths this run reads), not an HDF5 file, and empty or one of ours (a metrics
// file's first line is a JSON object with the key kMetricsMarker, a trace starts with
// {"traceEvents").
std::string output_problem(const std::string& flag, const std::string& path, OutputKind kind,
                           const std::vector<std::string>& inputs);

// An output file. Staged (a trace, written once at the end): held in memory and written by
// finish() (or the destructor) through io::StagedFile (io/atomic_output.hpp), so a reader
// never sees half a file and a failed write leaves the old file as it was.
// Live (the metrics, a log people follow with tail -f during the run): written in place, each
// record whole in one write and flushed. A failed write is reported once on stderr ("warning:
// <flag> <path>: <why>; ...") and writing stops: the run goes on, the output is what is lost.
class OutputFile {
 public:
  enum Mode { Staged, Live };
  // append: keep path's current contents (a resumed run continues its metrics).
  OutputFile(std::string flag, std::string path, bool append, Mode mode = Staged);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void write(const std::string& bytes, bool flush);
  void finish();
  const std::string& path() const { return path_; }
  // True when the file had nothing in it before this run's first write.
  bool started_empty() const { return started_empty_; }

 private:
  void failed(const std::string& why);
  std::string flag_, path_;
  Mode mode_;
  std::string staged_;      // Staged: the whole file, written by finish()
  std::FILE* f_ = nullptr;  // Live
  bool failed_ = false, done_ = false, started_empty_ = true;
};

}  // namespace fsdp
