// SPDX-License-Identifier: MIT
#include "prepare/progress_line.hpp"

#include <cstdio>

namespace fsdp::prepare {

ProgressLine::ProgressLine(bool enabled, std::uint64_t total_bytes, std::uint64_t share_bytes,
                           int nranks)
    : enabled_(enabled),
      total_(total_bytes),
      share_(share_bytes),
      nranks_(nranks),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void ProgressLine::update(std::uint64_t share_done, std::uint64_t documents, std::uint64_t tokens) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  const double s = std::chrono::duration<double>(now - start_).count();
  const double frac = share_ > 0 ? double(share_done) / double(share_) : 1.0;
  const char* est = nranks_ > 1 ? "~" : "";
  const double scale = nranks_;  // rank 0's counts stand for each rank's
  const double eta = frac > 0 ? s * (1 - frac) / frac : 0;
  std::fprintf(stderr, "\rfsdp-data: %s%.1f / %.1f MB, %s%.0f documents, %s%.2f M tokens/s, ETA %.0f s\033[K",
               est, frac * double(total_) / 1e6, double(total_) / 1e6, est,
               double(documents) * scale, est, double(tokens) * scale / s / 1e6, eta);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressLine::clear() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace fsdp::prepare
