// SPDX-License-Identifier: MIT
// The one-node all-to-all-v. Every rank's blocks have their own sizes, yet every rank must pass
// the same number of window barriers, so the first step also publishes a small header: what
// this rank sends each peer (count and displacement) and how many steps its own blocks need.
// After the first barrier every rank reads every header, so all agree on the step count (the
// largest), and each receiver checks its senders' counts against its own for free.
//
// A slot holds the header, then one piece of per_block floats per destination rank. Step k
// moves piece k of every block: sender copies into its slot, barrier, each receiver copies its
// piece out of every peer's slot. Where single-copy reads work (and the largest block is within
// their size window), only piece 0 is staged: the rest of each block is read straight from the
// sender's buffer, then one barrier releases it: two barriers whatever the sizes.
#include <algorithm>
#include <cstring>

#include "comm/copy_kernels.hpp"
#include "comm/shm_collectives.hpp"
#include "core/check.hpp"

namespace fsdp::comm {
namespace {

// Header words (uint64): [0] steps this rank's blocks need, then per rank q: [1 + 2q] the count
// this rank sends q, [2 + 2q] its displacement in this rank's send buffer.
std::size_t header_floats(int n) {
  const std::size_t words = 1 + 2 * std::size_t(n);
  return (2 * words + 15) / 16 * 16;  // the pieces start on a cache line
}

void put(float* slot, std::size_t word, std::int64_t v) {
  std::memcpy(reinterpret_cast<char*>(slot) + word * 8, &v, 8);
}

std::int64_t get(const float* slot, std::size_t word) {
  std::int64_t v = 0;
  std::memcpy(&v, reinterpret_cast<const char*>(slot) + word * 8, 8);
  return v;
}

// Elements of a `count`-long block in the piece starting at `off`.
std::size_t piece(std::int64_t count, std::size_t off, std::size_t per_block) {
  return std::size_t(count) > off ? std::min(per_block, std::size_t(count) - off) : 0;
}

}  // namespace

void ShmCollectives::all_to_all_v(const float* send, const PeerBlocks& sb, float* recv,
                                  const PeerBlocks& rb, const std::string& where) {
  const std::size_t n = std::size_t(size_), me = std::size_t(rank_);
  const std::size_t hdr = header_floats(size_);
  std::size_t per_block = step_ > hdr ? (step_ - hdr) / n : 0;
  if (per_block >= 16) per_block = per_block / 16 * 16;
  if (per_block == 0)
    fatal(where + ": a shared-memory window of " +
          std::to_string(window_->floats_per_rank() * sizeof(float)) +
          " bytes per rank is too small for an all-to-all-v over " + std::to_string(n) + " ranks");

  // This rank's own block never goes through the window.
  copy_floats(recv + rb.displs[me], send + sb.displs[me], std::size_t(sb.counts[me]));
  std::int64_t mine = 1;  // one step at least: the headers must be exchanged
  for (std::size_t q = 0; q < n; ++q)
    if (q != me)
      mine = std::max<std::int64_t>(
          {mine, (sb.counts[q] + std::int64_t(per_block) - 1) / std::int64_t(per_block),
           (rb.counts[q] + std::int64_t(per_block) - 1) / std::int64_t(per_block)});

  auto publish = [&](std::size_t off) {
    float* out = slot(rank_) + hdr;
    for (std::size_t q = 0; q < n; ++q)
      if (q != me)
        copy_floats(out + q * per_block, send + sb.displs[q] + off,
                    piece(sb.counts[q], off, per_block));
  };
  auto collect = [&](std::size_t off) {
    for (std::size_t p = 0; p < n; ++p)
      if (p != me)
        copy_floats(recv + rb.displs[p] + off, slot(int(p)) + hdr + me * per_block,
                    piece(rb.counts[p], off, per_block));
  };

  // Step 0: the headers, piece 0 of every block, and the sender's buffer for direct reads.
  float* head = slot(rank_);
  put(head, 0, mine);
  for (std::size_t q = 0; q < n; ++q) {
    put(head, 1 + 2 * q, sb.counts[q]);
    put(head, 2 + 2 * q, sb.displs[q]);
  }
  publish(0);
  window_->info(rank_).address = reinterpret_cast<std::uintptr_t>(send);
  window_->sync(wait_);
  std::int64_t steps = 0;
  std::vector<std::int64_t> peer_displ(n, 0);  // where this rank's block sits in each sender
  for (std::size_t p = 0; p < n; ++p) {
    const float* theirs = slot(int(p));
    steps = std::max(steps, get(theirs, 0));
    if (p == me) continue;
    check_sent_matches(where, int(p), rank_, get(theirs, 1 + 2 * me) * 4, rb.counts[p] * 4,
                       "bytes");
    peer_displ[p] = get(theirs, 2 + 2 * me);
  }
  collect(0);
  end_step();

  // Every rank computes the same `steps`, hence the same choice and the same barriers.
  const bool direct = single_copy_ && steps > 1 &&
                      std::size_t(steps) * per_block * sizeof(float) <= single_copy_max_;
  if (direct) {
    for (std::size_t p = 0; p < n; ++p)
      if (p != me && std::size_t(rb.counts[p]) > per_block)
        read_block(int(p), (std::size_t(peer_displ[p]) + per_block) * sizeof(float),
                   recv + rb.displs[p] + per_block,
                   (std::size_t(rb.counts[p]) - per_block) * sizeof(float));
    window_->sync(wait_);  // a sender may reuse its buffer only once everyone has read it
    return;
  }
  for (std::int64_t k = 1; k < steps; ++k) {
    const std::size_t off = std::size_t(k) * per_block;
    publish(off);
    window_->sync(wait_);
    collect(off);
    end_step();
  }
}

}  // namespace fsdp::comm
