// SPDX-License-Identifier: MIT
// fsdp-data prepare's progress on a terminal: one line on stderr rewritten in place, at most
// four times a second, and nothing at all when stderr is not a terminal (a log or a pipe).
// Rank 0 draws it from its own share: the shares are equal in bytes, so rank 0's fraction done
// stands for the whole job's, and its counts times the ranks for the whole (marked "~").
#pragma once
#include <chrono>
#include <cstdint>

namespace fsdp::prepare {

class ProgressLine {
 public:
  // enabled: rank 0 and stderr a terminal. total_bytes: all inputs; share_bytes: rank 0's.
  ProgressLine(bool enabled, std::uint64_t total_bytes, std::uint64_t share_bytes, int nranks);
  void update(std::uint64_t share_done, std::uint64_t documents, std::uint64_t tokens);
  // Clears the line (before the summary or an error is printed).
  void clear();

 private:
  bool enabled_, drawn_ = false;
  std::uint64_t total_, share_;
  int nranks_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace fsdp::prepare
